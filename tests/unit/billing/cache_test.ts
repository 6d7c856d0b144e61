/**
 * What the prompt cache did for a call, in money (`billing/cache.ts`), and its figures as the APIs
 * show them (`billing/cache_report.ts`): pure, exact to the nanoUSD.
 */
import assert from "node:assert/strict";
import { cacheCharge, hasPromptCache, readDiscount } from "../../../src/billing/cache.ts";
import { cacheFigures, cacheReport, cacheReportByKey } from "../../../src/billing/cache_report.ts";
import { emptyUsage, price, tokenCost } from "../../../src/billing/price.ts";
import type { Prices, TokenRates } from "../../../src/catalog/catalog.ts";
import type { CacheUsageRow } from "../../../src/store/store.ts";

const M = 1_000_000_000; // $1 per million tokens, in nanoUSD
const rates = (input: number, cachedInput: number): TokenRates => ({
  input,
  cachedInput,
  cacheWrite: input * 1.25,
  cacheWrite1h: input * 2,
  imageInput: input,
  output: input * 5,
  imageOutput: 0,
});
const prices: Prices = {
  ...rates(3 * M, 0.3 * M),
  image: 0,
  imageBy: new Map(),
  videoSecond: 0,
  videoSecondBy: new Map(),
  call: 0,
  tiers: new Map([["priority", rates(6 * M, 0.6 * M)]]),
  tools: new Map(),
  longContext: { above: 200_000, rates: rates(6 * M, 0.6 * M) },
};

Deno.test("reads save the cached tokens at the input rate minus what they cost", () => {
  const usage = {
    ...emptyUsage(),
    inputTokens: 1_000,
    cachedInputTokens: 4_000,
    cacheWriteTokens: 200,
    cacheWrite1hTokens: 100,
    outputTokens: 50,
  };
  const c = cacheCharge(usage, prices);
  // 4,000 at $3/M = 12,000,000; at $0.30/M = 1,200,000 (the charge's own line).
  assert.deepEqual(c, {
    inputTokens: 5_300,
    cachedTokens: 4_000,
    cacheWriteTokens: 200,
    cacheWrite1hTokens: 100,
    saved: 10_800_000,
    miss: null,
  });
  const line = price(usage, prices).units.find((u) => u.unit === "cached_input_tokens")!;
  assert.equal(c.saved, tokenCost(4_000, prices.input) - line.amount, "minus what they cost");
});

Deno.test("each side is rounded up as a charge's line is; a saving is never negative", () => {
  // 3 tokens: 9,000 nanoUSD at the input rate; 900 at the cached rate.
  assert.equal(readDiscount(3, { input: 3 * M, cachedInput: 0.3 * M }), 8_100);
  // 1 token at $0.0005/M and at $0.0001/M each round up to 1 nanoUSD: nothing saved; 7 tokens
  // cost 4 and 1.
  const tiny = { input: 0.0005 * M, cachedInput: 0.0001 * M };
  assert.equal(readDiscount(1, tiny), 0);
  assert.equal(readDiscount(7, tiny), 3);
  // DeepSeek V4 Flash: 1 token costs 140 nanoUSD, 3 when cached (2.8 rounded up).
  assert.equal(readDiscount(1, { input: 0.14 * M, cachedInput: 0.0028 * M }), 137);
  assert.equal(readDiscount(1_000_000, { input: 0.14 * M, cachedInput: 0.0028 * M }), 137_200_000);
  assert.equal(readDiscount(10, { input: M, cachedInput: 2 * M }), 0, "a dearer cached rate");
  assert.equal(readDiscount(0, { input: M, cachedInput: 0 }), 0);
});

Deno.test("the rates are those the call was charged at: its tier, long context", () => {
  const usage = { ...emptyUsage(), inputTokens: 10, cachedInputTokens: 1_000 };
  assert.equal(cacheCharge(usage, prices).saved, 2_700_000);
  assert.equal(cacheCharge({ ...usage, serviceTier: "priority" }, prices).saved, 5_400_000);
  assert.equal(cacheCharge({ ...usage, serviceTier: "default" }, prices).saved, 2_700_000);
  const long = { ...usage, cachedInputTokens: 300_000 };
  assert.equal(cacheCharge(long, prices).saved, 300_000 * 5.4 * 1_000);
});

Deno.test("a miss the gateway caused loses what its tokens would have saved, at most the unread", () => {
  const usage = { ...emptyUsage(), inputTokens: 500, cacheWriteTokens: 2_000, outputTokens: 9 };
  const c = cacheCharge(usage, prices, { cause: "failover", tokens: 1_800 });
  assert.deepEqual(c.miss, { cause: "failover", tokens: 1_800, lost: 4_860_000 });
  assert.equal(c.saved, 0);
  // Never more tokens than the call did not read from the cache.
  const partly = { ...usage, cachedInputTokens: 2_000 };
  const capped = cacheCharge(partly, prices, { cause: "key_rotation", tokens: 10_000 });
  assert.deepEqual(capped.miss, { cause: "key_rotation", tokens: 2_500, lost: 6_750_000 });
  assert.equal(capped.saved, 5_400_000);
  const none = cacheCharge(usage, prices, { cause: "translation", tokens: -5 });
  assert.deepEqual(none.miss, { cause: "translation", tokens: 0, lost: 0 });
});

Deno.test("text and image models go through a prompt cache; embeddings and video do not", () => {
  assert.deepEqual(
    (["text", "image", "embedding", "video"] as const).map(hasPromptCache),
    [true, true, false, false],
  );
});

Deno.test("a free model saves and loses nothing, but its tokens are counted", () => {
  const usage = { ...emptyUsage(), inputTokens: 10, cachedInputTokens: 90 };
  assert.deepEqual(cacheCharge(usage, null, { cause: "failover", tokens: 10 }), {
    inputTokens: 100,
    cachedTokens: 90,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    saved: 0,
    miss: { cause: "failover", tokens: 10, lost: 0 },
  });
});

const row = (over: Partial<CacheUsageRow>): CacheUsageRow => ({
  day: "2026-11-20",
  keyId: "key_a",
  model: "m1",
  missCause: null,
  requests: 1,
  inputTokens: 1_000,
  cachedTokens: 600,
  cacheWriteTokens: 100,
  cacheWrite1hTokens: 50,
  saved: 1_620,
  missTokens: 0,
  lost: 0,
  ...over,
});

Deno.test("figures sum exactly, with the hit rate and the losses by cause", () => {
  const rows = [
    row({ requests: 2, inputTokens: 2_000, cachedTokens: 1_200, saved: 3_240 }),
    row({
      missCause: "failover",
      cachedTokens: 0,
      cacheWriteTokens: 900,
      saved: 0,
      missTokens: 800,
      lost: 2_160,
    }),
    row({
      model: "m2",
      missCause: "failover",
      cachedTokens: 0,
      saved: 0,
      missTokens: 100,
      lost: 270,
    }),
    row({ model: "m2", missCause: "translation", cachedTokens: 0, saved: 0, missTokens: 5 }),
  ];
  assert.deepEqual(cacheFigures(rows), {
    requests: 5,
    input_tokens: 5_000,
    cached_input_tokens: 1_200,
    cache_write_tokens: 1_200,
    cache_write_1h_tokens: 200,
    uncached_input_tokens: 2_400,
    hit_rate: 1_200 / 5_000,
    saved_usd: "0.00000324",
    saved_nanousd: 3_240,
    missed_input_tokens: 905,
    lost_usd: "0.00000243",
    lost_nanousd: 2_430,
    misses: {
      failover: {
        requests: 2,
        missed_input_tokens: 900,
        lost_usd: "0.00000243",
        lost_nanousd: 2_430,
      },
      translation: { requests: 1, missed_input_tokens: 5, lost_usd: "0.00", lost_nanousd: 0 },
    },
  });
  assert.equal(cacheFigures([]).hit_rate, null, "no input: no rate");
});

Deno.test("a report by model and day (oldest first), and one per key", () => {
  const rows = [
    row({ day: "2026-11-21", keyId: "key_b", model: "m2" }),
    row({ day: "2026-11-20" }),
    row({ day: "2026-11-21" }),
  ];
  const report = cacheReport(rows);
  assert.deepEqual(Object.keys(report.by_model as object), ["m2", "m1"]);
  assert.equal((report.by_model as Record<string, { requests: number }>).m1.requests, 2);
  const days = report.by_day as { day: string; requests: number; hit_rate: number }[];
  assert.deepEqual(days.map((d) => [d.day, d.requests, d.hit_rate]), [
    ["2026-11-20", 1, 0.6],
    ["2026-11-21", 2, 0.6],
  ]);
  const byKey = cacheReportByKey(rows);
  assert.deepEqual(Object.keys(byKey), ["key_b", "key_a"]);
  assert.equal(byKey.key_a.requests, 2);
  assert.deepEqual(byKey.key_a, cacheReport(rows.slice(1)));
  // A client-chosen model id is an ordinary key.
  const odd = cacheReport([row({ model: "__proto__" })]);
  assert.ok(Object.hasOwn(odd.by_model as object, "__proto__"));
});

Deno.test("sums past 2^53 stay exact", () => {
  const big = 2n ** 53n + 1n;
  const figures = cacheFigures([
    row({ inputTokens: big, cachedTokens: big - 10n, cacheWriteTokens: 0, cacheWrite1hTokens: 0 }),
    row({ inputTokens: 10, cachedTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0 }),
  ]);
  assert.equal(figures.input_tokens, big + 10n);
  assert.equal(figures.uncached_input_tokens, 20);
});
