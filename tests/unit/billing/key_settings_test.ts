/**
 * The pure parts of key limits: model lists, address allowlists, the settings an operator gives
 * (budgets, expiry, metadata), and the decision a limited hold is taken on.
 */
import assert from "node:assert/strict";
import { allows, matchesPattern, mayCall } from "../../../src/auth/model_access.ts";
import { addressAllowed, parseRange } from "../../../src/auth/ip_allow.ts";
import {
  budgetsFromText,
  expiryOf,
  keyLimitsAfter,
  keyPatchOf,
  metadataFromText,
  OperatorError,
} from "../../../src/billing/key_settings.ts";
import { planHold, settledBudget, utcWindows } from "../../../src/store/limits.ts";

Deno.test("model lists: ids and * patterns, deny over allow, key and account both", () => {
  assert.ok(matchesPattern("claude-*", "claude-haiku-4-5"));
  assert.ok(matchesPattern("*-mini", "gpt-5-mini"));
  assert.ok(!matchesPattern("claude-*", "xclaude-haiku"));
  assert.ok(matchesPattern("gpt-5.4", "gpt-5.4") && !matchesPattern("gpt-5.4", "gpt-544"));
  assert.ok(matchesPattern("a+b(c)*", "a+b(c)d"), "regex characters are literal");
  assert.ok(allows(undefined, "anything"));
  assert.ok(allows({ allow: ["gpt-5-mini", "claude-haiku-*"] }, "claude-haiku-4-5"));
  assert.ok(!allows({ allow: ["gpt-5-mini", "claude-haiku-*"] }, "claude-opus-4"));
  assert.ok(!allows({ allow: ["claude-*"], deny: ["claude-opus-*"] }, "claude-opus-4"));
  assert.ok(!allows({ deny: ["*"] }, "gpt-5"));
  assert.ok(mayCall({ allow: ["gpt-*"] }, { deny: ["gpt-5"] }, "gpt-5-mini"));
  assert.ok(!mayCall({ allow: ["gpt-*"] }, { deny: ["gpt-5"] }, "gpt-5"));
  assert.ok(!mayCall(undefined, { allow: ["claude-*"] }, "gpt-5"), "the account's list binds too");
});

Deno.test("address allowlists: IPv4, IPv6, CIDR ranges, mapped addresses", () => {
  assert.ok(addressAllowed(["10.0.0.0/8"], "10.1.2.3"));
  assert.ok(!addressAllowed(["10.0.0.0/8"], "11.0.0.1"));
  assert.ok(addressAllowed(["192.0.2.7"], "::ffff:192.0.2.7"), "a dual-stack socket's form");
  assert.ok(addressAllowed(["2001:db8::/32"], "2001:db8:1::5"));
  assert.ok(!addressAllowed(["2001:db8::/32"], "2001:db9::1"));
  assert.ok(addressAllowed(["::1"], "::1") && !addressAllowed(["::1"], "127.0.0.1"));
  assert.ok(addressAllowed(["172.16.0.0/12"], "172.31.255.255"));
  assert.ok(!addressAllowed(["172.16.0.0/12"], "172.32.0.0"));
  assert.ok(addressAllowed(["0.0.0.0/0"], "203.0.113.9"));
  assert.ok(!addressAllowed(["10.0.0.0/8"], undefined), "no address: not allowed");
  for (const bad of ["300.1.1.1", "10.0.0.0/33", "1.2.3", "::g", "1::2::3", "10.0.0.0/-1", ""]) {
    assert.equal(parseRange(bad), null, bad);
  }
});

Deno.test("settings: budgets, expiry, metadata and limits are read exactly, and refused with a reason", () => {
  assert.deepEqual(budgetsFromText(["20/month", "5/5h"]), [
    { usd: "20", period: "month" },
    { usd: "5", period: "5h" },
  ]);
  assert.equal(budgetsFromText(["none"]), null);
  assert.throws(() => budgetsFromText(["20/fortnight"]), OperatorError);
  assert.throws(() => budgetsFromText(["-5/day"]), OperatorError);
  const limits = keyLimitsAfter({}, {
    budgets: [{ usd: "20", period: "month" }, { usd: "0.000000001", period: "day" }],
    models: ["gpt-5-mini", "claude-haiku-*"],
    tpm: 100_000,
    maxConcurrent: 4,
    ips: ["10.0.0.0/8"],
  });
  assert.deepEqual(limits, {
    budgets: [{ period: "month", amount: 20_000_000_000 }, { period: "day", amount: 1 }],
    models: { allow: ["gpt-5-mini", "claude-haiku-*"] },
    tpm: 100_000,
    maxConcurrent: 4,
    ips: ["10.0.0.0/8"],
  });
  assert.throws(
    () =>
      keyLimitsAfter({}, { budgets: [{ usd: "1", period: "day" }, { usd: "2", period: "daily" }] }),
    /one budget per period/,
  );
  assert.throws(() => keyLimitsAfter({}, { models: ["gpt 5"] }), OperatorError);
  assert.throws(() => keyLimitsAfter({}, { ips: ["example.com"] }), OperatorError);
  // What a change leaves out stays; null clears.
  assert.deepEqual(keyLimitsAfter(limits, { tpm: null, models: null }), {
    budgets: limits.budgets,
    maxConcurrent: 4,
    ips: ["10.0.0.0/8"],
  });
  const now = Date.UTC(2026, 10, 25, 12);
  assert.equal(expiryOf("2027-01-31", now), Date.UTC(2027, 0, 31));
  assert.equal(expiryOf("2027-01-31T18:00:00Z", now), Date.UTC(2027, 0, 31, 18));
  assert.equal(expiryOf("30d", now), now + 30 * 86_400_000);
  assert.equal(expiryOf("12h", now), now + 12 * 3_600_000);
  assert.equal(expiryOf("never", now), null);
  assert.throws(() => expiryOf("tomorrow", now), OperatorError);
  assert.deepEqual(metadataFromText(["team=research", "owner=ana=b"]), {
    team: "research",
    owner: "ana=b",
  });
  assert.throws(() => metadataFromText(["novalue"]), OperatorError);
  assert.throws(() => keyPatchOf({ metadata: { k: "v\u0000" } }, {}, now), OperatorError);
  assert.throws(() => keyPatchOf({ name: "x".repeat(65) }, {}, now), OperatorError);
  assert.deepEqual(keyPatchOf({ disabled: true, expires: "2w" }, {}, now), {
    disabled: true,
    expiresAt: now + 14 * 86_400_000,
  });
});

Deno.test("a limited hold: the first limit it does not fit is named; a settlement counts in its own window", () => {
  const at = Date.UTC(2026, 10, 25, 12);
  const windows = utcWindows(at);
  const instant = { windows, minute: Math.floor(at / 60_000) * 60_000, tokens: 500 };
  const row = (owner: string, period: "day" | "month", amount: number, held = 0, spent = 0) => ({
    owner,
    period,
    amount,
    held,
    windowStart: windows[period].start,
    windowSpent: spent,
  });
  const counts = { inFlight: 0, tpmMinute: 0, tpmTokens: 0 };
  // The key's budget before the account's, shorter periods first.
  assert.deepEqual(
    planHold(
      100,
      1_000,
      {},
      [row("account:1", "day", 50), row("key:k", "month", 50)],
      counts,
      instant,
    ),
    {
      refused: "budget",
      owner: "key",
      period: "month",
      amount: 50,
      room: 50,
      resetsAt: windows.month.end,
    },
  );
  assert.deepEqual(planHold(2_000, 1_000, {}, [], counts, instant), {
    refused: "balance",
    needed: 2_000,
  });
  // Last window's spend does not count: the window rolled.
  const stale = { ...row("key:k", "day", 100, 0, 90), windowStart: windows.day.start - 86_400_000 };
  const plan = planHold(100, 1_000, { tpm: 1_000, maxConcurrent: 1 }, [stale], counts, instant);
  assert.ok(!("refused" in plan));
  assert.deepEqual(plan.budgets[0], {
    ...stale,
    held: 100,
    windowStart: windows.day.start,
    windowSpent: 0,
  });
  assert.deepEqual(plan.mark, { b: ["key:k|day"], c: 1, t: 500, m: instant.minute });
  assert.deepEqual(
    planHold(1, 1_000, { maxConcurrent: 1 }, [], { ...counts, inFlight: 1 }, instant),
    { refused: "concurrency", limit: 1 },
  );
  assert.deepEqual(
    planHold(
      1,
      1_000,
      { tpm: 900 },
      [],
      { inFlight: 0, tpmMinute: instant.minute, tpmTokens: 500 },
      instant,
    ),
    { refused: "tpm", limit: 900, resetsAt: instant.minute + 60_000, tooLarge: false },
  );
  // Settled the next day: the hold comes back, the charge counts there.
  const tomorrow = utcWindows(at + 86_400_000);
  assert.deepEqual(settledBudget(plan.budgets[0], 100, 40, tomorrow), {
    ...plan.budgets[0],
    held: 0,
    windowStart: tomorrow.day.start,
    windowSpent: 40,
  });
  // A row already moved on by another process keeps counting in its later window.
  const later = { ...plan.budgets[0], windowStart: tomorrow.day.start, windowSpent: 7 };
  assert.equal(settledBudget(later, 100, 40, windows).windowSpent, 47);
});
