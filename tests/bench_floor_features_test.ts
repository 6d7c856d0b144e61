/**
 * The benchmark's floor with the features (`bench/floor_features.ts`) does the work its row stands
 * for: the key looked up in its store (an unknown one refused), the body validated (an invalid one
 * refused with a 400), the model resolved in its catalog (an unknown one refused), each JSON call
 * held and settled once at the catalog's prices from the usage the upstream reported, and one
 * access-log line written for it with its charge.
 */
import assert from "node:assert/strict";
import { startEmulator } from "../src/emulator/server.ts";
import { FEATURES_KEY, UPSTREAM_HEADERS } from "../bench/scenarios.ts";
import { startBenchProxy } from "./helpers/bench_proxy.ts";
import { booksOf } from "./helpers/store.ts";
import { eventually } from "./helpers/poll.ts";

Deno.test("bench floor with the features: checks, holds and prices every JSON call", async () => {
  const emulator = startEmulator({ requiredKey: UPSTREAM_HEADERS["x-api-key"] });
  const dir = await Deno.makeTempDir({ prefix: "switchyard-features-" });
  const proxy = await startBenchProxy(
    "floor_features.ts",
    `http://127.0.0.1:${emulator.addr.port}`,
    dir,
  );
  try {
    const post = (path: string, body: unknown, key = FEATURES_KEY) =>
      fetch(`http://127.0.0.1:${proxy.port}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      });
    const status = async (response: Promise<Response>) => {
      const r = await response;
      await r.body?.cancel();
      return r.status;
    };
    const user = [{ role: "user", content: "Say hi." }];

    const other = "sy-abcdefghijkm-" + "1".repeat(43);
    assert.equal(
      await status(post("/openai/v1/chat/completions", { model: "gpt-5.4" }, other)),
      401,
    );
    assert.equal(
      await status(post("/openai/v1/chat/completions", { model: "gpt-5.4", messages: 3 })),
      400,
      "the body is validated against the chat schema",
    );
    assert.equal(
      await status(post("/openai/v1/chat/completions", { model: "gpt-9", messages: user })),
      404,
    );
    assert.equal(
      await status(post("/openai/v1/chat/completions", {
        model: "gpt-5.4",
        messages: user,
        stream: true,
      })),
      501,
    );

    const chat = await post("/openai/v1/chat/completions", { model: "gpt-5.4", messages: user });
    assert.equal(chat.status, 200);
    const chatAnswer = await chat.json();
    const messages = await post("/anthropic/v1/messages", {
      model: "claude-sonnet-4-5",
      max_tokens: 64,
      messages: user,
    });
    assert.equal(messages.status, 200);
    const messagesAnswer = await messages.json();

    const books = await booksOf({ file: `${dir}/floor.db` }, "floor-features");
    const charges = books.entries.filter((e) => e.kind === "charge").reverse();
    assert.equal(charges.length, 2, "one hold per call that reached the upstream");
    const [chatCharge, messagesCharge] = charges;
    assert.equal(chatCharge.model, "gpt-5.4");
    assert.equal(chatCharge.keyId, "key_benchfeature");
    assert.equal(chatCharge.estimated, false);
    // $2.50 and $15 a million tokens: 2,500 and 15,000 nanoUSD a token.
    const { prompt_tokens: input, completion_tokens: output } = chatAnswer.usage;
    assert.ok(input > 0 && output > 0);
    assert.equal(Number(chatCharge.amount), input * 2_500 + output * 15_000);
    // $3 and $15.
    const { input_tokens: mInput, output_tokens: mOutput } = messagesAnswer.usage;
    assert.equal(Number(messagesCharge.amount), mInput * 3_000 + mOutput * 15_000);
    for (const c of charges) assert.equal(c.status, "settled");
    assert.equal(books.held, 0);
    // One access-log line per call answered, with its charge (written within its batch).
    const requests = () => proxy.log.filter((l) => l.msg === "request");
    await eventually(() => requests().length >= 2);
    await proxy.stop();
    const costs = requests().map((l) => l.cost_nano_usd);
    assert.deepEqual(costs, [Number(chatCharge.amount), Number(messagesCharge.amount)]);
    assert.equal((await proxy.stderr).trim(), "");
  } finally {
    await proxy.stop();
    await emulator.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
