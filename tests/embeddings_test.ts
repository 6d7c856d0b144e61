/** POST /v1/embeddings through the gateway: the `openai` SDK (base64 and float) and raw HTTP. */
import assert from "node:assert/strict";
import { OpenAI } from "./deps.ts";
import { startStack, usageOf } from "./helpers/setup.ts";

const stack = await startStack();
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

/** $0.02 per million input tokens → 20 nanoUSD per token. */
const PER_TOKEN = 20;

async function client(account: string) {
  const { key } = await gateway.createKey(account, "--credit", "1");
  return { key, openai: new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 }) };
}

Deno.test("embeddings.create with floats and with the SDK's base64 default agree, each billed per token", async () => {
  const { key, openai } = await client("embed-sdk");
  const floats = await openai.embeddings.create({
    model: "embed-test",
    input: ["Hello, world!", "Second text"],
    encoding_format: "float",
  });
  assert.equal(floats.object, "list");
  assert.equal(floats.data.length, 2);
  assert.equal(floats.data[1].index, 1);
  assert.equal(floats.data[0].embedding.length, 1536);
  const packed = await openai.embeddings.create({
    model: "embed-test",
    input: ["Hello, world!", "Second text"],
  });
  assert.equal(packed.data[0].embedding.length, 1536);
  for (let i = 0; i < 10; i++) {
    assert.ok(Math.abs(packed.data[0].embedding[i] - floats.data[0].embedding[i]) < 1e-6);
  }
  const usage = await usageOf(gateway, key);
  assert.equal(usage.requests, 2);
  const tokens = floats.usage.prompt_tokens + packed.usage.prompt_tokens;
  assert.deepEqual(usage.by_unit, {
    input_tokens: {
      quantity: tokens,
      spent_usd: usage.spent_usd,
      spent_nanousd: tokens * PER_TOKEN,
    },
  });
  assert.equal(usage.by_model["embed-test"].requests, 2);
});

Deno.test("raw base64 embeddings pass through as strings; token-id input and dimensions are accepted", async () => {
  const { key } = await client("embed-raw");
  const post = (body: unknown) =>
    fetch(`${gateway.url}/v1/embeddings`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const res = await post({ model: "embed-test", input: "one string", encoding_format: "base64" });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(typeof body.data[0].embedding, "string");
  assert.equal(atob(body.data[0].embedding).length, 1536 * 4);
  const ids = await (await post({ model: "embed-test", input: [[1, 2, 3], [4, 5]], dimensions: 8 }))
    .json();
  assert.equal(ids.usage.prompt_tokens, 5);
  assert.equal(ids.data[1].embedding.length, 8);
  const seen = (await stack.upstreamRequests()).at(-1)!;
  assert.equal(seen.path, "/openai/v1/embeddings");
  assert.equal((seen.body as { model: string }).model, "text-embedding-3-small");
});

Deno.test("bad embeddings input is a 400 naming the field; a chat model is pointed elsewhere", async () => {
  const { key, openai } = await client("embed-errors");
  await assert.rejects(
    openai.embeddings.create({ model: "embed-test", input: "" }),
    (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && e.param === "input",
  );
  await assert.rejects(
    openai.embeddings.create({
      model: "embed-test",
      input: "x",
      encoding_format: "int8" as "float",
    }),
    (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && e.param === "encoding_format",
  );
  await assert.rejects(
    openai.embeddings.create({ model: "gpt-test", input: "x" }),
    (e: InstanceType<typeof OpenAI.APIError>) =>
      e.status === 400 && e.code === "model_not_supported" && /\/v1\/responses/.test(e.message),
  );
  await assert.rejects(
    openai.chat.completions.create({
      model: "embed-test",
      messages: [{ role: "user", content: "x" }],
    }),
    (e: InstanceType<typeof OpenAI.APIError>) =>
      e.status === 400 && /\/v1\/embeddings/.test(e.message),
  );
  assert.equal((await usageOf(gateway, key)).requests, 0);
});
