/**
 * Keys a team can hand out, through the real gateway: budgets that concurrent streams cannot
 * overshoot and that reset at their window's boundary (the test clock, not sleeping), a hang-up
 * that gives its unused hold back, model lists on every route and listing (fallbacks and
 * contextFallback included), rotation with a grace period, expiry, disabling, address allowlists,
 * tokens per minute and calls in flight — each refusal in the route's own envelope, before any
 * upstream call, and the official SDKs' own error classes for them.
 */
import assert from "node:assert/strict";
import { eventually, MAX_OUT, type Stack, startStack, TEST_PRICE } from "./helpers/setup.ts";
import { Anthropic, GoogleGenAI, OpenAI } from "./deps.ts";
import { anthropic, bearer, goog } from "./helpers/http.ts";

const ADMIN = "keys-admin-token-0123456789";
const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };

const stack: Stack = await startStack({
  env: { SWITCHYARD_TEST_HOOKS: "1", SWITCHYARD_ADMIN_TOKEN: ADMIN },
  routing: { maxAttempts: 3, backoffMs: 5 },
  providers: {
    // Nothing listens there: a call to it fails before any answer, and moves on.
    gone: { type: "openai", baseUrl: "http://127.0.0.1:1/v1", apiKey: "sk-gone" },
  },
  models: {
    "fb-test": {
      provider: "gone",
      upstream: "gpt-5.4",
      price: TEST_PRICE,
      ...MAX_OUT,
      fallbacks: ["claude-test"],
    },
    "ctx-test": {
      provider: "openai",
      upstream: "gpt-5.4",
      price: TEST_PRICE,
      ...MAX_OUT,
      contextFallback: "gemini-test",
    },
  },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

async function keyWith(account: string, settings: Json, credit = "10"): Promise<Json> {
  const res = await fetch(`${gateway.url}/admin/api/keys`, {
    method: "POST",
    headers: admin,
    body: JSON.stringify({ account, credit_usd: credit, ...settings }),
  });
  const body = await res.json();
  assert.equal(res.status, 201, JSON.stringify(body));
  return body;
}

function responses(key: string, body: Json, headers: Record<string, string> = {}) {
  return fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

async function usage(key: string, headers: Record<string, string> = {}): Promise<Json> {
  const res = await fetch(`${gateway.url}/v1/usage`, {
    headers: { authorization: `Bearer ${key}`, ...headers },
  });
  assert.equal(res.status, 200);
  return await res.json();
}

/** Upstream requests the emulator received so far (a count that only grows). */
function upstreamCalls(): Promise<number> {
  return stack.upstreamCount();
}

Deno.test("a monthly budget: 50 concurrent streams never overshoot it, and the refused ones are 429s naming it", async () => {
  const { key } = await keyWith("budget-race", { budgets: [{ usd: "0.01", period: "month" }] });
  const calls = await Promise.all(Array.from({ length: 50 }, async () => {
    const res = await responses(key, {
      model: "gpt-test",
      input: "Tell me a story [[emulate words=30 delay=5]]",
      max_output_tokens: 64,
      stream: true,
    });
    return { status: res.status, retry: res.headers.get("retry-after"), text: await res.text() };
  }));
  const refused = calls.filter((c) => c.status === 429);
  assert.ok(
    calls.every((c) => c.status === 200 || c.status === 429),
    calls.map((c) => c.status).join(),
  );
  assert.ok(refused.length > 0 && refused.length < 50, `${refused.length} refused`);
  for (const c of refused) {
    const error = JSON.parse(c.text).error;
    assert.equal(error.code, "budget_exceeded");
    assert.match(error.message, /this key's monthly budget of 0\.01 USD/);
    assert.ok(Number(c.retry) > 0, "retry-after until the month ends");
  }
  await eventually(async () => (await usage(key)).held_nanousd === 0);
  const u = await usage(key);
  const [budget] = u.budgets;
  assert.equal(budget.period, "month");
  assert.equal(budget.owner, "key");
  assert.equal(budget.limit_nanousd, 10_000_000);
  assert.equal(budget.spent_nanousd, u.spent_nanousd, "every charge counted in the window");
  assert.ok(u.spent_nanousd <= 10_000_000, `spent ${u.spent_nanousd} of 10,000,000`);
  assert.equal(u.requests, 50 - refused.length);
});

Deno.test("a budget's window resets at its boundary, and a call counts in the window it settles in", async () => {
  const { key } = await keyWith("budget-window", { budgets: [{ usd: "0.002", period: "5h" }] });
  const BLOCK = 5 * 3600_000;
  const start = Math.ceil(Date.now() / BLOCK) * BLOCK + BLOCK; // a block to come
  const at = (ms: number) => ({ "x-switchyard-test-now": String(ms) });
  const call = (ms: number, extra: Json = {}) =>
    responses(key, { model: "gpt-test", input: "hi", max_output_tokens: 64, ...extra }, at(ms));
  // Spend the block's budget (each call holds ~1.2 millidollars; the second no longer fits).
  assert.equal((await call(start + 1000)).status, 200);
  let spent = (await usage(key, at(start + 1000))).budgets[0].spent_nanousd;
  while (true) {
    const res = await call(start + 2000);
    if (res.status === 429) {
      const wait = Number(res.headers.get("retry-after"));
      assert.ok(wait > BLOCK / 1000 - 10 && wait <= BLOCK / 1000, `retry-after ${wait}`);
      assert.match((await res.json()).error.message, /5-hour budget/);
      break;
    }
    assert.equal(res.status, 200);
    await res.body?.cancel();
    spent = (await usage(key, at(start + 2000))).budgets[0].spent_nanousd;
  }
  assert.ok(spent > 0 && spent <= 2_000_000);
  // The next block: the window starts afresh by itself.
  const next = start + BLOCK;
  assert.equal((await usage(key, at(next))).budgets[0].spent_nanousd, 0);
  // A stream that starts just before a boundary and ends after it counts in the block it ends in.
  const other = await keyWith("budget-straddle", { budgets: [{ usd: "0.01", period: "5h" }] });
  const streamed = await responses(other.key, {
    model: "gpt-test",
    input: "count [[emulate words=20 delay=40]]",
    max_output_tokens: 64,
    stream: true,
  }, at(next - 300));
  assert.equal(streamed.status, 200);
  await streamed.text();
  await eventually(async () => (await usage(other.key, at(next + 5_000))).held_nanousd === 0);
  const after = await usage(other.key, at(next + 5_000));
  assert.ok(after.budgets[0].spent_nanousd > 0, "counted in the block it settled in");
  assert.equal(after.budgets[0].window_start, new Date(next).toISOString());
  // A minute before the boundary: a request's clock moves on from its header with the real one,
  // so a margin of a millisecond would read the next block on a loaded machine.
  const before = await usage(other.key, at(next - 60_000));
  assert.equal(before.budgets[0].spent_nanousd, 0, "nothing in the block it started in");
});

Deno.test("a client that hangs up gives its unused hold back to the budget", async () => {
  const { key } = await keyWith("budget-hangup", { budgets: [{ usd: "1", period: "day" }] });
  const abort = new AbortController();
  const res = await responses(key, {
    model: "gpt-test",
    input: "long [[emulate words=400 delay=10]]",
    stream: true,
  }, {});
  const reader = res.body!.getReader();
  await reader.read();
  await reader.read();
  abort.abort();
  await reader.cancel();
  await eventually(async () => (await usage(key)).held_nanousd === 0);
  const [day] = (await usage(key)).budgets;
  assert.equal(day.held_nanousd, 0);
  assert.ok(day.spent_nanousd > 0, "what was relayed is charged");
  assert.equal(day.remaining_nanousd, 1_000_000_000 - day.spent_nanousd);
});

Deno.test("model lists: every route refuses what the key may not call (403 in its envelope), before any upstream call; listings show only the rest", async () => {
  const { key } = await keyWith("models", {
    models: ["gpt-*", "claude-test", "fb-test", "ctx-test", "local-*"],
    deny_models: ["local-test"],
  });
  const before = await upstreamCalls();
  const headers = { ...bearer(key), "content-type": "application/json" };
  const refused: [string, RequestInit, "openai" | "anthropic" | "google"][] = [
    ["/v1/responses", { body: JSON.stringify({ model: "gemini-test", input: "hi" }) }, "openai"],
    ["/v1/chat/completions", {
      body: JSON.stringify({ model: "gemini-test", messages: [{ role: "user", content: "hi" }] }),
    }, "openai"],
    ["/v1/messages", {
      headers: { "x-api-key": key, "anthropic-version": "2023-06-01" },
      body: JSON.stringify({
        model: "gemini-test",
        max_tokens: 16,
        messages: [{ role: "user", content: "hi" }],
      }),
    }, "anthropic"],
    ["/v1/messages/count_tokens", {
      headers: { "x-api-key": key, "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "gemini-test", messages: [{ role: "user", content: "hi" }] }),
    }, "anthropic"],
    ["/v1beta/models/gemini-test:generateContent", {
      headers: { "x-goog-api-key": key },
      body: JSON.stringify({ contents: [{ parts: [{ text: "hi" }] }] }),
    }, "google"],
    ["/v1beta/models/gemini-test:countTokens", {
      headers: { "x-goog-api-key": key },
      body: JSON.stringify({ contents: [{ parts: [{ text: "hi" }] }] }),
    }, "google"],
    [
      "/v1/responses/input_tokens",
      { body: JSON.stringify({ model: "gemini-test", input: "hi" }) },
      "openai",
    ],
    ["/v1/embeddings", { body: JSON.stringify({ model: "embed-test", input: "hi" }) }, "openai"],
    [
      "/v1/images/generations",
      { body: JSON.stringify({ model: "image-test", prompt: "a fox" }) },
      "openai",
    ],
    ["/v1/videos/generations", {
      body: JSON.stringify({
        model: "video-test",
        prompt: "waves",
        duration: 1,
        resolution: "480p",
      }),
    }, "openai"],
    [
      "/v1/responses/compact",
      { body: JSON.stringify({ model: "local-test", input: "hi" }) },
      "openai",
    ],
    ["/v1/alpha/search", {
      body: JSON.stringify({
        id: "s1",
        model: "grok-test",
        input: "news",
        commands: {},
        settings: {},
      }),
    }, "openai"],
    [
      "/v1/responses",
      { body: JSON.stringify({ model: "local-test", input: "hi" }) },
      "openai",
    ],
  ];
  for (const [path, init, format] of refused) {
    const res = await fetch(`${gateway.url}${path}`, {
      method: "POST",
      ...init,
      headers: { ...headers, ...init.headers },
    });
    const body = await res.json();
    assert.equal(res.status, 403, `${path}: ${JSON.stringify(body)}`);
    if (format === "openai") assert.equal(body.error.type, "permission_error", path);
    if (format === "anthropic") assert.equal(body.error.type, "permission_error", path);
    if (format === "google") assert.equal(body.error.status, "PERMISSION_DENIED", path);
    const message = format === "google" || format === "openai"
      ? body.error.message
      : body.error.message;
    assert.match(message, /may not use the model/, path);
    assert.doesNotMatch(message, /key_|sy-/, `${path}: nothing about keys`);
  }
  assert.equal(await upstreamCalls(), before, "no refused call reached an upstream");
  // Allowed ones work.
  assert.equal((await responses(key, { model: "gpt-test", input: "hi" })).status, 200);
  // Every listing shape shows only what the key may call.
  const openaiList = await (await fetch(`${gateway.url}/v1/models`, { headers })).json();
  const ids: string[] = openaiList.data.map((m: Json) => m.id);
  assert.ok(ids.includes("gpt-test") && ids.includes("claude-test"), ids.join());
  assert.ok(!ids.includes("gemini-test") && !ids.includes("embed-test"), ids.join());
  const anthropicList = await (await fetch(`${gateway.url}/v1/models`, {
    headers: anthropic(key),
  })).json();
  assert.ok(anthropicList.data.every((m: Json) => !String(m.id).startsWith("gemini")));
  const geminiList = await (await fetch(`${gateway.url}/v1beta/models`, {
    headers: goog(key),
  })).json();
  const geminiIds: string[] = geminiList.models.map((m: Json) => m.baseModelId);
  assert.ok(geminiIds.includes("gpt-test"), geminiIds.join());
  assert.ok(
    geminiIds.every((id) => !id.startsWith("gemini") && id !== "local-test"),
    geminiIds.join(),
  );
  assert.equal(
    (await fetch(`${gateway.url}/v1/models/gemini-test`, { headers })).status,
    404,
  );
  assert.equal((await fetch(`${gateway.url}/v1/models/gpt-test`, { headers })).status, 200);
});

Deno.test("fallbacks and contextFallback never take a call to a model its key may not use", async () => {
  const open = await keyWith("fallback-open", {});
  const fenced = await keyWith("fallback-fenced", { models: ["fb-test", "ctx-test"] });
  // The primary is unreachable: an open key lands on the fallback; a fenced one does not.
  const ok = await responses(open.key, { model: "fb-test", input: "hi" });
  assert.equal(ok.status, 200, await ok.clone().text());
  assert.equal(ok.headers.get("x-switchyard-model"), "claude-test");
  const fencedFb = await responses(fenced.key, { model: "fb-test", input: "hi" });
  assert.ok(fencedFb.status >= 500, `fenced: ${fencedFb.status}`);
  assert.notEqual(fencedFb.headers.get("x-switchyard-model"), "claude-test");
  await fencedFb.body?.cancel();
  // Over the context window: the open key's call goes on to gemini-test (which the emulator
  // finds too long as well); the fenced one's never does.
  const body = { model: "ctx-test", input: "huge [[emulate context=1]]" };
  const mark = await stack.upstreamCount();
  const geminiCalls = async () =>
    (await stack.upstreamSince(mark)).filter((r) => r.path.includes("gemini-2.5-flash")).length;
  const jumped = await responses(open.key, body);
  await jumped.body?.cancel();
  assert.equal(await geminiCalls(), 1, "the open key's call went to the fallback");
  const kept = await responses(fenced.key, body);
  assert.equal(kept.status, 400, await kept.clone().text());
  await kept.body?.cancel();
  assert.equal(await geminiCalls(), 1, "the fenced key's call did not");
});

Deno.test("rotation with a grace period, expiry, disabling and address allowlists", async () => {
  const created = await keyWith("lifecycle", { name: "intern", metadata: { team: "research" } });
  const call = (key: string, headers: Record<string, string> = {}) =>
    responses(key, { model: "gpt-test", input: "hi" }, headers);
  // Rotation: the new secret works at once, the old one until its grace ends (the test clock).
  const rotated = await (await fetch(`${gateway.url}/admin/api/keys/${created.id}/rotate`, {
    method: "POST",
    headers: admin,
    body: JSON.stringify({ grace_seconds: 3600 }),
  })).json();
  assert.equal(rotated.id, created.id);
  assert.notEqual(rotated.key, created.key);
  assert.equal((await call(rotated.key)).status, 200);
  assert.equal((await call(created.key)).status, 200, "the old secret within its grace");
  const later = { "x-switchyard-test-now": String(Date.now() + 3_700_000) };
  assert.equal((await call(created.key, later)).status, 401, "the old secret after its grace");
  assert.equal((await call(rotated.key, later)).status, 200);
  // Disabled, then enabled again.
  const patch = (body: Json) =>
    fetch(`${gateway.url}/admin/api/keys/${created.id}`, {
      method: "PATCH",
      headers: admin,
      body: JSON.stringify(body),
    }).then((r) => r.json());
  assert.equal((await patch({ disabled: true })).status, "disabled");
  const disabled = await call(rotated.key);
  assert.equal(disabled.status, 401);
  assert.match((await disabled.json()).error.message, /disabled/);
  assert.equal((await patch({ disabled: false })).status, "active");
  assert.equal((await call(rotated.key)).status, 200);
  // Expiry: fine before, 401 from the instant on.
  const expires = Date.now() + 86_400_000;
  await patch({ expires_at: expires });
  assert.equal((await call(rotated.key)).status, 200);
  const expired = await call(rotated.key, { "x-switchyard-test-now": String(expires) });
  assert.equal(expired.status, 401);
  assert.match((await expired.json()).error.message, /expired/);
  await patch({ expires_at: null });
  // Addresses: this test's 127.0.0.1 is outside 10.0.0.0/8.
  await patch({ ips: ["10.0.0.0/8", "2001:db8::/32"] });
  const outside = await call(rotated.key);
  assert.equal(outside.status, 403);
  assert.equal((await outside.json()).error.type, "permission_error");
  await patch({ ips: ["127.0.0.0/8"] });
  assert.equal((await call(rotated.key)).status, 200);
  // The key's record: its name, metadata and last use.
  const view =
    await (await fetch(`${gateway.url}/admin/api/keys/${created.id}`, { headers: admin })).json();
  assert.equal(view.name, "intern");
  assert.deepEqual(view.metadata, { team: "research" });
});

Deno.test("tokens per minute and calls in flight: headers on each answer, 429 past them", async () => {
  const tpm = await keyWith("tpm", { tpm: 5_000 });
  const first = await responses(tpm.key, {
    model: "gpt-test",
    input: "hi",
    max_output_tokens: 4000,
  });
  assert.equal(first.status, 200);
  assert.equal(first.headers.get("x-ratelimit-limit-tokens"), "5000");
  const remaining = Number(first.headers.get("x-ratelimit-remaining-tokens"));
  assert.ok(remaining < 1000, `remaining ${remaining}`);
  await first.body?.cancel();
  // Held tokens come back at settlement (the answer used far fewer than its cap).
  const second = await responses(tpm.key, {
    model: "gpt-test",
    input: "hi",
    max_output_tokens: 4000,
  });
  assert.equal(second.status, 200);
  await second.body?.cancel();
  // Two such calls at once do not fit in a minute's tokens.
  const slowBody = { model: "gpt-test", input: "slow [[emulate words=20 delay=30]]", stream: true };
  const held = await responses(tpm.key, { ...slowBody, max_output_tokens: 4000 });
  assert.equal(held.status, 200);
  const over = await responses(tpm.key, {
    model: "gpt-test",
    input: "hi",
    max_output_tokens: 4000,
  });
  assert.equal(over.status, 429);
  assert.ok(Number(over.headers.get("retry-after")) >= 1);
  assert.equal(over.headers.get("x-ratelimit-remaining-tokens"), "0");
  assert.equal((await over.json()).error.code, "rate_limit_exceeded");
  await held.text();
  const big = await responses(tpm.key, { model: "gpt-test", input: "hi", max_output_tokens: 6000 });
  assert.equal(big.status, 429);
  assert.equal((await big.json()).error.code, "request_too_large");

  const flight = await keyWith("flight", { max_concurrent: 2 });
  const slow = () =>
    responses(flight.key, {
      model: "gpt-test",
      input: "slow [[emulate words=40 delay=25]]",
      stream: true,
    });
  const [a, b] = await Promise.all([slow(), slow()]);
  assert.deepEqual([a.status, b.status], [200, 200]);
  const third = await responses(flight.key, { model: "gpt-test", input: "hi" });
  assert.equal(third.status, 429);
  assert.equal(third.headers.get("retry-after"), "1");
  assert.equal((await third.json()).error.code, "concurrency_limit_exceeded");
  await Promise.all([a.text(), b.text()]);
  await eventually(async () =>
    (await responses(flight.key, { model: "gpt-test", input: "hi" })).status === 200
  );
});

Deno.test("the official SDKs see their own error classes for 403 and 429, and honour retry-after", async () => {
  const fenced = await keyWith("sdk-fenced", { models: ["claude-test"] });
  const openai = new OpenAI({ apiKey: fenced.key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  await assert.rejects(
    openai.responses.create({ model: "gpt-test", input: "hi" }),
    (e: unknown) => e instanceof OpenAI.PermissionDeniedError,
  );
  const anthropic = new Anthropic({ apiKey: fenced.key, baseURL: gateway.url, maxRetries: 0 });
  await assert.rejects(
    anthropic.messages.create({
      model: "gpt-test",
      max_tokens: 16,
      messages: [{ role: "user", content: "hi" }],
    }),
    (e: unknown) => e instanceof Anthropic.PermissionDeniedError,
  );
  const google = new GoogleGenAI({ apiKey: fenced.key, httpOptions: { baseUrl: gateway.url } });
  await assert.rejects(
    google.models.generateContent({ model: "gpt-test", contents: "hi" }),
    (e: unknown) => (e as { status?: number }).status === 403,
  );
  // One call in flight at most: the SDK waits out the 429's retry-after, then gets its answer.
  const single = await keyWith("sdk-single", { max_concurrent: 1 });
  const slow = await responses(single.key, {
    model: "gpt-test",
    input: "slow [[emulate words=20 delay=40]]",
    stream: true,
  });
  const client = new OpenAI({ apiKey: single.key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  await assert.rejects(
    client.responses.create({ model: "gpt-test", input: "hi" }),
    (e: unknown) => e instanceof OpenAI.RateLimitError,
  );
  const patient = new OpenAI({ apiKey: single.key, baseURL: `${gateway.url}/v1`, maxRetries: 3 });
  const started = Date.now();
  const [answer] = await Promise.all([
    patient.responses.create({ model: "gpt-test", input: "hi" }),
    slow.text(),
  ]);
  assert.ok(answer.output_text.length > 0);
  assert.ok(Date.now() - started >= 500, "it waited for the retry-after");
});
