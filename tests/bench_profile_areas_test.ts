/**
 * `bench/profile_areas.ts` gives each sample's time to the area of its function, leaves idle time
 * out and divides by the requests: on a profile built by hand, and on one Deno writes.
 */
import assert from "node:assert/strict";
import { areaOf, type CpuProfile, profileAreas } from "../bench/profile_areas.ts";

const ROOT = new URL("../", import.meta.url).pathname;

Deno.test("profile areas: each function's area", () => {
  const at = (functionName: string, url = "") => areaOf({ functionName, url });
  assert.equal(at("(idle)"), null);
  assert.equal(at("(garbage collector)"), "garbage collection");
  assert.equal(at("run"), "SQLite statements");
  assert.equal(at("get"), "SQLite statements");
  assert.equal(at("op_fetch_send"), "Deno fetch (ops)");
  assert.equal(at("op_http_set_response_body_text"), "Deno HTTP server (ops)");
  assert.equal(at("op_write_sync"), "other ops (op_write_sync)");
  assert.equal(at("mainFetch", "ext:deno_fetch/26_fetch.js"), "Deno fetch, headers, bodies (JS)");
  assert.equal(at("x", "ext:deno_node/internal/timers.mjs"), "Deno deno_node");
  assert.equal(at("settle", "file:///w/main/src/store/sqlite_holds.ts"), "src/store/");
  assert.equal(at("log", "file:///w/main/src/log.ts"), "src/log.ts");
  assert.equal(at("f", "file:///w/main/bench/floor_proxy.ts"), "bench/");
  assert.equal(
    at("parse", "file:///c/npm/registry.npmjs.org/valibot/1.5.0/dist/index.mjs"),
    "valibot",
  );
});

Deno.test("profile areas: busy time by area, per request, idle left out", () => {
  const frame = (id: number, functionName: string, url = "") => ({
    id,
    callFrame: { functionName, url },
  });
  const profile: CpuProfile = {
    nodes: [
      frame(1, "(idle)"),
      frame(2, "(garbage collector)"),
      frame(3, "routeCall", "file:///w/src/pipeline/route.ts"),
      frame(4, "send", "file:///w/src/pipeline/send.ts"),
    ],
    samples: [1, 2, 3, 4, 3, 1],
    timeDeltas: [5000, 300, 200, 100, 400, 9000],
  };
  const result = profileAreas(profile, 10);
  assert.equal(result.busyMs, 1);
  assert.equal(result.usPerRequest, 100);
  assert.deepEqual(result.areas, [
    { area: "src/pipeline/", usPerRequest: 70, share: 0.7 },
    { area: "garbage collection", usPerRequest: 30, share: 0.3 },
  ]);
});

Deno.test("profile areas: reads the profile Deno writes", async () => {
  const dir = await Deno.makeTempDir({ prefix: "switchyard-prof-" });
  try {
    const script = `${dir}/work.ts`;
    await Deno.writeTextFile(
      script,
      "let n = 0; const end = Date.now() + 150;\n" +
        "while (Date.now() < end) n += JSON.parse(JSON.stringify({ a: [n, 'x'.repeat(64)] })).a[0] > -1 ? 1 : 0;\n",
    );
    const run = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--cpu-prof", `--cpu-prof-dir=${dir}`, script],
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.ok(run.success, new TextDecoder().decode(run.stderr));
    const file = [...Deno.readDirSync(dir)].find((e) => e.name.endsWith(".cpuprofile"))!;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-read", `${ROOT}bench/profile_areas.ts`, `${dir}/${file.name}`, "3"],
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    const text = new TextDecoder().decode(out.stdout);
    const busy = /^busy (\d+) ms, 3 requests: ([\d.]+) µs a request$/m.exec(text);
    assert.ok(busy, text);
    assert.ok(Number(busy[1]) >= 50, `the busy loop is in the profile: ${text}`);
    assert.match(text, /µs +[\d.]+% {2}\S/, "one line per area");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
