/** The spine through the real server: auth, revocation, RPM, usage, request ids, 404/405. */
import assert from "node:assert/strict";
import { requestLogged, startGateway } from "./helpers/gateway.ts";
import { bearer } from "./helpers/http.ts";

const gateway = await startGateway();

Deno.test.afterAll(() => gateway.stop());

Deno.test("GET /v1/usage with a Bearer key returns the account's exact balance", async () => {
  const { key } = await gateway.createKey("usage-acct", "--credit", "12.345678901");
  const res = await fetch(`${gateway.url}/v1/usage`, { headers: bearer(key) });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/json");
  const body = await res.json();
  assert.match(body.key.id, /^key_/);
  // The prompt cache over the last 30 days (from `since`, a UTC date): nothing yet.
  const none = {
    by_day: [],
    by_model: {},
    requests: 0,
    input_tokens: 0,
    cached_input_tokens: 0,
    uncached_input_tokens: 0,
    cache_write_tokens: 0,
    cache_write_1h_tokens: 0,
    hit_rate: null,
    saved_nanousd: 0,
    saved_usd: "0.00",
    lost_nanousd: 0,
    lost_usd: "0.00",
    missed_input_tokens: 0,
    misses: {},
  };
  // Thirty UTC days, today's included.
  const since = new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10);
  assert.deepEqual(body.cache, { ...none, days: 30, since, key: none });
  assert.deepEqual({ ...body, key: undefined, cache: undefined }, {
    key: undefined,
    cache: undefined,
    account_limits: { budgets: [], models: null, deny_models: null },
    budgets: [],
    object: "usage",
    account: "usage-acct",
    currency: "USD",
    balance_usd: "12.345678901",
    balance_nanousd: 12_345_678_901,
    spent_usd: "0.00",
    spent_nanousd: 0,
    held_usd: "0.00",
    held_nanousd: 0,
    requests: 0,
    by_unit: {},
    held_by_unit: {},
    by_model: {},
  });
});

Deno.test("missing, malformed and unknown Bearer keys get 401 in OpenAI format", async () => {
  const { key } = await gateway.createKey("auth-acct");
  const cases: [Record<string, string>, RegExp][] = [
    [{}, /Missing API key.*Authorization/],
    [{ authorization: key }, /Missing API key/],
    [{ "x-api-key": key }, /Missing API key/], // not a scheme of /v1/usage
    [bearer(key.slice(0, -1) + (key.endsWith("A") ? "B" : "A")), /^Invalid API key\.$/],
    [bearer("sk-not-ours"), /^Invalid API key\.$/],
  ];
  for (const [headers, message] of cases) {
    const res = await fetch(`${gateway.url}/v1/usage`, { headers });
    assert.equal(res.status, 401, JSON.stringify(headers));
    const body = await res.json();
    assert.equal(body.error.type, "invalid_request_error");
    assert.equal(body.error.code, "invalid_api_key");
    assert.equal(body.error.param, null);
    assert.match(body.error.message, message);
    assert.ok(!JSON.stringify(body).includes(key), "the error must not echo the key");
  }
});

Deno.test("a revoked key is refused at once, without a restart", async () => {
  const { key, id } = await gateway.createKey("revoke-acct");
  assert.equal((await fetch(`${gateway.url}/v1/usage`, { headers: bearer(key) })).status, 200);
  const revoked = await gateway.cli("keys", "revoke", id);
  assert.equal(revoked.code, 0, revoked.stderr);
  const res = await fetch(`${gateway.url}/v1/usage`, { headers: bearer(key) });
  assert.equal(res.status, 401);
  assert.match((await res.json()).error.message, /revoked/);
});

Deno.test("RPM: the request over the limit gets 429 with Retry-After and rate-limit headers", async () => {
  const { key } = await gateway.createKey("rpm-acct", "--rpm", "3");
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${gateway.url}/v1/usage`, { headers: bearer(key) });
    await res.body?.cancel();
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-ratelimit-limit-requests"), "3");
    assert.equal(res.headers.get("x-ratelimit-remaining-requests"), String(2 - i));
    assert.match(res.headers.get("x-ratelimit-reset-requests")!, /^(0s|\d+ms|\d+s|1m0s)$/);
    assert.equal(res.headers.get("retry-after"), null);
  }
  const res = await fetch(`${gateway.url}/v1/usage`, { headers: bearer(key) });
  assert.equal(res.status, 429);
  const retryAfter = Number(res.headers.get("retry-after"));
  assert.ok(retryAfter >= 1 && retryAfter <= 60, `retry-after ${retryAfter}`);
  assert.equal(res.headers.get("x-ratelimit-limit-requests"), "3");
  assert.equal(res.headers.get("x-ratelimit-remaining-requests"), "0");
  assert.match(res.headers.get("x-ratelimit-reset-requests")!, /^(\d+s|1m0s)$/);
  const body = await res.json();
  assert.equal(body.error.code, "rate_limit_exceeded");
  assert.match(body.error.message, /3 requests per minute/);
  // Another key of the same account has its own window.
  const other = await gateway.createKey("rpm-acct", "--rpm", "3");
  assert.equal(
    (await fetch(`${gateway.url}/v1/usage`, { headers: bearer(other.key) })).status,
    200,
  );
});

Deno.test("x-request-id is echoed when given and generated otherwise", async () => {
  const given = await fetch(`${gateway.url}/healthz`, { headers: { "x-request-id": "trace-42" } });
  assert.deepEqual(await given.json(), { status: "ok" });
  assert.equal(given.headers.get("x-request-id"), "trace-42");
  const generated = await fetch(`${gateway.url}/healthz`);
  await generated.body?.cancel();
  assert.match(generated.headers.get("x-request-id")!, /^req_[0-9a-f-]{36}$/);
  const unsafe = await fetch(`${gateway.url}/healthz`, {
    headers: { "x-request-id": "has spaces {and} braces" },
  });
  await unsafe.body?.cancel();
  assert.match(unsafe.headers.get("x-request-id")!, /^req_/);
});

Deno.test("unknown routes get 404 in the format of the protocol their path belongs to", async () => {
  const openai = await fetch(`${gateway.url}/v1/nothing-here`, { method: "POST" });
  assert.equal(openai.status, 404);
  assert.deepEqual(await openai.json(), {
    error: {
      message: "Invalid URL (POST /v1/nothing-here)",
      type: "invalid_request_error",
      param: null,
      code: "unknown_url",
    },
  });
  const google = await fetch(`${gateway.url}/v1beta/nothing`);
  assert.equal(google.status, 404);
  assert.deepEqual(await google.json(), {
    error: { code: 404, message: "Invalid URL (GET /v1beta/nothing)", status: "NOT_FOUND" },
  });
  const anthropic = await fetch(`${gateway.url}/v1/messages/nothing`);
  assert.equal(anthropic.status, 404);
  const body = await anthropic.json();
  assert.equal(body.type, "error");
  assert.equal(body.error.type, "not_found_error");
  assert.equal(body.request_id, anthropic.headers.get("x-request-id"));
});

Deno.test("a known path with the wrong method gets 405 with Allow", async () => {
  const res = await fetch(`${gateway.url}/v1/usage`, { method: "DELETE" });
  assert.equal(res.status, 405);
  assert.equal(res.headers.get("allow"), "GET");
  const body = await res.json();
  assert.equal(body.error.code, "method_not_allowed");
});

Deno.test("every request writes one JSON access-log line without the key", async () => {
  const { key } = await gateway.createKey("log-acct");
  const res = await fetch(`${gateway.url}/v1/usage?x=1`, {
    headers: { ...bearer(key), "x-request-id": "log-line-1" },
  });
  await res.body?.cancel();
  await requestLogged(gateway, "log-line-1");
  const lines = gateway.logs.filter((line) => line.includes("log-line-1"));
  assert.equal(lines.length, 1);
  const entry = JSON.parse(lines[0]);
  assert.equal(entry.msg, "request");
  assert.equal(entry.path, "/v1/usage");
  assert.equal(entry.status, 200);
  assert.equal(entry.account, "log-acct");
  assert.match(entry.key_id, /^key_/);
  assert.ok(!gateway.logs.some((line) => line.includes(key)), "no log line may contain a key");
});

Deno.test("405 and 415 speak each route's protocol", async () => {
  const { key } = await gateway.createKey("shape-acct");
  const get = await fetch(`${gateway.url}/v1/messages`, { headers: { "x-api-key": key } });
  assert.equal(get.status, 405);
  assert.equal(get.headers.get("allow"), "POST");
  const getBody = await get.json();
  assert.equal(getBody.type, "error");
  assert.equal(getBody.error.type, "invalid_request_error");
  const google = await fetch(`${gateway.url}/v1beta/models/gemini-2.5-flash:countTokens`);
  assert.equal(google.status, 405);
  assert.equal((await google.json()).error.status, "UNIMPLEMENTED");

  const text = (path: string, headers: Record<string, string>) =>
    fetch(`${gateway.url}${path}`, {
      method: "POST",
      headers: { "content-type": "text/plain", ...headers },
      body: "hello",
    });
  const messages = await text("/v1/messages", { "x-api-key": key });
  assert.equal(messages.status, 415);
  assert.match((await messages.json()).error.message, /Content-Type must be application\/json/);
  const generate = await text("/v1beta/models/gemini-2.5-flash:generateContent", {
    "x-goog-api-key": key,
  });
  assert.equal(generate.status, 415);
  assert.deepEqual(await generate.json(), {
    error: {
      code: 415,
      message: "Content-Type must be application/json, not text/plain",
      status: "INVALID_ARGUMENT",
    },
  });
});

Deno.test("HEAD is answered by the GET route", async () => {
  const res = await fetch(`${gateway.url}/healthz`, { method: "HEAD" });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), "");
});
