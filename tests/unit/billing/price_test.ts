import assert from "node:assert/strict";
import {
  emptyUsage,
  imageRate,
  price,
  tokenCost,
  videoSecondRate,
} from "../../../src/billing/price.ts";
import type { Prices } from "../../../src/catalog/catalog.ts";
import { int, random } from "../../helpers/random.ts";

const prices: Prices = {
  input: 2_500_000_000, // $2.50 / M
  cachedInput: 250_000_000,
  cacheWrite: 3_125_000_000,
  cacheWrite1h: 5_000_000_000,
  imageInput: 10_000_000_000,
  output: 15_000_000_000,
  imageOutput: 30_000_000_000,
  image: 42_000_000, // $0.042 each
  imageBy: new Map([["1024x1024/high", 167_000_000], ["1536x1024", 63_000_000], [
    "low",
    11_000_000,
  ]]),
  videoSecond: 50_000_000,
  videoSecondBy: new Map(),
  call: 10_000_000,
  tiers: new Map(),
  tools: new Map(),
};

Deno.test("price multiplies each unit by its own rate, exactly", () => {
  const result = price({
    ...emptyUsage(),
    inputTokens: 1000,
    cachedInputTokens: 4000,
    cacheWriteTokens: 200,
    cacheWrite1hTokens: 100,
    outputTokens: 500,
    imageOutputTokens: 1290,
  }, prices);
  assert.deepEqual(result.units, [
    { unit: "input_tokens", quantity: 1000, amount: 2_500_000 },
    { unit: "cached_input_tokens", quantity: 4000, amount: 1_000_000 },
    { unit: "cache_write_tokens", quantity: 200, amount: 625_000 },
    { unit: "cache_write_1h_tokens", quantity: 100, amount: 500_000 },
    { unit: "output_tokens", quantity: 500, amount: 7_500_000 },
    { unit: "image_output_tokens", quantity: 1290, amount: 38_700_000 },
  ]);
  assert.equal(result.amount, 50_825_000);
});

Deno.test("a tiny call never rounds to zero and per-unit prices are whole", () => {
  const cheap = { ...prices, input: 37_500_000 }; // $0.0375 / M → 37.5 nanoUSD per token
  assert.equal(price({ ...emptyUsage(), inputTokens: 1 }, cheap).amount, 38);
  const units = price({ ...emptyUsage(), images: 2, videoSeconds: 6, searchCalls: 1 }, prices);
  assert.equal(units.amount, 84_000_000 + 300_000_000 + 10_000_000);
});

Deno.test("free models record quantities at zero cost; zero quantities are left out", () => {
  assert.deepEqual(price({ ...emptyUsage(), outputTokens: 7 }, null), {
    units: [{ unit: "output_tokens", quantity: 7, amount: 0 }],
    amount: 0,
  });
  assert.deepEqual(price(emptyUsage(), prices), { units: [], amount: 0 });
});

Deno.test("large volumes stay exact beyond float precision", () => {
  const result = price({ ...emptyUsage(), outputTokens: 9_999_999_999 }, {
    ...prices,
    output: 75_000_000_001,
  });
  // 9_999_999_999 × 75_000_000_001 / 1e6, rounded up, computed by hand in BigInt.
  assert.equal(BigInt(result.amount), (9_999_999_999n * 75_000_000_001n + 999_999n) / 1_000_000n);
});

Deno.test("a token cost is the product over a million rounded up, in doubles as in BigInt", () => {
  const exact = (q: number, r: number) => Number((BigInt(q) * BigInt(r) + 999_999n) / 1_000_000n);
  // Around the edges: no remainder, a remainder of one and of a million less one, the largest
  // product still computed in doubles and the smallest past it.
  const cases: [number, number][] = [
    [0, 15_000_000_000],
    [1, 0],
    [1, 1],
    [1_000_000, 1],
    [1_000_001, 1],
    [999_999, 1],
    [13, 2_500_000_000],
    [2 ** 26, 2 ** 27 - 1],
    [3, 3_002_399_751_580_330], // 9,007,199,254,740,990: a safe product
    [3, 3_002_399_751_580_331], // 2^53 + 1: past it
    [9_999_999_999, 75_000_000_001],
  ];
  const rand = random(53);
  for (let i = 0; i < 2_000; i++) {
    const digits = int(rand, 1, 12);
    cases.push([int(rand, 0, 10 ** digits), int(rand, 0, 10 ** (13 - digits)) * 1_000 + 999]);
  }
  for (const [q, r] of cases) assert.equal(tokenCost(q, r), exact(q, r), `${q} × ${r}`);
});

Deno.test("image rates go from size/quality to size to quality to the flat price", () => {
  assert.equal(imageRate(prices, "1024x1024", "high"), 167_000_000);
  assert.equal(imageRate(prices, "1536x1024", "high"), 63_000_000);
  assert.equal(imageRate(prices, "1024x1024", "low"), 11_000_000);
  assert.equal(imageRate(prices, "1024x1024", "medium"), 42_000_000);
  assert.equal(imageRate(prices), 42_000_000);
});

Deno.test("image rates never read a prototype key", () => {
  for (const key of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
    assert.equal(imageRate(prices, key, key), 42_000_000);
    assert.equal(imageRate({ ...prices, image: 0 }, key, key), null);
  }
});

Deno.test("video rates: per resolution when priced so (others unpriced), else the flat rate", () => {
  const byResolution = {
    ...prices,
    videoSecondBy: new Map([["480p", 50_000_000], ["720p", 70_000_000]]),
  };
  assert.equal(videoSecondRate(byResolution, "720p"), 70_000_000);
  assert.equal(videoSecondRate(byResolution, "480p"), 50_000_000);
  assert.equal(videoSecondRate(byResolution, "1080p"), null, "an unpriced resolution");
  assert.equal(videoSecondRate(byResolution, "constructor"), null);
  assert.equal(videoSecondRate(prices, "1080p"), 50_000_000, "one flat rate for every resolution");
});
