import assert from "node:assert/strict";
import { nanoToUsd, usdToNano } from "../../src/billing/money.ts";

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
});

Deno.test("nanoToUsd formats exactly with at least two decimals", () => {
  assert.equal(nanoToUsd(0), "0.00");
  assert.equal(nanoToUsd(38), "0.000000038");
  assert.equal(nanoToUsd(10_000_000_000), "10.00");
  assert.equal(nanoToUsd(1_234_500_000), "1.2345");
  assert.equal(nanoToUsd(-2_500_000_000), "-2.50");
  assert.equal(nanoToUsd(Number.MAX_SAFE_INTEGER), "9007199.254740991");
});
