/**
 * Gemini embeddings through the gateway: `@google/genai`'s `models.embedContent` (one content and
 * several, on `v1beta` and the SDK's default `v1`), raw `:embedContent`, billing per input token
 * from `usageMetadata` or the estimate when the answer has none, and errors in Google's envelope.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { GoogleGenAI } from "./deps.ts";
import { startStack, UPSTREAM_KEY, usageOf } from "./helpers/setup.ts";
import { estimateInput } from "../src/billing/estimate.ts";
import { goog, post as httpPost } from "./helpers/http.ts";

const stack = await startStack({
  models: {
    "gemini-embed-test": {
      provider: "gemini",
      kind: "embedding",
      upstream: "gemini-embedding-001",
      price: { input: 0.15 },
    },
  },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

/** $0.15 per million input tokens → 150 nanoUSD per token. */
const PER_TOKEN = 150;

async function client(account: string, apiVersion: string | undefined = "v1beta") {
  const { key } = await gateway.createKey(account, "--credit", "1");
  const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gateway.url, apiVersion } });
  return { key, ai };
}

const post = (key: string, path: string, body: unknown) =>
  httpPost(gateway.url, path, goog(key), body);

Deno.test("models.embedContent: one content and several, on v1beta and v1, billed per input token", async () => {
  for (const apiVersion of ["v1beta", undefined]) {
    const { key, ai } = await client(`gembed-sdk-${apiVersion ?? "v1"}`, apiVersion);
    const one = await ai.models.embedContent({
      model: "gemini-embed-test",
      contents: "Hello, world!",
    });
    assert.equal(one.embeddings!.length, 1);
    assert.equal(one.embeddings![0].values!.length, 3072);
    const seen = (await stack.upstreamRequests()).at(-1)!;
    assert.equal(seen.path, "/gemini/v1beta/models/gemini-embedding-001:batchEmbedContents");
    assert.equal(seen.headers["x-goog-api-key"], UPSTREAM_KEY);
    assert.equal((seen.body as any).requests[0].model, "models/gemini-embedding-001");
    assert.ok(!JSON.stringify(seen).includes(key));

    const several = await ai.models.embedContent({
      model: "gemini-embed-test",
      contents: ["First text", "Second text is longer", "Third"],
      config: { outputDimensionality: 8, taskType: "RETRIEVAL_DOCUMENT" },
    });
    assert.deepEqual(several.embeddings!.map((e) => e.values!.length), [8, 8, 8]);
    assert.notDeepEqual(several.embeddings![0].values, several.embeddings![1].values);

    const tokens = one.usageMetadata!.promptTokenCount! + several.usageMetadata!.promptTokenCount!;
    assert.equal(several.usageMetadata!.promptTokenCount, 2 + 4 + 1);
    const usage = await usageOf(gateway, key);
    assert.equal(usage.requests, 2);
    assert.deepEqual(usage.by_unit, {
      input_tokens: {
        quantity: tokens,
        spent_usd: usage.spent_usd,
        spent_nanousd: tokens * PER_TOKEN,
      },
    });
    assert.equal(usage.by_model["gemini-embed-test"].requests, 2);
  }
});

Deno.test("raw :embedContent passes through with the model swapped; an answer without usage is billed on the estimate", async () => {
  const { key } = await client("gembed-raw");
  const res = await post(key, "/v1beta/models/gemini-embed-test:embedContent", {
    model: "models/gemini-embed-test",
    content: { parts: [{ text: "What is the meaning of life?" }] },
    outputDimensionality: 16,
  });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.embedding.values.length, 16);
  assert.deepEqual(body.usageMetadata, {
    promptTokenCount: 7,
    promptTokenDetails: [{ modality: "TEXT", tokenCount: 7 }],
  });
  const seen = (await stack.upstreamRequests()).at(-1)!;
  assert.equal(seen.path, "/gemini/v1beta/models/gemini-embedding-001:embedContent");
  assert.equal((seen.body as any).model, "models/gemini-embedding-001");

  // Without a `model` in the body (the API takes it from the path) and without usage in the
  // answer: the typical input estimate, as /v1/embeddings charges a body without usage.
  const content = { parts: [{ text: "Estimate me, please [[emulate no_usage=1]]" }] };
  const bare = await post(key, "/v1/models/gemini-embed-test:embedContent", { content });
  assert.equal(bare.status, 200);
  // The client is shown what it is charged, marked as the gateway's estimate.
  const estimated = estimateInput([content.parts]).typical;
  assert.equal(bare.headers.get("x-switchyard-usage"), "estimated");
  assert.deepEqual((await bare.json()).usageMetadata, {
    promptTokenCount: estimated,
    totalTokenCount: estimated,
  });
  const usage = await usageOf(gateway, key);
  assert.equal(usage.requests, 2);
  assert.equal(usage.by_unit.input_tokens.quantity, 7 + estimated);
  assert.equal(usage.spent_nanousd, (7 + estimated) * PER_TOKEN);
});

Deno.test("embedding errors come in Google's envelope and are not billed", async () => {
  const { key, ai } = await client("gembed-errors");
  const expect = async (res: Response, status: number, pattern: RegExp) => {
    assert.equal(res.status, status);
    const body = await res.json();
    assert.equal(body.error.code, status);
    assert.equal(typeof body.error.status, "string");
    assert.match(body.error.message, pattern);
  };
  const batch = "/v1beta/models/gemini-embed-test:batchEmbedContents";
  // A request of the batch naming another model (a dearer one, say) is refused before any call.
  await expect(
    await post(key, batch, {
      requests: [
        { model: "models/gemini-embed-test", content: { parts: [{ text: "a" }] } },
        { model: "models/gemini-test", content: { parts: [{ text: "b" }] } },
      ],
    }),
    400,
    /requests\[1\]\.model/,
  );
  await expect(await post(key, batch, { requests: [] }), 400, /requests/);
  await expect(
    await post(key, "/v1beta/models/gemini-embed-test:embedContent", { content: { parts: [] } }),
    400,
    /content\.parts/,
  );
  // Models of other kinds or providers are pointed to their endpoints; unknown ones are 404.
  await expect(
    await post(key, "/v1beta/models/gemini-test:embedContent", {
      content: { parts: [{ text: "x" }] },
    }),
    400,
    /\/v1\/responses/,
  );
  await expect(
    await post(key, "/v1beta/models/embed-test:embedContent", {
      content: { parts: [{ text: "x" }] },
    }),
    400,
    /\/v1\/embeddings/,
  );
  await expect(
    await post(key, "/v1beta/models/no-such:embedContent", { content: { parts: [{ text: "x" }] } }),
    404,
    /no-such/,
  );
  const openai = await fetch(`${gateway.url}/v1/embeddings`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gemini-embed-test", input: "x" }),
  });
  assert.equal(openai.status, 400);
  assert.match((await openai.json()).error.message, /:embedContent/);
  // Upstream refusals are relayed with their status.
  await assert.rejects(
    ai.models.embedContent({
      model: "gemini-embed-test",
      contents: "x",
      config: { outputDimensionality: 4096 },
    }),
    (e: any) => e.status === 400 && /output_dimensionality/.test(e.message),
  );
  await assert.rejects(
    ai.models.embedContent({ model: "gemini-embed-test", contents: "busy [[emulate status=429]]" }),
    (e: any) => e.status === 429,
  );
  const none = await fetch(`${gateway.url}${batch}`, { method: "POST", body: "{}" });
  assert.equal(none.status, 401);
  assert.equal((await none.json()).error.status, "UNAUTHENTICATED");
  const usage = await usageOf(gateway, key);
  assert.equal(usage.requests, 0);
  assert.equal(usage.spent_nanousd, 0);
});
