import assert from "node:assert/strict";
import { amountFields, creditToNano, MAX_CREDIT, nanoToUsd, usdToNano } from "../../src/money.ts";
import { sumTotals, toTotal } from "../../src/store/amounts.ts";
import { jsonText } from "../../src/http/json.ts";

Deno.test("usdToNano parses decimal USD exactly", () => {
  assert.equal(usdToNano(1), 1_000_000_000);
  assert.equal(usdToNano(0.1), 100_000_000);
  assert.equal(usdToNano(0.0375), 37_500_000);
  assert.equal(usdToNano("12.345678901"), 12_345_678_901);
  assert.equal(usdToNano(1e-7), 100);
  assert.equal(usdToNano("-2.5"), -2_500_000_000);
  assert.equal(usdToNano("3.10000000000"), 3_100_000_000);
  assert.match(String(usdToNano("0.0000000001")), /at most 9 decimal places/);
  assert.match(String(usdToNano("ten")), /decimal amount/);
  assert.match(String(usdToNano("1e20")), /too large/);
  assert.match(String(usdToNano("1e999999999999")), /too large/, "no huge power is computed");
  assert.equal(usdToNano("0e999999999999"), 0);
});

Deno.test("a credit is at most 1,000,000 USD either way, whatever its size", () => {
  assert.equal(creditToNano("1000000"), MAX_CREDIT);
  assert.equal(creditToNano("-1000000"), -MAX_CREDIT);
  assert.equal(creditToNano("2.5"), 2_500_000_000);
  for (const text of ["1000000.000000001", "-1000001", "1e20", "1e999999999"]) {
    assert.equal(
      creditToNano(text),
      "must be at most 1000000 USD per credit (a larger top-up is several credits)",
      text,
    );
  }
  assert.match(String(creditToNano("1.0000000001")), /at most 9 decimal places/);
  assert.match(String(creditToNano("lots")), /decimal amount/);
});

Deno.test("nanoToUsd formats exactly with at least two decimals", () => {
  assert.equal(nanoToUsd(0), "0.00");
  assert.equal(nanoToUsd(38), "0.000000038");
  assert.equal(nanoToUsd(10_000_000_000), "10.00");
  assert.equal(nanoToUsd(1_234_500_000), "1.2345");
  assert.equal(nanoToUsd(-2_500_000_000), "-2.50");
  assert.equal(nanoToUsd(Number.MAX_SAFE_INTEGER), "9007199.254740991");
  assert.equal(nanoToUsd(2n ** 64n + 1n), "18446744073.709551617");
  assert.equal(nanoToUsd(-(2n ** 60n)), "-1152921504.606846976");
});

Deno.test("totals are numbers while safe, bigints beyond, and written to JSON as exact digits", () => {
  assert.equal(toTotal(5n), 5);
  assert.equal(toTotal("9007199254740991"), Number.MAX_SAFE_INTEGER);
  assert.equal(toTotal("9007199254740993"), 9007199254740993n);
  assert.equal(toTotal(2n ** 60n), 2n ** 60n);
  assert.equal(toTotal(null), 0);
  assert.equal(toTotal(1e20), 100000000000000000000n, "a float from an old row: its integer");
  assert.equal(sumTotals([Number.MAX_SAFE_INTEGER, 2]), 9007199254740993n);
  assert.equal(sumTotals([2n ** 60n, -(2n ** 60n), 3]), 3);
  const body = { ...amountFields("spent", 3n * BigInt(Number.MAX_SAFE_INTEGER)), n: 1 };
  assert.equal(
    jsonText(body),
    '{"spent_usd":"27021597.764222973","spent_nanousd":27021597764222973,"n":1}',
  );
  assert.equal(jsonText({ a: [1, "x"] }), '{"a":[1,"x"]}');
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  assert.throws(() => jsonText(cycle), TypeError);
});
