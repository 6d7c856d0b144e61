/**
 * The benchmark's start scenario (`bench/cold_start.ts`) times real starts: each one a fresh
 * process that answered its first call, and a start whose first call fails is reported, not
 * timed.
 */
import assert from "node:assert/strict";
import { startEmulator } from "../src/emulator/server.ts";
import { UPSTREAM_HEADERS } from "../bench/scenarios.ts";
import { startLines, timeStarts } from "../bench/cold_start.ts";
import { startBareProxy } from "../bench/stack.ts";

const call = (model: string) => ({
  url: "/openai/v1/chat/completions",
  headers: { "content-type": "application/json", ...UPSTREAM_HEADERS },
  body: JSON.stringify({ model, messages: [{ role: "user", content: "Say hi." }] }),
});

Deno.test("bench start scenario: each start a new process, timed to its first answer", async () => {
  const emulator = startEmulator({ requiredKey: UPSTREAM_HEADERS["x-api-key"] });
  const dir = await Deno.makeTempDir();
  try {
    const pids: number[] = [];
    const upstream = `http://127.0.0.1:${emulator.addr.port}`;
    const subject = {
      label: "bare proxy",
      start: async () => {
        const server = await startBareProxy(dir, upstream);
        pids.push(server.pid);
        return server;
      },
      call: call("gpt-5.4"),
    };
    const times = await timeStarts(subject, 2);
    assert.equal(times.ms.length, 2);
    assert.equal(new Set(pids).size, 2, "a fresh process each time");
    for (const pid of pids) {
      assert.throws(() => Deno.readTextFileSync(`/proc/${pid}/stat`), "each one stopped");
    }
    // A spawned Deno takes tens of ms at least; far less would mean nothing was timed.
    assert.ok(times.ms.every((ms) => ms > 10 && ms < 30_000), times.ms.join(", "));
    const [head, line] = startLines([times]);
    assert.match(head, /cold start/);
    assert.match(line, /^ {2}bare proxy +\d+ ms {2}\(\d+–\d+ ms over 2\)$/);

    // The emulator refuses an unknown model: the start is reported with the answer, not timed.
    await assert.rejects(
      timeStarts({ ...subject, call: call("no-such-model") }, 1),
      /bare proxy: first call answered 4\d\d/,
    );
  } finally {
    await emulator.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
