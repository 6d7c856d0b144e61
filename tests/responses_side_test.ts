/**
 * The Responses family's side endpoints through the gateway, over raw HTTP and the `openai` SDK:
 * /v1/responses/compact (billed by tokens), /v1/responses/input_tokens (free, counted for RPM)
 * and /v1/alpha/search (billed per call).
 */
import assert from "node:assert/strict";
import { OpenAI } from "./deps.ts";
import { startStack, usageOf } from "./helpers/setup.ts";
import { bearer, post as httpPost } from "./helpers/http.ts";

const stack = await startStack();
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

const post = (key: string, path: string, body: unknown): Promise<Response> =>
  httpPost(gateway.url, path, bearer(key), body);

Deno.test("compact returns the upstream's compaction and bills its tokens", async () => {
  const { key } = await gateway.createKey("compact", "--credit", "1");
  const res = await post(key, "/v1/responses/compact", {
    model: "gpt-test",
    input: [
      { role: "user", content: "Plan a trip to Lisbon" },
      { role: "assistant", content: "Sure: day one…" },
      { role: "user", content: "Now make it cheaper" },
    ],
  });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.object, "response.compaction");
  assert.equal(body.output.at(-1).type, "compaction");
  assert.equal(body.output.filter((i: { role?: string }) => i.role === "user").length, 2);
  const usage = await usageOf(gateway, key);
  assert.equal(
    usage.spent_nanousd,
    body.usage.input_tokens * 2500 + body.usage.output_tokens * 15000,
  );
  assert.equal(usage.by_model["gpt-test"].requests, 1);
});

Deno.test("compact for a model whose provider cannot compact is a clear 400", async () => {
  const { key } = await gateway.createKey("compact-xai", "--credit", "1");
  const res = await post(key, "/v1/responses/compact", { model: "grok-test", input: "hi" });
  assert.equal(res.status, 400);
  const { error } = await res.json();
  assert.equal(error.code, "model_not_supported");
  assert.match(error.message, /not served on \/v1\/responses\/compact; use \/v1\/responses/);
  assert.equal((await post(key, "/v1/responses/compact", { input: "hi" })).status, 400);
});

Deno.test("input_tokens: the upstream's count for OpenAI models, an estimate otherwise; free", async () => {
  const { key } = await gateway.createKey("input-tokens", "--credit", "1");
  const openai = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  const request = {
    model: "gpt-test",
    instructions: "Be terse.",
    input: "How many tokens is this?",
  };
  const counted = await post(key, "/v1/responses/input_tokens", request);
  assert.equal(counted.headers.get("x-switchyard-token-count"), "upstream");
  const count = await counted.json();
  assert.equal(count.object, "response.input_tokens");
  const response = await openai.responses.create(request);
  assert.equal(count.input_tokens, response.usage!.input_tokens);

  for (const body of [{ model: "grok-test", input: "x".repeat(40) }, { input: "x".repeat(40) }]) {
    const estimated = await post(key, "/v1/responses/input_tokens", body);
    assert.equal(estimated.status, 200);
    assert.equal(estimated.headers.get("x-switchyard-token-count"), "estimate");
    assert.deepEqual(await estimated.json(), { object: "response.input_tokens", input_tokens: 10 });
  }
  const usage = await usageOf(gateway, key);
  assert.equal(usage.requests, 1); // only responses.create
  // A Gemini model is counted by Gemini's countTokens, the request translated.
  const gemini = await post(key, "/v1/responses/input_tokens", {
    model: "gemini-test",
    input: "How many tokens is this?",
  });
  assert.equal(gemini.headers.get("x-switchyard-token-count"), "upstream");
  assert.ok((await gemini.json()).input_tokens > 0);
});

Deno.test("input_tokens counts toward the key's RPM", async () => {
  const { key } = await gateway.createKey("input-tokens-rpm", "--rpm", "2");
  assert.equal((await post(key, "/v1/responses/input_tokens", { input: "a" })).status, 200);
  assert.equal((await post(key, "/v1/responses/input_tokens", { input: "b" })).status, 200);
  const limited = await post(key, "/v1/responses/input_tokens", { input: "c" });
  assert.equal(limited.status, 429);
  assert.equal((await limited.json()).error.code, "rate_limit_exceeded");
});

Deno.test("alpha/search answers {output, encrypted_output} and bills one call", async () => {
  const { key } = await gateway.createKey("search", "--credit", "1");
  const res = await post(key, "/v1/alpha/search", {
    id: "search-1",
    model: "gpt-test",
    input: "latest Deno release",
    commands: {
      search_query: [{ q: "Deno release notes", recency: 30 }],
      response_length: "short",
    },
    settings: { search_context_size: "medium", allowed_callers: ["direct"] },
  });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.match(body.output, /Deno release notes/);
  assert.equal(typeof body.encrypted_output, "string");
  const seen = (await stack.upstreamRequests()).at(-1)!;
  assert.equal(seen.path, "/openai/v1/alpha/search");
  assert.deepEqual((seen.body as { commands: unknown }).commands, {
    search_query: [{ q: "Deno release notes", recency: 30 }],
    response_length: "short",
  });
  const usage = await usageOf(gateway, key);
  assert.deepEqual(usage.by_unit, {
    search_calls: { quantity: 1, spent_usd: "0.01", spent_nanousd: 10_000_000 },
  });
  assert.equal((await post(key, "/v1/alpha/search", { model: "gpt-test" })).status, 400); // no id
  const failed = await post(key, "/v1/alpha/search", {
    id: "s",
    model: "gpt-test",
    input: "[[emulate status=500]]",
  });
  assert.equal(failed.status, 502);
  assert.equal((await usageOf(gateway, key)).requests, 1);
});
