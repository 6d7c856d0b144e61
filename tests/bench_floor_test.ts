/**
 * The benchmark's floor proxy (`bench/floor_proxy.ts`) does what the report says it stands for: it
 * refuses an unknown key, and for each call takes a hold, relays the answer (JSON, or a stream
 * event by event), records a stored response and settles the hold once — so its figures are those
 * of a gateway that keeps the same guarantees and does nothing else.
 */
import assert from "node:assert/strict";
import { startEmulator } from "../src/emulator/server.ts";
import { FLOOR_KEY, UPSTREAM_HEADERS } from "../bench/scenarios.ts";
import { startBenchProxy } from "./helpers/bench_proxy.ts";
import { booksOf, withStore } from "./helpers/store.ts";

Deno.test("bench floor proxy: holds, relays, records and settles every call once", async () => {
  const emulator = startEmulator({ requiredKey: UPSTREAM_HEADERS["x-api-key"] });
  const dir = await Deno.makeTempDir({ prefix: "switchyard-floor-" });
  const proxy = await startBenchProxy(
    "floor_proxy.ts",
    `http://127.0.0.1:${emulator.addr.port}`,
    dir,
  );
  try {
    const base = `http://127.0.0.1:${proxy.port}`;
    const post = (path: string, body: unknown, key = FLOOR_KEY) =>
      fetch(base + path, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      });

    const refused = await post("/openai/v1/responses", { model: "gpt-5.4", input: "hi" }, "sy-x");
    assert.equal(refused.status, 401);
    await refused.body?.cancel();

    const json = await post("/openai/v1/responses", { model: "gpt-5.4", input: "Say hi." });
    assert.equal(json.status, 200);
    const answer = await json.json();
    assert.ok(answer.usage.output_tokens > 0);

    const sse = await post("/openai/v1/responses", {
      model: "gpt-5.4",
      input: "Hi.",
      stream: true,
    });
    assert.equal(sse.headers.get("content-type")?.startsWith("text/event-stream"), true);
    const events = await sse.text();
    assert.match(events, /event: response\.completed/);

    const messages = await post("/anthropic/v1/messages", {
      model: "claude-sonnet-4-5",
      max_tokens: 64,
      stream: true,
      messages: [{ role: "user", content: "Hi." }],
    });
    assert.match(await messages.text(), /event: message_stop/);

    const floor = { file: `${dir}/floor.db` };
    const books = await booksOf(floor, "floor");
    const charges = books.entries.filter((e) => e.kind === "charge").reverse();
    assert.equal(charges.length, 3, "one hold per call, none for the refused key");
    for (const c of charges) {
      assert.equal(c.status, "settled");
      assert.equal(c.estimated, false, "settled from the usage the upstream reported");
      assert.ok(Number(c.amount) > 0);
    }
    assert.equal(books.held, 0);
    // Both Responses calls recorded their stored response (the stream's id is in its events).
    const streamed =
      JSON.parse(/event: response\.completed\ndata: (.*)/.exec(events)![1]).response.id;
    for (const id of [answer.id, streamed]) {
      const object = await withStore(floor, (store) => store.upstreamObject(id));
      assert.equal(object?.kind, "response", `the stored response ${id}`);
    }
    await proxy.stop();
    // Nothing went wrong on the side: the store's checkpoints ran, for one.
    assert.equal((await proxy.stderr).trim(), "");
  } finally {
    await proxy.stop();
    await emulator.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
