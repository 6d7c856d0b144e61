/**
 * The routing rules without a server: weighted turns, key rests and refusals, the circuit
 * breaker's states, deployment limits, attempts and budget, and the config rules for keys,
 * deployments and fallbacks.
 */
import assert from "node:assert/strict";
import { buildConfig, ConfigError } from "../../../src/config/load.ts";
import { Board } from "../../../src/routing/board.ts";
import { schedule, turnOrder } from "../../../src/routing/weights.ts";
import { admit, circuitState, recordOutcome } from "../../../src/routing/circuit.ts";
import { acquire } from "../../../src/routing/limits.ts";
import {
  allResting,
  keyTurns,
  refuseKey,
  restKey,
  restoreKeys,
} from "../../../src/routing/keys.ts";
import { CallRoute, retryAfterMs } from "../../../src/routing/attempts.ts";
import type { ProviderEntry } from "../../../src/catalog/catalog.ts";
import { keyRefusal } from "../../../src/providers/key_failure.ts";

const CIRCUIT = { failures: 3, errorRate: 0.5, minCalls: 10, windowMs: 60_000, coolOffMs: 1000 };

Deno.test("weighted turns: each item its weight's share, spread out over the cycle", () => {
  assert.deepEqual(schedule([1, 1]), [0, 1]);
  assert.deepEqual(schedule([3, 1]), [0, 0, 1, 0]);
  const turns = schedule([5, 3, 2]);
  assert.equal(turns.length, 10);
  assert.deepEqual([0, 1, 2].map((i) => turns.filter((t) => t === i).length), [5, 3, 2]);
  // No item takes three turns in a row when others are waiting.
  assert.ok(!turns.some((t, i) => t === turns[i + 1] && t === turns[i + 2]));
  assert.deepEqual(turnOrder([0, 0, 1, 0], 2, 2), [1, 0]);
  assert.deepEqual(turnOrder([0, 0, 1, 0], 3, 2), [0, 1]);
});

Deno.test("the board: a name's slot is the same in every view of one buffer", () => {
  const board = new Board();
  const other = new Board(board.buffer);
  board.slot("key:a").add(2, 5);
  assert.equal(other.slot("key:a").get(2), 5);
  assert.equal(other.slot("key:b").get(2), 0);
  other.slot("key:a").setTime(0, 1234);
  assert.equal(board.slot("key:a").time(0), 1234);
  // Reading claims nothing; a name claimed later by another view is then found.
  assert.equal(board.find("rest:x"), undefined);
  assert.equal(board.find("rest:x"), undefined);
  other.slot("rest:x").set(4, 7);
  assert.equal(board.find("rest:x")?.get(4), 7);
  // Many names, each its own slot.
  for (let i = 0; i < 500; i++) board.slot(`n${i}`).set(3, i);
  for (let i = 0; i < 500; i++) assert.equal(other.slot(`n${i}`).get(3), i);
});

function provider(weights: number[]): ProviderEntry {
  return {
    name: "p",
    type: "openai",
    baseUrl: "http://127.0.0.1:1",
    enabled: true,
    surfaces: [],
    keys: weights.map((weight, i) => ({
      secret: `s${i}`,
      weight,
      id: `id${i}`,
      label: `key ${i}`,
    })),
  };
}

Deno.test("keys: a rested key is passed over until it wakes, per model; a refused one until reload", () => {
  const board = new Board();
  const p = provider([1, 1]);
  const now = Date.now();
  assert.deepEqual(keyTurns(board, p, "m", now).order.length, 2);
  restKey(board, p, 0, "m", 2000, 1000, now);
  const turns = keyTurns(board, p, "m", now);
  assert.deepEqual(turns.order, [1]);
  assert.equal(turns.wakes, now + 2000);
  // Another model of the same key is not limited.
  assert.equal(keyTurns(board, p, "other", now).order.length, 2);
  assert.equal(allResting(board, p, "m"), 0);
  restKey(board, p, 1, "m", null, 1000, now);
  assert.equal(allResting(board, p, "m"), now + 1000);
  // Without retry-after the rest doubles per consecutive rate limit.
  restKey(board, p, 1, "m", null, 1000, now);
  assert.equal(keyTurns(board, p, "m", now + 1500).order.includes(1), false);
  assert.equal(keyTurns(board, p, "m", now + 2001).order.length, 2);
  refuseKey(board, p, 0);
  assert.deepEqual(keyTurns(board, p, "x").order, [1]);
  restoreKeys(board);
  assert.equal(keyTurns(board, p, "x").order.length, 2);
});

Deno.test("circuit: opens on consecutive failures, half-opens after the cool-off for one probe", () => {
  const slot = new Board().slot("target:t");
  const t0 = 1_000_000;
  assert.equal(admit(slot, CIRCUIT, t0), "go");
  recordOutcome(slot, false, false, CIRCUIT, t0);
  recordOutcome(slot, false, false, CIRCUIT, t0);
  assert.equal(circuitState(slot, t0), "closed");
  recordOutcome(slot, false, false, CIRCUIT, t0);
  assert.equal(circuitState(slot, t0), "open");
  assert.equal(admit(slot, CIRCUIT, t0 + 500), "skip");
  assert.equal(circuitState(slot, t0 + 1001), "half-open");
  assert.equal(admit(slot, CIRCUIT, t0 + 1001), "probe");
  assert.equal(admit(slot, CIRCUIT, t0 + 1002), "skip", "one probe at a time");
  // The probe fails: open for another cool-off.
  recordOutcome(slot, false, true, CIRCUIT, t0 + 1003);
  assert.equal(circuitState(slot, t0 + 1500), "open");
  assert.equal(admit(slot, CIRCUIT, t0 + 2004), "probe");
  recordOutcome(slot, true, true, CIRCUIT, t0 + 2005);
  assert.equal(circuitState(slot, t0 + 2005), "closed");
});

Deno.test("circuit: opens when the error rate of the window passes the threshold", () => {
  const slot = new Board().slot("target:rate");
  const t0 = 5_000_000;
  // Alternating outcomes: never three failures in a row, half of ten calls failed.
  for (let i = 0; i < 9; i++) recordOutcome(slot, i % 2 === 1, false, CIRCUIT, t0);
  assert.equal(circuitState(slot, t0), "closed");
  recordOutcome(slot, false, false, CIRCUIT, t0);
  assert.equal(circuitState(slot, t0), "open");
});

Deno.test("limits: maxConcurrent places are shared and waited for; rpm books a minute", async () => {
  const board = new Board();
  const slot = board.slot("target:lim");
  const other = new Board(board.buffer).slot("target:lim");
  const a = await acquire(slot, { maxConcurrent: 2 }, 0);
  const b = await acquire(other, { maxConcurrent: 2 }, 0);
  assert.ok(!("lease" in a) && !("lease" in b));
  assert.deepEqual(
    await acquire(slot, { maxConcurrent: 2 }, 0),
    { lease: null, retryMs: 1000 },
    "the third call is refused",
  );
  const waiting = acquire(slot, { maxConcurrent: 2 }, 1000);
  setTimeout(() => a.release(), 30);
  const c = await waiting;
  assert.ok(!("lease" in c), "a freed place goes to the waiting call");
  b.release();
  c.release();
  const rpm = board.slot("target:rpm");
  for (let i = 0; i < 3; i++) assert.ok(!("lease" in await acquire(rpm, { rpm: 3 }, 0)));
  const fourth = await acquire(rpm, { rpm: 3 }, 0);
  assert.ok("lease" in fourth && fourth.retryMs > 19_000, "a fourth call waits for its 20 s");
});

Deno.test("attempts: bounded by count and by budget; retry-after read as seconds or a date", () => {
  const settings = {
    maxAttempts: 2,
    budgetMs: 1000,
    backoffMs: 10,
    retryOn: new Set(["5xx"] as const),
    cooldownMs: 1000,
    queueMs: 0,
    cacheAffinity: true,
    circuit: CIRCUIT,
  };
  const t0 = Date.now();
  const route = new CallRoute(settings, new Board());
  assert.ok(route.canStart(t0 + 5000), "the first attempt, whenever");
  route.start();
  assert.ok(route.canStart(t0 + 500));
  assert.ok(!route.canStart(Date.now() + 1001), "past the budget, counted from the call's start");
  route.start();
  const at = Date.now() + 600;
  assert.ok(route.headersMs(300_000, at) <= 400, "the second attempt ends with the budget");
  assert.ok(route.headersMs(300_000, at) > 390);
  assert.ok(!route.canStart(t0 + 700), "past the count");
  assert.ok(route.retries("5xx") && !route.retries("429") && route.retries("limited"));
  assert.equal(retryAfterMs("3"), 3000);
  assert.equal(retryAfterMs(new Date(Date.now() + 10_000).toUTCString())! > 8000, true);
  assert.equal(retryAfterMs("soon"), null);
  assert.equal(retryAfterMs(null), null);
});

Deno.test("config: keys as a list or with weights; deployments and fallbacks checked", () => {
  const env = (name: string) => ({ K1: "one", K2: "two" } as Record<string, string>)[name];
  const base = { defaultCatalog: false };
  const price = { input: 1, output: 2 };
  const config = buildConfig({
    ...base,
    providers: {
      a: {
        type: "openai",
        baseUrl: "http://x/v1",
        apiKey: ["env:K1", { key: "env:K2", weight: 3 }],
      },
      b: { type: "anthropic", baseUrl: "http://y", apiKey: ["env:MISSING", "lit"] },
    },
    models: {
      m: {
        deployments: [{ provider: "a", upstream: "up-a" }, { provider: "b", price: { input: 5 } }],
        price,
        fallbacks: ["n"],
      },
      n: { provider: "b", price },
    },
  }, env);
  const a = config.catalog.provider("a")!;
  assert.deepEqual(a.keys.map((k) => [k.secret, k.weight]), [["one", 1], ["two", 3]]);
  assert.ok(a.keys.every((k) => !k.label.includes(k.secret) && k.label.startsWith("key ")));
  assert.deepEqual(config.catalog.provider("b")!.keys.map((k) => k.secret), ["lit"]);
  assert.ok(config.notices.some((n) => n.includes("MISSING")));
  const m = config.catalog.resolve("m");
  assert.ok(m.ok);
  assert.deepEqual(m.model.route.targets.map((t) => t.name), ["a/up-a", "b/m"]);
  assert.equal(m.model.route.targets[1].prices!.input, 5e9);
  assert.deepEqual(m.model.route.fallbacks, ["n"]);
  assert.equal(config.routing.maxAttempts, 3);

  const refused = (models: unknown, message: RegExp) =>
    assert.throws(
      () =>
        buildConfig({
          ...base,
          providers: { a: { type: "openai", baseUrl: "http://x", apiKey: "k" } },
          models,
        }, env),
      (e: unknown) => e instanceof ConfigError && message.test(e.message),
    );
  refused({ m: { price } }, /needs either "provider" or "deployments"/);
  refused({ m: { provider: "a", deployments: [{ provider: "a" }], price } }, /not both/);
  refused(
    { m: { provider: "a", price, fallbacks: ["zz"] } },
    /fallbacks\[0\]: "zz" is not a model/,
  );
  refused({ m: { provider: "a", price, fallbacks: ["m"] } }, /cannot fall back to itself/);
  refused({ m: { deployments: [{ provider: "a" }] } }, /deployments\[0\]: has no price/);
  refused(
    {
      m: { provider: "a", price, contextFallback: "e" },
      e: { provider: "a", kind: "embedding", price },
    },
    /contextFallback: "e" is a embedding model/,
  );
});

Deno.test("a key is refused on the provider's own codes, never on text a client could have sent", () => {
  assert.equal(keyRefusal(401, ""), "key");
  assert.equal(keyRefusal(403, ""), "model");
  const gemini = {
    error: {
      code: 400,
      message: "API key not valid. Please pass a valid API key.",
      status: "INVALID_ARGUMENT",
      details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID" }],
    },
  };
  assert.equal(keyRefusal(400, JSON.stringify(gemini)), "key");
  assert.equal(
    keyRefusal(400, JSON.stringify({ code: "x", error: "Incorrect API key provided: xa***1234." })),
    "key",
  );
  // An upstream echoing the client's own fields or values.
  for (
    const echoed of [
      { error: { message: "Unrecognized request argument supplied: api_key_invalid", code: null } },
      { error: { code: 400, message: 'Unknown name "API_KEY_INVALID": Cannot find field.' } },
      { error: { message: "Invalid value 'revoked api key'", type: "invalid_request_error" } },
      { error: "revoked api key" },
    ]
  ) assert.equal(keyRefusal(400, JSON.stringify(echoed)), null, JSON.stringify(echoed));
  assert.equal(keyRefusal(400, "not json"), null);
  assert.equal(keyRefusal(404, ""), null);
});
