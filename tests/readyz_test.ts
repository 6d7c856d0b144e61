/**
 * `/healthz` and `/readyz`: readiness reads the store (503 when it does not answer) and reports each
 * enabled provider's upstream calls and failures of the last minutes — exact, added up across two
 * serving threads — without a token and without naming an upstream's URL or key.
 */
import assert from "node:assert/strict";
import { eventually, startStack, UPSTREAM_KEY } from "./helpers/setup.ts";
import { getReady } from "../src/endpoints/health.ts";
import { loadConfig } from "../src/config/load.ts";
import type { RequestContext } from "../src/context.ts";
import type { Store } from "../src/store/store.ts";
import { Registry } from "../src/metrics/registry.ts";
import {
  RECENT_CALLS,
  RECENT_FAMILIES,
  RecentCalls,
  recentOutcomes,
} from "../src/metrics/recent.ts";

const stack = await startStack({ workers: 2 });
const { gateway } = stack;
Deno.test.afterAll(async () => {
  client.close();
  await stack.stop();
});

/** The test catalog's providers (all enabled: the emulator's key is set). */
const PROVIDERS = [
  "anthropic",
  "deepseek",
  "gemini",
  "local",
  "moonshot",
  "openai",
  "xai",
  "zhipu",
];

async function ready() {
  const res = await fetch(`${gateway.url}/readyz`);
  const text = await res.text();
  return { res, text, json: JSON.parse(text) };
}

/** A call whose answer the test does not need; returns its status and request id. */
/** A connection per call (no pooling): the kernel spreads connections over the threads. */
const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });

async function call(model: string, input: string) {
  const res = await fetch(`${gateway.url}/v1/responses`, {
    client,
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, input, max_output_tokens: 32 }),
  });
  await res.body?.cancel();
  return { status: res.status, id: res.headers.get("x-request-id")! };
}

const { key } = await gateway.createKey("readyz-acct", "--credit", "5");

Deno.test("/healthz is liveness; /readyz answers without a token and names no URL or key", async () => {
  const health = await fetch(`${gateway.url}/healthz`);
  assert.deepEqual(await health.json(), { status: "ok" });
  const { res, text, json } = await ready();
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("cache-control"), "no-store");
  assert.equal(json.status, "ready");
  assert.equal(json.store, "ok");
  assert.equal(json.window_seconds, 300);
  assert.deepEqual(Object.keys(json.providers), PROVIDERS);
  for (const [name, p] of Object.entries(json.providers) as [string, Record<string, unknown>][]) {
    // A provider without a key (a local server) has no key counts.
    const keys = name === "local" ? [] : ["keys", "refused"];
    assert.deepEqual(Object.keys(p), ["calls", "errors", "error_rate", ...keys]);
    if (keys.length) assert.deepEqual([p.keys, p.refused], [1, 0]);
  }
  // Each deployment the catalog names, by provider and upstream model, with its circuit.
  assert.deepEqual(json.deployments["openai/gpt-5.4"], { circuit: "closed", in_flight: 0 });
  assert.ok(!text.includes(stack.emulatorUrl) && !text.includes("127.0.0.1"), "no base URL");
  assert.ok(!text.includes(UPSTREAM_KEY), "no upstream key");
});

Deno.test("calls and failures by provider are counted exactly across both serving threads", async () => {
  const before = (await ready()).json.providers;
  // Concurrent calls open several connections, which the kernel spreads over the two threads.
  const calls = await Promise.all([
    ...Array.from({ length: 12 }, (_, i) => call("gpt-test", `fine ${i}`)),
    ...Array.from({ length: 5 }, () => call("gpt-test", "[[emulate status=500]] broken")),
    // The upstream's 429 is the provider's trouble; its 400 the request's (a call, no failure).
    call("gpt-test", "[[emulate status=429]] limited"),
    call("gpt-test", "[[emulate status=400]] bad request"),
    ...Array.from({ length: 3 }, () => call("claude-test", "fine")),
    call("claude-test", "[[emulate status=503]] down"),
  ]);
  assert.equal(calls.filter((c) => c.status === 200).length, 15);
  assert.ok(calls.filter((c) => c.status !== 200).every((c) => c.status >= 400));
  const ids = new Set(calls.map((c) => c.id));
  const lines = () =>
    gateway.logs.map((line) => JSON.parse(line)).filter((l) =>
      l.msg === "request" && ids.has(l.request_id)
    );
  // Each thread writes its access log once per event-loop turn: wait until every line is in.
  await eventually(() => Promise.resolve(lines().length === ids.size));
  const workers = new Set(lines().map((l) => l.worker));
  assert.deepEqual([...workers].sort(), [0, 1], "both threads served some of the calls");

  const { json } = await ready();
  const delta = (name: string) => ({
    calls: json.providers[name].calls - before[name].calls,
    errors: json.providers[name].errors - before[name].errors,
  });
  assert.deepEqual(delta("openai"), { calls: 19, errors: 6 });
  assert.deepEqual(delta("anthropic"), { calls: 4, errors: 1 });
  assert.deepEqual(delta("gemini"), { calls: 0, errors: 0 });
  const openai = json.providers.openai;
  assert.equal(openai.error_rate, Math.round((openai.errors / openai.calls) * 10_000) / 10_000);
  assert.equal(json.providers.zhipu.error_rate, null, "no call: no rate");
});

Deno.test("the window keeps the last five clock minutes; older minutes are dropped", () => {
  const registry = new Registry(RECENT_FAMILIES);
  const recent = new RecentCalls(registry);
  const minute = 60_000;
  const now = 1_000 * minute + 30_000;
  recent.record("a", 500, now - 10 * minute);
  recent.record("a", 200, now - 5 * minute);
  recent.record("a", 0, now - 4 * minute);
  recent.record("a", 200, now - minute);
  recent.record("a", 404, now);
  recent.record("b", 401, now);
  // The 10- and 5-minute-old series were dropped as newer minutes were counted.
  assert.equal(Object.keys(registry.samples[RECENT_CALLS.name]).length, 4);
  const outcomes = recentOutcomes([registry.samples, registry.samples], now);
  assert.deepEqual(outcomes.get("a"), { calls: 6, errors: 2 });
  assert.deepEqual(outcomes.get("b"), { calls: 2, errors: 2 });
  // Read later, a thread's minutes that left the window no longer count.
  assert.deepEqual(recentOutcomes([registry.samples], now + 4 * minute).get("a"), {
    calls: 1,
    errors: 0,
  });
});

Deno.test("/readyz is 503 when the store does not answer, without the store's error text", async () => {
  const config = await loadConfig(undefined, () => undefined);
  const store = {
    holdsOutstanding() {
      throw new Error("unable to open /secret/path/switchyard.db");
    },
  } as unknown as Store;
  const ctx = { services: { config, store } } as unknown as RequestContext;
  const res = await getReady(ctx);
  assert.equal(res.status, 503);
  const text = await res.text();
  assert.equal(JSON.parse(text).status, "unavailable");
  assert.equal(JSON.parse(text).store, "error");
  assert.ok(!text.includes("/secret/path"));
});
