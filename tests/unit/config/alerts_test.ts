/**
 * `alerts`: defaults, `env:NAME` for the webhook and the secret, and bad values stopping startup
 * with the field named — never the webhook's URL or the secret, either of which may hold a
 * credential.
 */
import assert from "node:assert/strict";
import { ALERT_RETRY_DELAYS_MS, buildConfig, ConfigError } from "../../../src/config/load.ts";

const env = (vars: Record<string, string>) => (name: string) => vars[name];

Deno.test("alerts: the defaults, and every field as written", () => {
  const defaults = buildConfig({}, env({}));
  assert.deepEqual(defaults.alerts, {
    webhookUrl: null,
    secret: null,
    budgetThresholds: [50, 80, 100],
    balanceBelow: null,
    expiringWithinMs: 72 * 3_600_000,
    checkIntervalMs: 30_000,
    retryDelaysMs: ALERT_RETRY_DELAYS_MS,
    timeoutMs: 5_000,
  });
  const set = buildConfig({
    alerts: {
      webhookUrl: "https://hooks.example.com/switchyard?token=abc",
      secret: "env:HOOK_SECRET",
      budgetThresholds: [100, 25],
      balanceBelowUsd: "2.000000001",
      expiringWithinHours: 0,
      checkIntervalMs: 100,
      retryDelaysMs: [10, 20],
      timeoutMs: 250,
    },
  }, env({ HOOK_SECRET: "a-secret-of-16-chars" }));
  assert.deepEqual(set.alerts, {
    webhookUrl: "https://hooks.example.com/switchyard?token=abc",
    secret: "a-secret-of-16-chars",
    budgetThresholds: [25, 100],
    balanceBelow: 2_000_000_001,
    expiringWithinMs: 0,
    checkIntervalMs: 100,
    retryDelaysMs: [10, 20],
    timeoutMs: 250,
  });
  const fromEnv = buildConfig(
    { alerts: { webhookUrl: "env:HOOK" } },
    env({ HOOK: "http://127.0.0.1:9/hook" }),
  );
  assert.equal(fromEnv.alerts.webhookUrl, "http://127.0.0.1:9/hook");
  assert.ok(
    fromEnv.notices.some((n) => /alerts\.webhookUrl is set without alerts\.secret/.test(n)),
    "an unsigned webhook is noticed at startup",
  );
});

Deno.test("alerts: a bad value stops startup, naming the field and never the URL or secret", () => {
  const cases: [unknown, Record<string, string>, RegExp][] = [
    [{ webhookUrl: "ftp://hooks.example.com/t0ken" }, {}, /alerts\.webhookUrl: must be an http/],
    [{ webhookUrl: "env:HOOK" }, { HOOK: "file:///t0ken" }, /alerts\.webhookUrl: must be an http/],
    [{ webhookUrl: "env:HOOK" }, {}, /alerts\.webhookUrl: the environment variable HOOK is not/],
    [{ secret: "t0ken-short" }, {}, /alerts\.secret: must be at least 16 characters/],
    [{ secret: "env:S" }, { S: "t0ken-short" }, /alerts\.secret: must be at least 16/],
    [{ secret: "env:S" }, {}, /alerts\.secret: the environment variable S is not set/],
    [{ budgetThresholds: [0] }, {}, /alerts\.budgetThresholds\[0\]: must be a percent/],
    [{ budgetThresholds: [101] }, {}, /alerts\.budgetThresholds\[0\]: must be a percent/],
    [{ budgetThresholds: [50.5] }, {}, /must be a whole percent/],
    [{ budgetThresholds: [50, 50] }, {}, /alerts\.budgetThresholds: must not list a percent twice/],
    [{ balanceBelowUsd: 5 }, {}, /alerts\.balanceBelowUsd: must be a decimal string/],
    [{ balanceBelowUsd: "0" }, {}, /alerts\.balanceBelowUsd: must be more than 0/],
    [{ balanceBelowUsd: "0.0000000001" }, {}, /alerts\.balanceBelowUsd: must have at most 9/],
    [{ balanceBelowUsd: "five" }, {}, /alerts\.balanceBelowUsd: must be a decimal amount/],
    [{ expiringWithinHours: -1 }, {}, /alerts\.expiringWithinHours/],
    [{ checkIntervalMs: 5 }, {}, /alerts\.checkIntervalMs: must be ≥ 10/],
    [{ retryDelaysMs: [1, -1] }, {}, /alerts\.retryDelaysMs\[1\]/],
    [{ timeoutMs: 0 }, {}, /alerts\.timeoutMs/],
    [{ webhook: "https://x" }, {}, /alerts\.webhook: is not a known field/],
  ];
  for (const [alerts, vars, expected] of cases) {
    assert.throws(() => buildConfig({ alerts }, env(vars)), (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.match(error.message, expected);
      assert.ok(!error.message.includes("t0ken"), error.message);
      return true;
    });
  }
});
