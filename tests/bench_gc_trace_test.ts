/**
 * `bench/gc_trace.ts` sums what V8's `--trace-gc-nvp` says of each collection — allocated and
 * promoted bytes, pauses, young and full — per request: on output written by hand (with log lines
 * between the records and in the middle of one) and on the output of a Deno run that allocates a
 * known amount.
 */
import assert from "node:assert/strict";
import { gcPerRequest } from "../bench/gc_trace.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** One record as V8 prints it (most fields left out). */
const record = (gc: string, pause: number, allocated: number, promoted: number) =>
  `[1:0x1:0]  10 ms: GC: {"pause":${pause},"mutator":1.5,"gc":"${gc}","reduce_memory":false,` +
  `"start_object_size":4426336,"allocated":${allocated},"promoted":${promoted},"scavenge":1}\n`;

Deno.test("gc trace: bytes and pauses of every collection, per request", () => {
  const log = '{"time":"2026-11-27T01:00:00.000Z","level":"info","msg":"request","status":200}\n';
  // V8's buffer flushed in the middle of the last record, with two log lines written meanwhile.
  const last = record("s", 1.5, 5_000_000, 60_000);
  const output = "[1:0x1:0] Memory pool: Removed pages: 0\n" +
    record("s", 2.5, 4_000_000, 100_000) + log +
    record("mc", 10, 1_000_000, 0) +
    last.slice(0, 40) + log + log + last.slice(40);
  const r = gcPerRequest(output, 100);
  assert.deepEqual(r, {
    young: 2,
    full: 1,
    allocated: 100_000,
    promoted: 1_600,
    pauseUs: 140,
  });
  assert.throws(() => gcPerRequest(output, 0), /positive/);
  assert.deepEqual(gcPerRequest("no collections", 5), {
    young: 0,
    full: 0,
    allocated: 0,
    promoted: 0,
    pauseUs: 0,
  });
});

Deno.test("gc trace: reads what a Deno run prints", async () => {
  const dir = await Deno.makeTempDir({ prefix: "switchyard-gc-" });
  try {
    // 2,000 arrays of 10,000 numbers held briefly: 160 MB allocated in all, at least.
    const script = `${dir}/work.ts`;
    await Deno.writeTextFile(
      script,
      "let keep = 0;\nfor (let i = 0; i < 2000; i++) keep += new Array(10000).fill(i + 0.5).length;\n" +
        "console.log(keep);\n",
    );
    const run = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--v8-flags=--trace-gc-nvp", script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(run.success, new TextDecoder().decode(run.stderr));
    const output = `${dir}/out.txt`;
    await Deno.writeFile(output, run.stdout);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-read", `${ROOT}bench/gc_trace.ts`, output, "2000"],
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    const text = new TextDecoder().decode(out.stdout);
    const line =
      /^allocated ([\d.]+) KB a request, promoted [\d.]+ KB, pause [\d.]+ µs; (\d+) young/
        .exec(text);
    assert.ok(line, text);
    // 80 KB of numbers an array (89 KB here, with its growth); what the last collection did not
    // see yet is not counted.
    const kb = Number(line[1]);
    assert.ok(kb > 40 && kb < 160, `about 80 KB a "request": ${text}`);
    assert.ok(Number(line[2]) > 0, "young collections were counted");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
