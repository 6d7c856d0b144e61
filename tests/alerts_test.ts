/**
 * Alerts through the real gateway, to a webhook receiver on loopback: each budget threshold
 * (50, 80, 100 % of a key's budget, and of its account's) arrives once per window, signed — and
 * once again in the next window (the test clock); a balance below the configured amount once per
 * episode (a top-up starts afresh); a key about to expire once; a delivery that fails is retried
 * with the same id and body, and one that keeps failing is given up (logged, never the secret);
 * the admin API lists them with their delivery state; a delivery cut by a crash is made after the
 * restart.
 */
import assert from "node:assert/strict";
import { createHmac, timingSafeEqual } from "node:crypto";
import { eventually, type Stack, startStack } from "./helpers/setup.ts";

const ADMIN = "alerts-admin-token-0123456789";
const SECRET = "alerts-webhook-secret-0123456789";
const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

/** `eventually` for a condition read from memory. */
const until = (check: () => boolean, ms?: number) => eventually(() => Promise.resolve(check()), ms);

/** One POST the receiver got. */
interface Delivery {
  headers: Headers;
  body: string;
  event: Json;
}

/**
 * The webhook: records every delivery; answers 500 to the first delivery of each event of an
 * account named `flaky-…` and 503 to every one of `broken-…`, 200 otherwise.
 */
const received: Delivery[] = [];
const failedOnce = new Set<string>();
/** Deliveries for accounts named `resume-…` wait for this before they are answered. */
let resumeGate = Promise.withResolvers<void>();
const receiver = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
  const body = await req.text();
  const event = JSON.parse(body);
  received.push({ headers: req.headers, body, event });
  const account = String(event.account);
  if (account.startsWith("resume-")) await resumeGate.promise;
  if (account.startsWith("broken-")) return new Response("down", { status: 503 });
  if (account.startsWith("flaky-") && !failedOnce.has(event.id)) {
    failedOnce.add(event.id);
    return new Response("not now", { status: 500 });
  }
  return new Response("ok");
});

const stack: Stack = await startStack({
  env: {
    SWITCHYARD_TEST_HOOKS: "1",
    SWITCHYARD_ADMIN_TOKEN: ADMIN,
    ALERT_SECRET: SECRET,
  },
  alerts: {
    webhookUrl: `http://127.0.0.1:${receiver.addr.port}/hooks/switchyard`,
    secret: "env:ALERT_SECRET",
    budgetThresholds: [50, 80, 100],
    balanceBelowUsd: "0.05",
    expiringWithinHours: 72,
    checkIntervalMs: 100,
    retryDelaysMs: [50, 100],
    timeoutMs: 2000,
  },
});
const { gateway } = stack;
Deno.test.afterAll(async () => {
  await stack.stop();
  await receiver.shutdown();
});

/**
 * Verifies `x-switchyard-signature` as a receiver should (the README's recipe): HMAC-SHA256 of
 * `<t>.<raw body>` with the secret, compared in constant time, `t` within five minutes.
 */
function verify(header: string | null, body: string, secret: string): boolean {
  if (!header) return false;
  const parts = Object.fromEntries(header.split(",").map((part) => part.split("=", 2)));
  const expected = createHmac("sha256", secret).update(`${parts.t}.${body}`).digest("hex");
  const given = String(parts.v1 ?? "");
  return given.length === expected.length &&
    timingSafeEqual(Buffer.from(given), Buffer.from(expected)) &&
    Math.abs(Date.now() / 1000 - Number(parts.t)) < 300;
}

async function keyWith(account: string, settings: Json, credit = "10"): Promise<Json> {
  const res = await fetch(`${gateway.url}/admin/api/keys`, {
    method: "POST",
    headers: admin,
    body: JSON.stringify({ account, credit_usd: credit, rpm: 0, ...settings }),
  });
  const body = await res.json();
  assert.equal(res.status, 201, JSON.stringify(body));
  return body;
}

async function adminCall(method: string, path: string, body?: Json): Promise<Json> {
  const res = await fetch(`${gateway.url}/admin/api${path}`, {
    method,
    headers: admin,
    body: body && JSON.stringify(body),
  });
  const json = await res.json();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

function call(key: string, at?: number, words = 40) {
  return fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      ...(at === undefined ? {} : { "x-switchyard-test-now": String(at) }),
    },
    body: JSON.stringify({
      model: "gpt-test",
      input: `hello [[emulate words=${words}]]`,
      max_output_tokens: words * 2,
    }),
  });
}

const eventsOf = (account: string, type?: string) =>
  received.filter((d) => d.event.account === account && (!type || d.event.type === type));

/** The key's own budget as `GET /v1/usage` shows it at the instant `at`. */
async function keyBudget(key: string, at: number): Promise<Json> {
  const res = await fetch(`${gateway.url}/v1/usage`, {
    headers: { authorization: `Bearer ${key}`, "x-switchyard-test-now": String(at) },
  });
  assert.equal(res.status, 200);
  return (await res.json()).budgets.find((b: Json) => b.owner === "key");
}

/**
 * Calls at the instant `at` until the key's budget refuses one; how many were answered. With
 * `watch`, each threshold the key's spend passes is awaited before the next call: its alert must
 * come (soon, not at a sweep much later) and say what the window had spent then.
 */
async function spendUntilRefused(
  key: string,
  at: number,
  watch?: { account: string; thresholds: number[] },
): Promise<number> {
  const window = new Date(Date.UTC(new Date(at).getUTCFullYear(), new Date(at).getUTCMonth(), 1))
    .toISOString();
  const keyAlert = (percent: number) =>
    eventsOf(watch!.account, "budget.threshold").find((d) =>
      d.event.owner === "key" && d.event.window_start === window &&
      d.event.threshold_percent === percent
    );
  let passed = 0;
  for (let answered = 0; answered < 200; answered++) {
    const res = await call(key, at);
    if (res.status === 429) {
      assert.equal((await res.json()).error.code, "budget_exceeded");
      return answered;
    }
    if (res.status !== 200) throw new Error(`${res.status}: ${await res.text()}`);
    await res.body?.cancel();
    if (!watch) continue;
    const budget = await keyBudget(key, at);
    for (const percent of watch.thresholds.slice(passed)) {
      if (budget.spent_nanousd * 100 < budget.limit_nanousd * percent) break;
      passed++;
      await until(() => keyAlert(percent) !== undefined, 5_000);
      assert.equal(keyAlert(percent)!.event.spent_nanousd, budget.spent_nanousd);
    }
  }
  throw new Error("the budget never refused a call");
}

Deno.test("each budget threshold arrives once per window, signed; again once in the next window", async () => {
  const account = "budget-alerts";
  const created = await keyWith(account, {
    name: "intern",
    budgets: [{ usd: "0.01", period: "month" }],
  });
  await adminCall("PATCH", `/accounts/${account}`, {
    budgets: [{ usd: "0.015", period: "month" }],
  });
  const january = Date.UTC(2031, 0, 1);
  const february = Date.UTC(2031, 1, 1);
  const windows = [january, february];
  for (const start of windows) {
    // The first window one threshold at a time; the second as fast as calls go.
    const watch = start === january ? { account, thresholds: [50, 80, 100] } : undefined;
    const answered = await spendUntilRefused(created.key, start + 86_400_000, watch);
    assert.ok(answered >= 3, `answered ${answered} calls in the window`);
    const window = new Date(start).toISOString();
    await until(() => {
      const thresholds = eventsOf(account, "budget.threshold")
        .filter((d) => d.event.owner === "key" && d.event.window_start === window)
        .map((d) => d.event.threshold_percent);
      return [50, 80, 100].every((t) => thresholds.includes(t));
    }, 10_000);
    // The account's budget of 0.015 USD: the key's 0.01 is past 50% of it.
    await until(
      () =>
        eventsOf(account).some((d) =>
          d.event.owner === "account" && d.event.window_start === window &&
          d.event.threshold_percent === 50
        ),
      10_000,
    );
  }

  const events = eventsOf(account, "budget.threshold");
  // Exactly once: one delivery per (owner, window, threshold), each its own id.
  const seen = events.map((d) =>
    `${d.event.owner} ${d.event.window_start} ${d.event.threshold_percent}`
  );
  assert.equal(new Set(seen).size, seen.length, `duplicates in ${seen.join(", ")}`);
  assert.equal(new Set(events.map((d) => d.event.id)).size, events.length);
  const keyEvents = events.filter((d) => d.event.owner === "key");
  assert.deepEqual(
    keyEvents.map((d) => `${d.event.window_start} ${d.event.threshold_percent}`).sort(),
    windows.flatMap((w) => [50, 80, 100].map((t) => `${new Date(w).toISOString()} ${t}`)).sort(),
  );
  for (const d of events) {
    assert.ok(verify(d.headers.get("x-switchyard-signature"), d.body, SECRET), d.body);
    assert.ok(!verify(d.headers.get("x-switchyard-signature"), d.body, "another-secret-0123456"));
    assert.equal(d.headers.get("content-type"), "application/json");
    assert.equal(d.headers.get("x-switchyard-event"), "budget.threshold");
    assert.equal(d.headers.get("x-switchyard-delivery"), d.event.id);
    assert.match(d.event.id, /^alert_\d+$/);
  }
  // The event's fields: what reached which budget, in which window, until when.
  const hundred =
    keyEvents.find((d) =>
      d.event.threshold_percent === 100 && d.event.window_start === new Date(january).toISOString()
    )!.event;
  assert.equal(hundred.key_id, created.id);
  assert.equal(hundred.key_name, "intern");
  assert.equal(hundred.period, "month");
  assert.equal(hundred.limit_usd, "0.01");
  assert.equal(hundred.limit_nanousd, 10_000_000);
  assert.equal(hundred.resets_at, new Date(february).toISOString());
  assert.ok(hundred.spent_nanousd > 8_000_000 && hundred.spent_nanousd <= 10_000_000);
  assert.equal(hundred.refused, hundred.spent_nanousd < 10_000_000, "a refusal reaches 100%");
  const fifty = keyEvents.find((d) => d.event.threshold_percent === 50)!.event;
  assert.ok(fifty.spent_nanousd >= 5_000_000, JSON.stringify(fifty));
  assert.equal(fifty.refused, false);
  assert.ok(!Number.isNaN(Date.parse(fifty.created_at)));
  assert.match(
    hundred.message,
    /^Key intern \(account budget-alerts\): monthly budget at 100% \(0\.\d+ of 0\.01 USD spent; a call it could not cover was refused\); it resets at 2031-02-01T00:00:00\.000Z\.$/,
  );

  // The admin API: newest first, each the event as delivered with its delivery state beside.
  // (Each is marked delivered once the webhook's answer is in: a moment after it got the POST.)
  let list: Json = {};
  await eventually(async () => {
    list = await adminCall("GET", `/alerts?account=${account}&limit=100`);
    return list.data.every((a: Json) => a.status === "delivered");
  }, 5_000);
  assert.equal(list.data.length, events.length);
  assert.ok(list.data.every((a: Json) => a.attempts === 1));
  const ids = list.data.map((a: Json) => Number(a.id.slice(6)));
  assert.deepEqual(ids, [...ids].sort((a, b) => b - a), "newest first");
  const listed = list.data.find((a: Json) => a.id === hundred.id);
  const { status, attempts, next_attempt_at, last_attempt_at, last_error, delivered_at, ...event } =
    listed;
  assert.deepEqual(event, hundred);
  assert.deepEqual([status, attempts, next_attempt_at, last_error], ["delivered", 1, null, null]);
  assert.equal(last_attempt_at, delivered_at);
  assert.ok(Date.parse(delivered_at) >= Date.parse(listed.created_at));
  const page = await adminCall("GET", `/alerts?account=${account}&limit=2`);
  assert.equal(page.data.length, 2);
  const next = await adminCall("GET", `/alerts?account=${account}&limit=2&before=${page.next}`);
  assert.equal(next.data[0].id, list.data[2].id);
  // Raised alerts are logged, one line each (written within the log's 10 ms batch).
  const raised = () =>
    gateway.logs.filter((l) => l.includes('"alert raised"') && l.includes(account));
  await until(() => raised().length >= events.length, 5_000);
  assert.equal(raised().length, events.length);
});

Deno.test("a balance below the amount alerts once per episode; a top-up starts afresh", async () => {
  const account = "low-balance";
  const { key } = await keyWith(account, {}, "0.06");
  // Each call costs a few millidollars (200 words of output at 15 USD per million tokens).
  const balance = async () =>
    (await (await fetch(`${gateway.url}/v1/usage`, {
      headers: { authorization: `Bearer ${key}` },
    })).json()).balance_nanousd;
  let calls = 0;
  for (; calls < 20 && await balance() >= 50_000_000; calls++) {
    assert.equal(eventsOf(account).length, 0, "nothing while the balance is above");
    const res = await call(key, undefined, 200);
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
  assert.ok(calls > 1 && calls < 20, `${calls} calls`);
  await until(() => eventsOf(account, "balance.low").length === 1, 5_000);
  const [first] = eventsOf(account, "balance.low");
  assert.equal(first.event.threshold_usd, "0.05");
  assert.ok(first.event.balance_nanousd < 50_000_000, JSON.stringify(first.event));
  assert.ok(verify(first.headers.get("x-switchyard-signature"), first.body, SECRET));
  assert.equal(first.headers.get("x-switchyard-event"), "balance.low");
  assert.match(
    first.event.message,
    /^Account low-balance: balance 0\.0\d+ USD, below 0\.05 USD\.$/,
  );
  // A top-up above the amount, then a debit below it again: a new episode, a new alert.
  await adminCall("POST", `/accounts/${account}/credit`, { usd: "1" });
  await adminCall("POST", `/accounts/${account}/credit`, { usd: "-1" });
  await until(() => eventsOf(account, "balance.low").length === 2, 5_000);
  const [, second] = eventsOf(account, "balance.low");
  assert.ok(Date.parse(second.event.since) > Date.parse(first.event.since));
  // Spending on within the episode raises nothing more.
  const res = await call(key, undefined, 10);
  assert.equal(res.status, 200);
  await res.body?.cancel();
  const list = await adminCall("GET", `/alerts?account=${account}`);
  assert.equal(list.data.length, 2);
});

Deno.test("a key about to expire alerts once; one expiring later than the span does not", async () => {
  const account = "expiring-keys";
  const later = await keyWith(account, { expires_in: "100h" });
  const soon = await keyWith(account, { name: "temp", expires_in: "24h" });
  await until(() => eventsOf(account, "key.expiring").length > 0, 5_000);
  // The later key was there for every sweep that saw the sooner one.
  const [event] = eventsOf(account, "key.expiring");
  assert.equal(event.event.key_id, soon.id);
  assert.equal(event.event.key_name, "temp");
  assert.equal(
    event.event.message,
    `Key temp (account expiring-keys) expires at ${event.event.expires_at}.`,
  );
  const view = await adminCall("GET", `/keys/${soon.id}`);
  assert.equal(event.event.expires_at, view.expires_at);
  assert.ok(verify(event.headers.get("x-switchyard-signature"), event.body, SECRET));
  const listed = await adminCall("GET", `/alerts?account=${account}`);
  assert.deepEqual(listed.data.map((a: Json) => a.key_id), [soon.id]);
  assert.notEqual(listed.data[0].key_id, later.id);
});

Deno.test("a failed delivery is retried with the same id and body; one that keeps failing is given up", async () => {
  const flaky = await keyWith("flaky-hook", { expires_in: "1h" });
  await eventually(async () => {
    const list = await adminCall("GET", "/alerts?account=flaky-hook");
    return list.data[0]?.status === "delivered";
  }, 5_000);
  const tries = eventsOf("flaky-hook");
  assert.equal(tries.length, 2, "a 500, then a 200");
  assert.equal(tries[0].body, tries[1].body, "the same event, byte for byte");
  assert.equal(
    tries[0].headers.get("x-switchyard-delivery"),
    tries[1].headers.get(
      "x-switchyard-delivery",
    ),
  );
  for (const t of tries) assert.ok(verify(t.headers.get("x-switchyard-signature"), t.body, SECRET));
  const [delivered] = (await adminCall("GET", "/alerts?account=flaky-hook")).data;
  assert.deepEqual([delivered.attempts, delivered.key_id], [2, flaky.id]);
  assert.ok(delivered.delivered_at);

  await keyWith("broken-hook", { expires_in: "1h" });
  await eventually(async () => {
    const list = await adminCall("GET", "/alerts?account=broken-hook");
    return list.data[0]?.status === "failed";
  }, 5_000);
  const [failed] = (await adminCall("GET", "/alerts?account=broken-hook")).data;
  assert.equal(failed.attempts, 3, "the first try and the two retries configured");
  assert.equal(failed.last_error, "HTTP 503");
  assert.equal(failed.next_attempt_at, null);
  assert.equal(eventsOf("broken-hook").length, 3);
  await until(() =>
    gateway.errors.some((l) =>
      l.includes("alert delivery failed: given up") && l.includes(failed.id)
    )
  );
  const retries = gateway.logs.filter((l) =>
    l.includes("alert delivery failed: will retry") && l.includes(failed.id)
  );
  assert.equal(retries.length, 2);
  for (const line of [...gateway.logs, ...gateway.errors]) {
    assert.ok(!line.includes(SECRET), "the secret is never logged");
    assert.ok(!line.includes("/hooks/switchyard"), "nor the webhook's address");
  }
});

Deno.test("the admin API's alerts need the admin token and check their parameters", async () => {
  const list = (query: string, headers: Record<string, string> = admin) =>
    fetch(`${gateway.url}/admin/api/alerts${query}`, { headers });
  const none = await list("", {});
  assert.equal(none.status, 401);
  await none.body?.cancel();
  for (const query of ["?limit=0", "?limit=501", "?limit=x", "?before=nope"]) {
    const res = await list(query);
    assert.equal(res.status, 400, query);
    assert.match((await res.json()).error.message, /Invalid '(limit|before)'/);
  }
  const unknown = await list("?account=nobody-here");
  assert.equal(unknown.status, 404);
  await unknown.body?.cancel();
  const empty = await list("?before=alert_1");
  assert.deepEqual(await empty.json(), { object: "list", data: [], next: null });
});

Deno.test("with serving threads, the main thread hears of their calls: alerts follow them, not the sweep", async () => {
  // The sweep runs at startup and then once a minute: an alert within seconds of a call can only
  // come from the threads' notes to the main thread.
  const threaded = await startStack({
    workers: 2,
    env: { SWITCHYARD_ADMIN_TOKEN: ADMIN, ALERT_SECRET: SECRET },
    alerts: {
      webhookUrl: `http://127.0.0.1:${receiver.addr.port}/hooks/switchyard`,
      secret: "env:ALERT_SECRET",
      budgetThresholds: [50, 100],
      checkIntervalMs: 60_000,
    },
  });
  try {
    const res = await fetch(`${threaded.gateway.url}/admin/api/keys`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({
        account: "threaded",
        credit_usd: "10",
        rpm: 0,
        budgets: [{ usd: "0.004", period: "day" }],
      }),
    });
    const { key } = await res.json();
    // Several connections at once, so both threads serve calls; some are refused while others
    // hold the budget (those say nothing of 100%), until none fits with nothing in flight. Each
    // call on a connection of its own (none kept idle): the kernel gives each new connection to
    // one of the threads, and four kept-alive ones could all have gone to the same.
    const fresh = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
    let rounds = 0;
    for (; rounds < 40; rounds++) {
      const answers = await Promise.all(Array.from({ length: 4 }, async () => {
        const answer = await fetch(`${threaded.gateway.url}/v1/responses`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt-test", input: "hi", max_output_tokens: 64 }),
          client: fresh,
        });
        await answer.body?.cancel();
        return answer.status;
      }));
      assert.ok(answers.every((s) => s === 200 || s === 429), String(answers));
      if (answers.every((s) => s === 429)) break;
    }
    assert.ok(rounds < 40, "the budget came to refuse every call");
    await until(() => {
      const percents = eventsOf("threaded").map((d) => d.event.threshold_percent).sort();
      return percents.join() === "100,50";
    }, 5_000);
    const hundred = eventsOf("threaded").find((d) => d.event.threshold_percent === 100)!.event;
    assert.equal(hundred.refused, true);
    assert.ok(hundred.spent_nanousd > 3_000_000, `spent ${hundred.spent_nanousd} of 4000000`);
    const workers = new Set(
      threaded.gateway.logs.filter((l) => l.includes('"path":"/v1/responses"')).map((l) =>
        JSON.parse(l).worker
      ),
    );
    assert.equal(workers.size, 2, "both threads served calls");
    fresh.close();
  } finally {
    await threaded.stop();
  }
});

Deno.test("a delivery cut by a crash is made after the restart, with the same id", async () => {
  const crashing = await startStack({
    env: { SWITCHYARD_ADMIN_TOKEN: ADMIN, ALERT_SECRET: SECRET },
    alerts: {
      webhookUrl: `http://127.0.0.1:${receiver.addr.port}/hooks/switchyard`,
      secret: "env:ALERT_SECRET",
      checkIntervalMs: 100,
      timeoutMs: 60_000,
    },
  });
  try {
    const res = await fetch(`${crashing.gateway.url}/admin/api/keys`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ account: "resume-after-crash", expires_in: "2h" }),
    });
    assert.equal(res.status, 201);
    await res.body?.cancel();
    // The webhook holds the first delivery; the gateway dies meanwhile.
    await until(() => eventsOf("resume-after-crash").length === 1, 5_000);
    await crashing.gateway.crash();
    resumeGate.resolve();
    const restarted = await crashing.restart();
    await until(() => eventsOf("resume-after-crash").length === 2, 5_000);
    const [cut, made] = eventsOf("resume-after-crash");
    assert.equal(cut.body, made.body, "the same event");
    assert.ok(verify(made.headers.get("x-switchyard-signature"), made.body, SECRET));
    await eventually(async () => {
      const list = await (await fetch(`${restarted.url}/admin/api/alerts`, { headers: admin }))
        .json();
      return list.data.length === 1 && list.data[0].status === "delivered";
    }, 5_000);
  } finally {
    resumeGate = Promise.withResolvers<void>();
    await crashing.stop();
  }
});
