/**
 * Model listings through the gateway, read with the three official SDKs: OpenAI's list and
 * retrieve, Anthropic's cursor pages (auto-paging, `before_id`), Gemini's token pages under
 * `/v1beta` and the SDK's default `/v1`; only enabled providers' models, pattern entries by their
 * stems, each protocol's own error envelope, free of charge but counted toward RPM, 401 without a
 * key.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { Anthropic, GoogleGenAI, OpenAI } from "./deps.ts";
import { MAX_OUT, startStack, TEST_PRICE, usageOf } from "./helpers/setup.ts";

const stack = await startStack({
  providers: {
    // No key in the environment: disabled at startup, its models never listed.
    off: { type: "openai", baseUrl: "/openai/v1", apiKey: "env:SWITCHYARD_TEST_NO_SUCH_KEY" },
  },
  models: {
    "off-test": { provider: "off", upstream: "gpt-5.4", price: TEST_PRICE, ...MAX_OUT },
    "gemini-embed-test": {
      provider: "gemini",
      kind: "embedding",
      upstream: "gemini-embedding-001",
      price: { input: 0.15 },
    },
    // Listed by its stem; dated snapshots of an exact id and open patterns add no id.
    "family-test*": { provider: "anthropic", upstream: "claude-sonnet-4-5", price: TEST_PRICE },
    "gpt-test-20*": { provider: "openai", upstream: "gpt-5.4", price: TEST_PRICE, ...MAX_OUT },
    "open-*": { provider: "openai", upstream: "gpt-5.4", price: TEST_PRICE },
    "dated-test-20250514": { provider: "gemini", upstream: "gemini-2.5-flash", price: TEST_PRICE },
  },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

/** The test catalog's text models that are listed, in catalog order. */
const TEXT = [
  "gpt-test",
  "grok-test",
  "free-test",
  "claude-test",
  "deepseek-test",
  "kimi-test",
  "glm-test",
  "gemini-test",
  "gemini-3-test",
  "local-test",
  "gemini-3-pro-image-test",
  "gemini-2.5-flash-image-test",
  "gemini-3.1-flash-image-test",
  "gemini-3.1-flash-lite-image-test",
  "family-test",
  "dated-test-20250514",
];
/** What OpenAI clients can call: every kind on the OpenAI-style endpoints. */
const OPENAI_IDS = [
  "gpt-test",
  "grok-test",
  "free-test",
  "video-test",
  "image-test",
  "grok-image-test",
  "embed-test",
  ...TEXT.slice(3),
];
/** What Gemini clients can call: text models and Gemini's embedding models. */
const GEMINI_IDS = [...TEXT.slice(0, 14), "gemini-embed-test", ...TEXT.slice(14)];

async function keyFor(account: string) {
  return (await gateway.createKey(account, "--credit", "1", "--rpm", "1000")).key;
}

Deno.test("OpenAI: models.list lists every callable model of the enabled providers; retrieve", async () => {
  const key = await keyFor("models-openai");
  const openai = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  const ids: string[] = [];
  for await (const model of openai.models.list()) {
    assert.equal(model.object, "model");
    ids.push(model.id);
  }
  assert.deepEqual(ids, OPENAI_IDS);
  assert.deepEqual(await openai.models.retrieve("gpt-test"), {
    id: "gpt-test",
    object: "model",
    created: 0,
    owned_by: "openai",
  });
  // Ids a pattern resolves are retrievable, though not listed.
  const snapshot = await openai.models.retrieve("gpt-test-2026-03-05");
  assert.equal(snapshot.id, "gpt-test-2026-03-05");
  assert.equal((await openai.models.retrieve("dated-test-20250514")).created, 1747180800);
  for (const id of ["off-test", "no-such-model", "gemini-embed-test"]) {
    await assert.rejects(
      openai.models.retrieve(id),
      (e: any) => e.status === 404 && e.code === "model_not_found" && e.message.includes(id),
      id,
    );
  }
});

Deno.test("Anthropic: models.list pages by cursor (auto-paging, before_id); retrieve; errors in Anthropic's envelope", async () => {
  const key = await keyFor("models-anthropic");
  const anthropic = new Anthropic({ apiKey: key, baseURL: gateway.url, maxRetries: 0 });
  const ids: string[] = [];
  for await (const model of anthropic.models.list({ limit: 5 })) {
    assert.equal(model.type, "model");
    assert.equal(model.display_name, model.id);
    assert.match(model.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    ids.push(model.id);
  }
  assert.deepEqual(ids, TEXT);
  const first = await anthropic.models.list({ limit: 5 });
  assert.deepEqual(
    [first.data.length, first.has_more, first.first_id, first.last_id],
    [5, true, "gpt-test", "deepseek-test"],
  );
  const before = await anthropic.models.list({ limit: 2, before_id: "claude-test" });
  assert.deepEqual(before.data.map((m) => m.id), ["grok-test", "free-test"]);
  assert.equal(before.has_more, true);
  const last = await anthropic.models.list({ after_id: "family-test" });
  assert.deepEqual(
    [last.data.map((m) => m.id), last.has_more, last.first_id],
    [["dated-test-20250514"], false, "dated-test-20250514"],
  );
  const dated = await anthropic.models.retrieve("dated-test-20250514");
  assert.deepEqual(
    { type: dated.type, id: dated.id, created_at: dated.created_at },
    { type: "model", id: "dated-test-20250514", created_at: "2025-05-14T00:00:00Z" },
  );
  assert.equal((await anthropic.models.retrieve("claude-test")).created_at, "1970-01-01T00:00:00Z");
  // Anthropic clients call text models only.
  await assert.rejects(anthropic.models.retrieve("image-test"), (e: any) => {
    assert.equal(e.status, 404);
    assert.equal(e.error.type, "error");
    assert.equal(e.error.error.type, "not_found_error");
    assert.ok(e.requestID?.startsWith("req_"), "request-id header");
    return true;
  });
  await assert.rejects(
    anthropic.models.list({ limit: 0 }),
    (e: any) => e.status === 400 && e.error.error.type === "invalid_request_error",
  );
  await assert.rejects(
    anthropic.models.list({ after_id: "no-such-model" }),
    (e: any) => e.status === 400 && /after_id/.test(e.error.error.message),
  );
});

Deno.test("Gemini: models.list pages with pageSize/pageToken on v1beta and v1; get; methods by kind", async () => {
  const key = await keyFor("models-gemini");
  for (const apiVersion of ["v1beta", undefined]) {
    const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gateway.url, apiVersion } });
    const pager = await ai.models.list({ config: { pageSize: 7 } });
    assert.equal(pager.page.length, 7);
    const names: string[] = [];
    for await (const model of pager) names.push(model.name!);
    assert.deepEqual(names, GEMINI_IDS.map((id) => `models/${id}`), String(apiVersion));

    const text = await ai.models.get({ model: "gemini-test" });
    assert.deepEqual(
      [text.name, text.displayName, text.version, text.outputTokenLimit, text.supportedActions],
      [
        "models/gemini-test",
        "gemini-test",
        "001",
        8192,
        ["generateContent", "streamGenerateContent", "countTokens"],
      ],
    );
    // Any text model, whatever its provider, is reachable through generateContent.
    assert.equal((await ai.models.get({ model: "claude-test" })).name, "models/claude-test");
    const embedding = await ai.models.get({ model: "models/gemini-embed-test" });
    assert.deepEqual(embedding.supportedActions, ["embedContent", "batchEmbedContents"]);
    for (const id of ["image-test", "embed-test", "off-test", "no-such-model"]) {
      await assert.rejects(ai.models.get({ model: id }), (e: any) => e.status === 404, id);
    }
  }
  // Raw pages: the page size is capped at 1000, a token the gateway did not issue is refused.
  const get = (path: string) =>
    fetch(`${gateway.url}${path}`, { headers: { "x-goog-api-key": key } });
  const all = await (await get("/v1beta/models?pageSize=5000")).json();
  assert.equal(all.models.length, GEMINI_IDS.length);
  assert.equal(all.nextPageToken, undefined);
  const page = await (await get("/v1beta/models?pageSize=2")).json();
  assert.deepEqual(page.models.map((m: any) => m.name), ["models/gpt-test", "models/grok-test"]);
  const next = await (await get(`/v1/models?pageSize=2&pageToken=${page.nextPageToken}`)).json();
  assert.deepEqual(next.models.map((m: any) => m.name), ["models/free-test", "models/claude-test"]);
  for (const path of ["/v1beta/models?pageToken=bogus", "/v1/models?pageToken=bogus"]) {
    const res = await get(path);
    assert.equal(res.status, 400, path);
    const body = await res.json();
    assert.equal(body.error.status, "INVALID_ARGUMENT");
    assert.match(body.error.message, /pageToken/);
  }
  const notFound = await get("/v1/models/no-such-model");
  assert.equal(notFound.status, 404);
  assert.deepEqual(Object.keys((await notFound.json()).error).sort(), [
    "code",
    "message",
    "status",
  ]);
});

Deno.test("listings are free and counted toward RPM; every dialect needs a key", async () => {
  const { key } = await gateway.createKey("models-free", "--credit", "1", "--rpm", "50");
  const headers: Record<string, string>[] = [
    { authorization: `Bearer ${key}` },
    { "x-api-key": key, "anthropic-version": "2023-06-01" },
    { "x-goog-api-key": key },
  ];
  const remaining: number[] = [];
  for (const h of headers) {
    for (const path of ["/v1/models", "/v1/models/gemini-test", "/v1beta/models"]) {
      if (path.startsWith("/v1beta") && !("x-goog-api-key" in h)) continue;
      const res = await fetch(`${gateway.url}${path}`, { headers: h });
      assert.equal(res.status, 200, `${path} ${Object.keys(h)}`);
      await res.body?.cancel();
      remaining.push(Number(res.headers.get("x-ratelimit-remaining-requests")));
    }
  }
  assert.deepEqual(remaining, [49, 48, 47, 46, 45, 44, 43]);
  const usage = await usageOf(gateway, key);
  assert.equal(usage.requests, 0);
  assert.equal(usage.spent_nanousd, 0);

  for (const path of ["/v1/models", "/v1/models/gpt-test", "/v1beta/models"]) {
    const res = await fetch(`${gateway.url}${path}`);
    assert.equal(res.status, 401, path);
    const body = await res.json();
    assert.ok(body.error.message.startsWith("Missing API key"), path);
  }
  const query = await fetch(`${gateway.url}/v1/models?key=${key}`);
  assert.equal(query.status, 401);
  assert.match((await query.json()).error.message, /x-goog-api-key/);
  // A refused key on the shared path is answered in the envelope of the protocol its headers name.
  const anthropicStyle = await fetch(`${gateway.url}/v1/models`, {
    headers: { "x-api-key": "sy-nope-nope", "anthropic-version": "2023-06-01" },
  });
  assert.equal(anthropicStyle.status, 401);
  const anthropicBody = await anthropicStyle.json();
  assert.equal(anthropicBody.type, "error");
  assert.equal(anthropicBody.error.type, "authentication_error");
  const googleStyle = await fetch(`${gateway.url}/v1/models`, {
    headers: { "x-goog-api-key": "sy-nope-nope" },
  });
  assert.equal(googleStyle.status, 401);
  assert.equal((await googleStyle.json()).error.status, "UNAUTHENTICATED");
  const bad = "sy-nope-nope";
  await assert.rejects(
    new OpenAI({ apiKey: bad, baseURL: `${gateway.url}/v1`, maxRetries: 0 }).models.list(),
    (e: any) => e.status === 401,
  );
  await assert.rejects(
    new Anthropic({ apiKey: bad, baseURL: gateway.url, maxRetries: 0 }).models.list(),
    (e: any) => e.status === 401,
  );
  const ai = new GoogleGenAI({
    apiKey: bad,
    httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" },
  });
  await assert.rejects(ai.models.list(), (e: any) => e.status === 401);
});
