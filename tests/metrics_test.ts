/**
 * `GET /metrics`: the admin token guards it, and a known sequence of calls is read back exactly —
 * requests by route, model, provider and status, refusals, upstream errors, tokens and spend equal
 * to the ledger's — across two serving threads, and on the loopback metrics port without a token.
 */
import assert from "node:assert/strict";
import { eventually, startStack, TEST_PRICE, usageOf } from "./helpers/setup.ts";

const ADMIN = "metrics-admin-token-0123456789";
const stack = await startStack({
  workers: 2,
  admin: { token: ADMIN },
  server: { maxBodyBytes: 65536, metricsPort: 0 },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

/** Parses the exposition text into `name{labels}` → value (labels as written). */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

async function scrape(url = `${gateway.url}/metrics`, token: string | null = ADMIN) {
  const res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await res.text();
  return { res, text, values: parse(text) };
}

/** A series' value, 0 when it is not there. */
function value(values: Map<string, number>, series: string): number {
  return values.get(series) ?? 0;
}

function respond(key: string, body: Record<string, unknown>) {
  return fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-test", max_output_tokens: 64, ...body }),
  });
}

Deno.test("without the admin token /metrics is 401, with a wrong one too; the token is never echoed", async () => {
  const none = await scrape(undefined, null);
  assert.equal(none.res.status, 401);
  const wrong = await scrape(undefined, "not-the-admin-token-at-all");
  assert.equal(wrong.res.status, 401);
  assert.ok(!wrong.text.includes("not-the-admin-token"), "the given token is not echoed");
  assert.ok(!none.text.includes(ADMIN));
  // An API key is not the admin token either.
  const { key } = await gateway.createKey("metrics-not-admin");
  assert.equal((await scrape(undefined, key)).res.status, 401);
});

Deno.test("a known sequence of calls is counted exactly, across both threads", async () => {
  const { key } = await gateway.createKey("metrics-acct", "--credit", "5");
  const before = (await scrape()).values;
  // Six answered calls (some streamed), spread over the threads by the kernel.
  const answers = await Promise.all([
    ...Array.from({ length: 4 }, (_, i) => respond(key, { input: `count me ${i}` })),
    ...Array.from({ length: 2 }, () => respond(key, { input: "stream me", stream: true })),
  ]);
  for (const res of answers) {
    assert.equal(res.status, 200);
    await res.text();
  }
  // One the gateway refuses (404: unknown model), one the upstream fails (500 → 502).
  const unknown = await respond(key, { model: "no-such-model", input: "x" });
  assert.equal(unknown.status, 404);
  await unknown.body?.cancel();
  const failed = await respond(key, { input: "[[emulate status=500]] fail" });
  assert.ok(failed.status >= 500, `upstream failure relayed as ${failed.status}`);
  await failed.body?.cancel();

  const usage = await usageOf(gateway, key);
  let after = new Map<string, number>();
  // Settlement of the streams is counted when it commits: wait until every call is in.
  await eventually(async () => {
    after = (await scrape()).values;
    return value(
      after,
      'switchyard_spend_nanousd_total{model="gpt-test",account="metrics-acct"}',
    ) ===
      usage.spent_nanousd;
  });
  const ok =
    'switchyard_requests_total{route="/v1/responses",protocol="openai",model="gpt-test",provider="openai",status="200"}';
  assert.equal(value(after, ok) - value(before, ok), 6);
  const refused = 'switchyard_refused_total{route="/v1/responses",status="404"}';
  assert.equal(value(after, refused) - value(before, refused), 1);
  const upstream = Object.keys(Object.fromEntries(after)).find((s) =>
    s.startsWith('switchyard_upstream_errors_total{provider="openai",status="5')
  );
  assert.ok(upstream, "the upstream's 5xx is counted by provider and status");
  // Tokens and spend: exactly the ledger's.
  const tokens = (kind: string) =>
    value(
      after,
      `switchyard_tokens_total{model="gpt-test",account="metrics-acct",kind="${kind}"}`,
    );
  assert.equal(
    tokens("input") * TEST_PRICE.input * 1000 + tokens("output") * TEST_PRICE.output * 1000,
    usage.spent_nanousd,
  );
  assert.equal(
    value(after, 'switchyard_upstream_ttfb_seconds_count{provider="openai",model="gpt-test"}') -
      value(before, 'switchyard_upstream_ttfb_seconds_count{provider="openai",model="gpt-test"}'),
    7,
  );
  assert.equal(
    value(after, 'switchyard_upstream_duration_seconds_count{provider="openai",model="gpt-test"}') -
      value(
        before,
        'switchyard_upstream_duration_seconds_count{provider="openai",model="gpt-test"}',
      ),
    6,
  );
  assert.equal(value(after, "switchyard_holds_outstanding"), 0);
  assert.equal(value(after, "switchyard_open_streams"), 0);
  assert.ok(value(after, "switchyard_store_commit_seconds_count") > 0);
});

Deno.test("input tokens by how the prompt cache served them, and what reads saved, by model", async () => {
  const { key } = await gateway.createKey("metrics-cache", "--credit", "5");
  const series = (cache: string) =>
    `switchyard_cache_input_tokens_total{model="claude-test",cache="${cache}"}`;
  const saved = 'switchyard_cache_saved_nanousd_total{model="claude-test"}';
  const before = (await scrape()).values;
  const prefix = "A shared prefix long enough for the cache. ".repeat(10);
  for (const stream of [false, true]) {
    const res = await fetch(`${gateway.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({
        model: "claude-test",
        max_tokens: 32,
        stream,
        messages: [{
          role: "user",
          content: `${prefix}[[emulate cached=20 cache_write=30 cache_write_1h=40]]`,
        }],
      }),
    });
    assert.equal(res.status, 200);
    await res.text();
  }
  await eventually(async () => (await usageOf(gateway, key)).requests === 2);
  const usage = await usageOf(gateway, key);
  // Each settlement is counted once it commits: wait until both are in.
  let after = new Map<string, number>();
  const delta = (name: string) => value(after, name) - value(before, name);
  await eventually(async () => {
    after = (await scrape()).values;
    return delta(series("read")) === 40;
  });
  assert.deepEqual(
    ["read", "write_5m", "write_1h", "uncached"].map((cache) => delta(series(cache))),
    [40, 60, 80, usage.by_unit.input_tokens.quantity],
  );
  // 20 tokens at the input rate minus at the cached rate, twice: exactly the ledger's.
  const perToken = (TEST_PRICE.input - TEST_PRICE.cachedInput) * 1000;
  assert.equal(delta(saved), 2 * 20 * perToken);
  assert.equal(usage.cache.saved_nanousd, 2 * 20 * perToken);
  const { text } = await scrape();
  assert.match(text, /^# TYPE switchyard_cache_lost_nanousd_total counter$/m);
});

Deno.test("a key over its RPM limit is counted as rate-limited", async () => {
  const { key } = await gateway.createKey("metrics-rpm", "--credit", "1", "--rpm", "1");
  const before = (await scrape()).values;
  const statuses = [];
  for (let i = 0; i < 3; i++) {
    const res = await respond(key, { input: "limited" });
    statuses.push(res.status);
    await res.text();
  }
  assert.deepEqual(statuses, [200, 429, 429]);
  const after = (await scrape()).values;
  const series = 'switchyard_rate_limited_total{route="/v1/responses"}';
  assert.equal(value(after, series) - value(before, series), 2);
});

Deno.test("the loopback metrics port serves /metrics without a token, and nothing else", async () => {
  const line = gateway.logs.map((l) => JSON.parse(l)).find((l) => l.msg === "metrics listening");
  assert.ok(line, "the port is logged");
  assert.equal(line.host, "127.0.0.1");
  const url = `http://127.0.0.1:${line.port}`;
  const open = await scrape(`${url}/metrics`, null);
  assert.equal(open.res.status, 200);
  assert.match(open.res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  assert.match(open.text, /^# HELP switchyard_requests_total /m);
  const other = await fetch(`${url}/v1/responses`, { method: "POST", body: "{}" });
  assert.equal(other.status, 404);
  await other.body?.cancel();
});
