/**
 * GET /v1/usage accounts for every billed endpoint exactly: one account uses each of them, and the
 * spend by unit, the spend by model, the balance and the ledger all agree to the nanoUSD.
 */
import assert from "node:assert/strict";
import { eventually, startStack, usageOf } from "./helpers/setup.ts";
import { ledgerOf } from "./helpers/store.ts";

const stack = await startStack({ videos: { pollIntervalMs: 100 } });
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

Deno.test("every endpoint's charge shows in /v1/usage by unit and by model, exactly", async () => {
  const { key } = await gateway.createKey("usage-all", "--credit", "10");
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${gateway.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200, `${path}: ${await res.clone().text()}`);
    return await res.json();
  };
  await post("/v1/responses", { model: "gpt-test", input: "hello" });
  await post("/v1/chat/completions", {
    model: "kimi-test",
    messages: [{ role: "user", content: "hi" }],
  });
  await post("/v1/embeddings", { model: "embed-test", input: "embed me" });
  await post("/v1/images/generations", { model: "image-test", prompt: "a cat", quality: "low" });
  await post("/v1/responses/compact", { model: "gpt-test", input: "compact me" });
  await post("/v1/responses/input_tokens", { model: "gpt-test", input: "free" });
  await post("/v1/alpha/search", { id: "s1", model: "gpt-test", input: "news" });
  await post("/v1/videos/generations", {
    model: "video-test",
    prompt: "[[emulate ready=100]]",
    duration: 3,
  });
  await eventually(async () => (await usageOf(gateway, key)).requests === 7);

  const usage = await usageOf(gateway, key);
  const sum = (o: Record<string, { spent_nanousd: number }>) =>
    Object.values(o).reduce((n, x) => n + x.spent_nanousd, 0);
  assert.deepEqual(Object.keys(usage.by_unit).sort(), [
    "images",
    "input_tokens",
    "output_tokens",
    "search_calls",
    "video_seconds",
  ]);
  assert.equal(usage.by_unit.images.spent_nanousd, 11_000_000);
  assert.equal(usage.by_unit.search_calls.spent_nanousd, 10_000_000);
  assert.equal(usage.by_unit.video_seconds.spent_nanousd, 3 * 50_000_000);
  assert.equal(sum(usage.by_unit), usage.spent_nanousd);
  assert.equal(sum(usage.by_model), usage.spent_nanousd);
  assert.equal(usage.balance_nanousd + usage.spent_nanousd, 10_000_000_000);
  assert.equal(usage.held_nanousd, 0);
  assert.deepEqual(Object.keys(usage.by_model).sort(), [
    "embed-test",
    "gpt-test",
    "image-test",
    "kimi-test",
    "video-test",
  ]);
  assert.equal(usage.by_model["gpt-test"].requests, 3); // responses, compact, search

  const charges = (await ledgerOf(gateway, { account: "usage-all" }))
    .filter((e) => e.kind === "charge");
  assert.equal(charges.length, 7, "one ledger entry per billed call, none for input_tokens");
  assert.equal(charges.reduce((sum, e) => sum + Number(e.amount), 0), usage.spent_nanousd);
});
