/**
 * A dead webhook does not slow calls, measured: two gateways raise the same alerts as they serve
 * the same calls — one with no webhook, one whose webhook accepts connections and never answers
 * (every delivery waits out its timeout, four at a time, and is retried soon after, so deliveries
 * hang throughout) — and their calls,
 * interleaved one for one so that the machine's load falls on both alike, take the same time.
 */
import assert from "node:assert/strict";
import { eventually, type Stack, startStack } from "./helpers/setup.ts";

const ADMIN = "latency-admin-token-0123456789";
const KEYS = 10;
const CALLS = 1000;

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

/** `eventually` for a condition read from memory. */
const until = (check: () => boolean, ms?: number) => eventually(() => Promise.resolve(check()), ms);

/** Accepts connections and never answers (nor closes them until the test ends). */
function deadWebhook() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    try {
      for await (const conn of listener) held.push(conn);
    } catch { /* closed */ }
  })();
  return {
    url: `http://127.0.0.1:${listener.addr.port}/hook`,
    held,
    async close() {
      listener.close();
      await accepting;
      for (const conn of held) conn.close();
    },
  };
}

/**
 * Alerts for everything: every account is below the balance amount (one alert each), and the
 * keys' budgets pass a threshold every few calls.
 */
const alerts = {
  budgetThresholds: [10, 20, 30, 40, 50, 60, 70, 80, 90, 100],
  balanceBelowUsd: "1000",
  checkIntervalMs: 100,
};

async function keysOf(stack: Stack): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < KEYS; i++) {
    const res = await fetch(`${stack.gateway.url}/admin/api/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({
        account: `latency-${i}`,
        credit_usd: "10",
        rpm: 0,
        // About 100 calls each (some 80 microdollars a call) pass 8 of the 10 thresholds.
        budgets: [{ usd: "0.01", period: "day" }],
      }),
    });
    const body = await res.json();
    assert.equal(res.status, 201, JSON.stringify(body));
    keys.push(body.key);
  }
  return keys;
}

/** One call's time, in ms (a whole answer read). */
async function timed(stack: Stack, key: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${stack.gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-test", input: "hi", max_output_tokens: 32 }),
  });
  const text = await res.text();
  const ms = performance.now() - started;
  assert.equal(res.status, 200, text);
  return ms;
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

async function alertsOf(stack: Stack): Promise<Json[]> {
  const res = await fetch(`${stack.gateway.url}/admin/api/alerts?limit=500`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  return (await res.json()).data;
}

Deno.test("a dead webhook does not slow calls (measured against no webhook)", async () => {
  const dead = deadWebhook();
  const env = { SWITCHYARD_ADMIN_TOKEN: ADMIN };
  const quiet = await startStack({ env, alerts });
  const stuck = await startStack({
    env,
    alerts: {
      ...alerts,
      webhookUrl: dead.url,
      timeoutMs: 1000,
      retryDelaysMs: Array.from({ length: 10 }, () => 100),
    },
  });
  try {
    const quietKeys = await keysOf(quiet);
    const stuckKeys = await keysOf(stuck);
    // The dead webhook is busy before the measurement starts: deliveries wait on it.
    await until(() => dead.held.length >= 4, 5_000);
    for (let i = 0; i < 20; i++) {
      await timed(quiet, quietKeys[i % KEYS]);
      await timed(stuck, stuckKeys[i % KEYS]);
    }
    const connectionsBefore = dead.held.length;
    const measuring = performance.now();
    const times = { quiet: [] as number[], stuck: [] as number[] };
    for (let i = 0; i < CALLS; i++) {
      // Alternate which goes first, so neither always follows the other.
      const order = i % 2 ? ["quiet", "stuck"] as const : ["stuck", "quiet"] as const;
      for (const which of order) {
        const stack = which === "quiet" ? quiet : stuck;
        const keys = which === "quiet" ? quietKeys : stuckKeys;
        times[which].push(await timed(stack, keys[i % KEYS]));
      }
    }
    const seconds = (performance.now() - measuring) / 1000;
    const connections = dead.held.length - connectionsBefore;
    const [quietAlerts, stuckAlerts] = [await alertsOf(quiet), await alertsOf(stuck)];
    const attempts = stuckAlerts.reduce((n, a) => n + a.attempts, 0);
    const summary = (list: number[]) => {
      const sorted = [...list].sort((a, b) => a - b);
      return {
        median: +quantile(sorted, 0.5).toFixed(2),
        p90: +quantile(sorted, 0.9).toFixed(2),
        p99: +quantile(sorted, 0.99).toFixed(2),
        mean: +(list.reduce((a, b) => a + b, 0) / list.length).toFixed(2),
      };
    };
    const report = {
      calls: CALLS,
      no_webhook_ms: summary(times.quiet),
      dead_webhook_ms: summary(times.stuck),
      seconds: +seconds.toFixed(1),
      alerts_raised: { no_webhook: quietAlerts.length, dead_webhook: stuckAlerts.length },
      deliveries_started_during_the_calls: connections,
      deliveries_timed_out_so_far: attempts,
    };
    console.log(JSON.stringify(report, null, 2));
    // The same alerts were raised on both (and none could be delivered on the dead one).
    assert.ok(stuckAlerts.length >= KEYS * 2, `alerts raised: ${stuckAlerts.length}`);
    assert.ok(Math.abs(stuckAlerts.length - quietAlerts.length) <= KEYS, JSON.stringify(report));
    assert.ok(quietAlerts.every((a) => a.status === "unsent"));
    // None delivered: still being tried, or — on a run slow enough for an alert's eleven attempts
    // to pass — given up.
    assert.ok(
      stuckAlerts.every((a) => a.status === "pending" || a.status === "failed"),
      "none delivered",
    );
    assert.ok(stuckAlerts.some((a) => a.status === "pending"), "still being tried");
    // Deliveries hung on the dead webhook throughout: four at a time, each for its timeout (1 s),
    // then again 100 ms later (with slack for a loaded machine).
    assert.ok(connections >= 4 * Math.floor(seconds / 1.5), JSON.stringify(report));
    // No material difference: within 25% (and 2 ms) at the median, 50% (and 5 ms) at p90.
    const q = report.no_webhook_ms, s = report.dead_webhook_ms;
    assert.ok(s.median <= q.median * 1.25 + 2, JSON.stringify(report));
    assert.ok(s.p90 <= q.p90 * 1.5 + 5, JSON.stringify(report));
  } finally {
    await Promise.all([quiet.stop(), stuck.stop()]);
    await dead.close();
  }
});
