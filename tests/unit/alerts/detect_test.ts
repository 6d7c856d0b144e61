/**
 * The rules alerts are decided by (pure): thresholds reached in a budget row's own window (exact
 * past 2^53), windows long past left alone, a refusal as 100% only when the refused call would not
 * fit with nothing else in flight; the events' fields; the signature.
 */
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { budgetAlerts, type Check, Raised, refusalAlert } from "../../../src/alerts/detect.ts";
import { alertId, eventBody, parseAlertId } from "../../../src/alerts/events.ts";
import { signature } from "../../../src/alerts/sign.ts";
import { buildConfig } from "../../../src/config/load.ts";
import type { Alert, SpentBudget } from "../../../src/store/store.ts";

const JAN = Date.UTC(2031, 0, 1);
const FEB = Date.UTC(2031, 1, 1);
const settings = buildConfig({ alerts: { webhookUrl: "http://127.0.0.1:9/h" } }, () => undefined)
  .alerts;
const check: Check = { settings, zone: "UTC", now: JAN + 86_400_000 };

const row = (over: Partial<SpentBudget> = {}): SpentBudget => ({
  owner: "key",
  keyId: "key_a",
  keyName: "intern",
  accountId: 7,
  accountName: "acme",
  period: "month",
  amount: 10_000,
  spent: 0,
  held: 0,
  windowStart: JAN,
  ...over,
});

Deno.test("a budget's thresholds are reached by what its window settled, in that window", () => {
  assert.deepEqual(budgetAlerts(row({ spent: 4_999 }), check), []);
  const reached = budgetAlerts(row({ spent: 8_000 }), check);
  assert.deepEqual(reached.map((a) => a.threshold), [50, 80]);
  const [fifty] = reached;
  assert.deepEqual(
    [fifty.type, fifty.owner, fifty.period, fifty.windowStart, fifty.status, fifty.keyId],
    ["budget.threshold", "key:key_a", "month", JAN, "pending", "key_a"],
  );
  assert.deepEqual(fifty.payload, {
    account: "acme",
    key_id: "key_a",
    key_name: "intern",
    owner: "key",
    period: "month",
    threshold_percent: 50,
    limit_usd: "0.00001",
    limit_nanousd: 10_000,
    spent_usd: "0.000008",
    spent_nanousd: 8_000,
    window_start: new Date(JAN).toISOString(),
    resets_at: new Date(FEB).toISOString(),
    refused: false,
  });
  // An account's budget; a lifetime one never resets.
  const account = budgetAlerts(
    row({ owner: "account", keyId: null, keyName: null, period: "total", windowStart: 0 }),
    check,
  );
  assert.deepEqual(account, []);
  const [total] = budgetAlerts(
    row({ owner: "account", keyId: null, period: "total", windowStart: 0, spent: 5_000 }),
    check,
  );
  assert.deepEqual([total.owner, total.payload.resets_at, total.windowStart], [
    "account:7",
    null,
    0,
  ]);
  // Exact where a double is not: 2^53 + 2 of 2 * (2^53 + 2) is 50%, one less is not.
  const big = 2 ** 53 + 2;
  assert.equal(budgetAlerts(row({ amount: 2 * big, spent: big }), check).length, 1);
  assert.equal(budgetAlerts(row({ amount: 2 * big, spent: big - 2 }), check).length, 0);
  // Without a webhook, raised as unsent.
  const unsent = budgetAlerts(row({ spent: 10_000 }), {
    ...check,
    settings: { ...settings, webhookUrl: null },
  });
  assert.ok(unsent.every((a) => a.status === "unsent"));
});

Deno.test("a window that ended over an hour ago is past alerting about; one that just ended is not", () => {
  const spent = row({ spent: 9_000 });
  assert.equal(budgetAlerts(spent, { ...check, now: FEB + 3_599_000 }).length, 2);
  assert.equal(budgetAlerts(spent, { ...check, now: FEB + 3_601_000 }).length, 0);
});

Deno.test("a refusal is 100% only when the refused call would not fit with nothing else in flight", () => {
  const note = (room: number) => ({
    keyId: "key_a",
    accountId: 7,
    refused: { owner: "key" as const, period: "month" as const, at: JAN + 5_000, room },
  });
  const rows = [row({ spent: 9_700 }), row({ owner: "account", keyId: null, spent: 9_700 })];
  // Refused with 300 left and nothing held: it still cannot fit.
  const hundred = refusalAlert(rows, note(300), check)!;
  assert.deepEqual([hundred.threshold, hundred.owner, hundred.payload.refused], [
    100,
    "key:key_a",
    true,
  ]);
  // Refused with 100 of room while other calls held 200: they may settle for less.
  assert.equal(refusalAlert(rows, note(100), check), null);
  // Another window (the row's spend is of January): nothing settled there yet.
  const march = { ...note(10_000), refused: { ...note(10_000).refused, at: Date.UTC(2031, 2, 2) } };
  const fresh = refusalAlert(rows, march, check)!;
  assert.deepEqual([fresh.windowStart, fresh.payload.spent_nanousd], [Date.UTC(2031, 2, 1), 0]);
  // No 100 among the thresholds: nothing.
  assert.equal(
    refusalAlert(rows, note(300), {
      ...check,
      settings: { ...settings, budgetThresholds: [50, 80] },
    }),
    null,
  );
});

Deno.test("what a process knows was raised is remembered, up to a bound", () => {
  const known = new Raised(2);
  const [a, b] = budgetAlerts(row({ spent: 8_000 }), check);
  const [c] = budgetAlerts(row({ spent: 5_000, windowStart: FEB }), check);
  known.add(a);
  known.add(b);
  assert.ok(known.has(a) && known.has(b) && !known.has(c));
  known.add(c);
  assert.ok(known.has(c) && !known.has(a), "emptied when full");
});

Deno.test("an event's body and id, and its signature: HMAC-SHA256 of `<t>.<body>`", () => {
  const [alert] = budgetAlerts(row({ spent: 6_000 }), check);
  const stored: Alert = {
    ...alert,
    id: 42,
    status: "pending",
    attempts: 0,
    nextAttemptAt: alert.createdAt,
    lastAttemptAt: null,
    lastError: null,
    deliveredAt: null,
  };
  const body = eventBody(stored);
  const event = JSON.parse(body);
  assert.deepEqual(Object.keys(event).slice(0, 4), ["id", "type", "created_at", "account"]);
  assert.equal(event.id, "alert_42");
  assert.equal(event.created_at, new Date(check.now).toISOString());
  assert.equal(
    event.message,
    "Key intern (account acme): monthly budget at 50% (0.000006 of 0.00001 USD spent); it resets at 2031-02-01T00:00:00.000Z.",
  );
  assert.deepEqual([alertId(42), parseAlertId("alert_42"), parseAlertId("42")], [
    "alert_42",
    42,
    42,
  ]);
  assert.equal(parseAlertId("alert_x"), null);
  const header = signature("s3cret-of-sixteen!", body, 1_764_000_000);
  const hex = createHmac("sha256", "s3cret-of-sixteen!").update(`1764000000.${body}`).digest("hex");
  assert.equal(header, `t=1764000000,v1=${hex}`);
});
