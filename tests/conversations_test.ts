/**
 * Settings that shape translated calls: Responses conversations the gateway keeps (their
 * retention and size limit) and `openai-compatible` providers (no key, or a key and extra
 * headers).
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { startStack, TEST_PRICE } from "./helpers/setup.ts";

const stack = await startStack({
  conversations: { retentionHours: 24, maxBytes: 2048 },
  providers: {
    aggregator: {
      type: "openai-compatible",
      baseUrl: "/local/v1",
      apiKey: "aggregator-key",
      headers: { "X-Title": "Switchyard" },
    },
  },
  models: { "agg-test": { provider: "aggregator", upstream: "some/model", price: TEST_PRICE } },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

async function respond(key: string, body: Record<string, unknown>) {
  const res = await fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "claude-test", ...body }),
  });
  return { status: res.status, json: await res.json() };
}

Deno.test("a kept answer can be continued within the retention, and is a 404 past it", async () => {
  const { key } = await gateway.createKey("conv-retention", "--credit", "5");
  const first = await respond(key, { input: "Remember: blue." });
  assert.equal(first.status, 200);
  const second = await respond(key, { previous_response_id: first.json.id, input: "Colour?" });
  assert.equal(second.status, 200);
  const sent = (await stack.upstreamRequests()).at(-1)!.body as { messages: unknown[] };
  assert.equal(sent.messages.length, 3, "the kept turn went in front");
  // Age the first answer past the retention (pruning runs only every 6 hours).
  const db = new DatabaseSync(`${gateway.dir}/data/switchyard.db`);
  db.prepare("UPDATE stored_responses SET created_at = ? WHERE id = ?").run(
    Date.now() - 25 * 3600 * 1000,
    first.json.id,
  );
  db.close();
  const expired = await respond(key, { previous_response_id: first.json.id, input: "Colour?" });
  assert.equal(expired.status, 404);
  assert.equal(expired.json.error.param, "previous_response_id");
  // A chain through the expired answer ends there too.
  const through = await respond(key, { previous_response_id: second.json.id, input: "Again?" });
  assert.equal(through.status, 404);
});

Deno.test("an answer larger than conversations.maxBytes is answered but not kept", async () => {
  const { key } = await gateway.createKey("conv-size", "--credit", "5");
  const big = await respond(key, { input: "word ".repeat(600) });
  assert.equal(big.status, 200);
  const next = await respond(key, { previous_response_id: big.json.id, input: "And?" });
  assert.equal(next.status, 404);
  assert.equal(next.json.error.type, "invalid_request_error");
});

Deno.test("openai-compatible providers: no auth header without a key; the key and extra headers with one", async () => {
  const { key } = await gateway.createKey("compat-headers", "--credit", "5");
  for (const model of ["local-test", "agg-test"]) {
    const res = await fetch(`${gateway.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ model, max_tokens: 64, messages: [{ role: "user", content: "hi" }] }),
    });
    assert.equal(res.status, 200, await res.text());
  }
  const [local, aggregator] = (await stack.upstreamRequests()).slice(-2);
  assert.equal(local.headers.authorization, undefined);
  assert.equal(local.headers["x-title"], undefined);
  assert.equal(aggregator.headers.authorization, "Bearer aggregator-key");
  assert.equal(aggregator.headers["x-title"], "Switchyard");
  assert.equal((aggregator.body as { model: string }).model, "some/model");
});
