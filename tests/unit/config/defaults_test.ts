/**
 * The default catalog against a table of list prices, model by model. Checked on 2026-11-22
 * against the providers' pricing pages and the published price tables of LiteLLM,
 * pydantic/genai-prices and models.dev (their most recent confirmations: May–September 2026).
 * USD per million tokens: [input, cached input, output]; images per image; video per second.
 * The cache units — reads, and Anthropic's 5-minute and 1-hour writes (1.25× and 2× input; the
 * other providers charge no write premium) — were checked again on 2026-11-25.
 */
import assert from "node:assert/strict";
import { buildConfig } from "../../../src/config/load.ts";
import { emptyUsage, price, tokenCost } from "../../../src/billing/price.ts";

const CHECKED = "2026-11-22";
const { catalog } = buildConfig({}, (name) => name.endsWith("_API_KEY") ? "k" : undefined);
const nano = (usd: number) => Math.round(usd * 1e9);

const TOKENS: [string, number, number, number][] = [
  ["gpt-5.4", 2.5, 0.25, 15],
  ["gpt-5.4-2026-03-05", 2.5, 0.25, 15],
  ["gpt-5.4-mini", 0.75, 0.075, 4.5],
  ["gpt-5.4-nano", 0.2, 0.02, 1.25],
  ["gpt-5.4-pro", 30, 30, 180],
  ["gpt-5.5", 5, 0.5, 30],
  ["gpt-5.2", 1.75, 0.175, 14],
  ["gpt-5.2-pro", 21, 21, 168],
  ["gpt-5.1", 1.25, 0.125, 10],
  ["gpt-5.1-codex-max", 1.25, 0.125, 10],
  ["gpt-5.1-codex-mini", 0.25, 0.025, 2],
  ["gpt-5", 1.25, 0.125, 10],
  ["gpt-5-2025-08-07", 1.25, 0.125, 10],
  ["gpt-5-mini", 0.25, 0.025, 2],
  ["gpt-5-nano", 0.05, 0.005, 0.4],
  ["gpt-5-pro", 15, 15, 120],
  ["gpt-4.1", 2, 0.5, 8],
  ["gpt-4.1-mini", 0.4, 0.1, 1.6],
  ["gpt-4.1-nano", 0.1, 0.025, 0.4],
  ["gpt-4o", 2.5, 1.25, 10],
  ["gpt-4o-2024-05-13", 5, 5, 15],
  ["gpt-4o-mini", 0.15, 0.075, 0.6],
  ["o1", 15, 7.5, 60],
  ["o1-pro", 150, 150, 600],
  ["o3", 2, 0.5, 8],
  ["o3-pro", 20, 20, 80],
  ["o3-mini", 1.1, 0.55, 4.4],
  ["o3-deep-research", 10, 2.5, 40],
  ["o4-mini", 1.1, 0.275, 4.4],
  ["o4-mini-deep-research", 2, 0.5, 8],
  ["grok-4", 1.25, 0.2, 2.5],
  ["grok-code-fast-1", 1.25, 0.2, 2.5],
  ["grok-4.3", 1.25, 0.2, 2.5],
  ["grok-3-mini", 0.3, 0.075, 0.5],
  ["grok-4.5", 2, 0.5, 6],
  ["claude-opus-4-20250514", 15, 1.5, 75],
  ["claude-opus-4-1-20250805", 15, 1.5, 75],
  ["claude-opus-4-5-20251101", 5, 0.5, 25],
  ["claude-opus-4-6", 5, 0.5, 25],
  ["claude-sonnet-4-20250514", 3, 0.3, 15],
  ["claude-sonnet-4-5-20250929", 3, 0.3, 15],
  ["claude-sonnet-4-6", 3, 0.3, 15],
  ["claude-haiku-4-5-20251001", 1, 0.1, 5],
  ["claude-3-5-haiku-20241022", 0.8, 0.08, 4],
  ["deepseek-v4-flash", 0.14, 0.0028, 0.28],
  ["deepseek-v4-pro", 1.74, 0.0145, 3.48],
  ["kimi-k2-0905-preview", 0.6, 0.15, 2.5],
  ["kimi-k2-turbo-preview", 1.15, 0.15, 8],
  ["kimi-k2.5", 0.6, 0.1, 3],
  ["kimi-k2.6", 0.95, 0.16, 4],
  ["glm-4.6", 0.6, 0.11, 2.2],
  ["glm-4.5-air", 0.2, 0.03, 1.1],
  ["glm-5", 1, 0.2, 3.2],
  ["gemini-2.5-pro", 1.25, 0.125, 10],
  ["gemini-2.5-flash", 0.3, 0.03, 2.5],
  ["gemini-2.5-flash-lite", 0.1, 0.01, 0.4],
  ["gemini-3-pro-preview", 2, 0.2, 12],
  ["gemini-3.1-pro-preview", 2, 0.2, 12],
  ["gemini-3-flash-preview", 0.5, 0.05, 3],
];

function prices(id: string) {
  const resolved = catalog.resolve(id);
  assert.ok(resolved.ok, `${id} is in the default catalog`);
  assert.ok(resolved.model.prices, `${id} is priced`);
  return { model: resolved.model, prices: resolved.model.prices! };
}

Deno.test(`the default catalog's token prices match the list prices checked ${CHECKED}`, () => {
  for (const [id, input, cached, output] of TOKENS) {
    const { prices: p } = prices(id);
    assert.deepEqual(
      [p.input, p.cachedInput, p.output],
      [nano(input), nano(cached), nano(output)],
      id,
    );
  }
});

Deno.test("Anthropic cache writes cost 1.25× (5 minutes) and 2× (1 hour) the input rate", () => {
  for (const [id, input] of TOKENS.filter(([id]) => id.startsWith("claude"))) {
    const { prices: p } = prices(id);
    assert.equal(p.cacheWrite, nano(input * 1.25), id);
    assert.equal(p.cacheWrite1h, nano(input * 2), id);
  }
});

Deno.test("only Anthropic charges for cache writes; everyone else writes at the input rate", () => {
  // OpenAI, xAI, DeepSeek, Moonshot and Z.ai cache automatically with no write premium; Gemini's
  // implicit caching has none either (its explicit caches, billed for storage by the hour, cannot
  // be created through the gateway: `cachedContent` is refused).
  for (const [id, input] of TOKENS.filter(([id]) => !id.startsWith("claude"))) {
    const { prices: p } = prices(id);
    assert.deepEqual([p.cacheWrite, p.cacheWrite1h], [nano(input), nano(input)], id);
  }
  const long = prices("claude-sonnet-4-5").prices.longContext!.rates;
  assert.deepEqual(
    [long.input, long.cachedInput, long.cacheWrite, long.cacheWrite1h],
    [nano(6), nano(0.6), nano(7.5), nano(12)],
    "Sonnet 4.5 past 200k tokens: reads and writes at the long rates",
  );
  for (const id of ["gemini-2.5-pro", "gemini-3-pro-preview", "gemini-3.1-pro-preview"]) {
    const p = prices(id).prices.longContext!.rates;
    assert.equal(p.cachedInput * 10, p.input, `${id} long context: cached at a tenth`);
  }
});

Deno.test("each cache unit is priced at its list rate, one model per provider", () => {
  // 50,000 tokens of each: 200,000 in all, not past any long-context threshold.
  const n = 50_000;
  const usage = {
    ...emptyUsage(),
    inputTokens: n,
    cachedInputTokens: n,
    cacheWriteTokens: n,
    cacheWrite1hTokens: n,
  };
  const cases: [string, number, number, number, number][] = [
    // model, input, cached input, 5-minute write, 1-hour write (USD per million)
    ["claude-opus-4-6", 5, 0.5, 6.25, 10],
    ["claude-sonnet-4-6", 3, 0.3, 3.75, 6],
    ["claude-haiku-4-5-20251001", 1, 0.1, 1.25, 2],
    ["claude-3-5-haiku-20241022", 0.8, 0.08, 1, 1.6],
    ["gpt-5.4", 2.5, 0.25, 2.5, 2.5],
    ["gpt-4o", 2.5, 1.25, 2.5, 2.5],
    ["gemini-2.5-pro", 1.25, 0.125, 1.25, 1.25],
    ["gemini-2.5-flash", 0.3, 0.03, 0.3, 0.3],
    ["grok-4.3", 1.25, 0.2, 1.25, 1.25],
    ["deepseek-v4-flash", 0.14, 0.0028, 0.14, 0.14],
    ["kimi-k2.6", 0.95, 0.16, 0.95, 0.95],
    ["glm-4.6", 0.6, 0.11, 0.6, 0.6],
  ];
  for (const [id, ...usd] of cases) {
    const lines = price(usage, prices(id).prices).units.map((u) => [u.unit, u.amount]);
    assert.deepEqual(lines, [
      ["input_tokens", tokenCost(n, nano(usd[0]))],
      ["cached_input_tokens", tokenCost(n, nano(usd[1]))],
      ["cache_write_tokens", tokenCost(n, nano(usd[2]))],
      ["cache_write_1h_tokens", tokenCost(n, nano(usd[3]))],
    ], id);
  }
});

Deno.test("tiers, long context and hosted tools are priced where the provider lists them", () => {
  const gpt54 = prices("gpt-5.4").prices;
  assert.deepEqual(
    [gpt54.tiers.get("priority")?.input, gpt54.tiers.get("priority")?.output],
    [nano(5), nano(30)],
  );
  assert.equal(gpt54.tiers.get("flex")?.output, nano(7.5));
  assert.deepEqual(gpt54.longContext && [gpt54.longContext.above, gpt54.longContext.rates.output], [
    272_000,
    nano(22.5),
  ]);
  assert.equal(gpt54.tools.get("web_search"), nano(0.01));
  assert.equal(gpt54.tools.get("file_search"), nano(0.0025));
  assert.equal(prices("o3-pro").prices.tiers.size, 0, "o3-pro has no priority tier");
  const pro25 = prices("gemini-2.5-pro").prices.longContext!;
  assert.deepEqual([pro25.above, pro25.rates.input, pro25.rates.output], [
    200_000,
    nano(2.5),
    nano(15),
  ]);
  const pro3 = prices("gemini-3-pro-preview").prices.longContext!;
  assert.deepEqual([pro3.rates.input, pro3.rates.output], [nano(4), nano(18)]);
  assert.equal(prices("gemini-2.5-flash").prices.tools.get("grounded_prompt"), nano(0.035));
  assert.equal(prices("gemini-3-flash-preview").prices.tools.get("web_search"), nano(0.014));
  assert.equal(prices("claude-sonnet-4-5").prices.tools.get("web_search"), nano(0.01));
  assert.equal(prices("claude-sonnet-4-5").prices.longContext?.rates.output, nano(22.5));
  assert.equal(prices("grok-4.3").prices.tools.get("x_search"), nano(0.005));
});

Deno.test("embedding models are priced per input token", () => {
  const embedding: [string, number][] = [
    ["text-embedding-3-small", 0.02],
    ["text-embedding-3-large", 0.13],
    ["gemini-embedding-001", 0.15],
  ];
  for (const [id, input] of embedding) {
    const { model, prices: p } = prices(id);
    assert.deepEqual([model.kind, p.input, p.output], ["embedding", nano(input), 0], id);
  }
});

Deno.test("images per image by size and quality, video per second by resolution", () => {
  const image: [string, string, number][] = [
    ["gpt-image-1", "1024x1024/low", 0.011],
    ["gpt-image-1", "1024x1024/high", 0.167],
    ["gpt-image-1", "1536x1024/high", 0.25],
    ["gpt-image-1-mini", "1024x1536/medium", 0.015],
    ["gpt-image-1.5", "1024x1024/high", 0.133],
  ];
  for (const [id, variant, usd] of image) {
    assert.equal(prices(id).prices.imageBy.get(variant), nano(usd), `${id} ${variant}`);
  }
  assert.equal(prices("grok-imagine-image").prices.image, nano(0.02));
  const video = prices("grok-imagine-video").prices.videoSecondBy;
  assert.deepEqual([...video], [["480p", nano(0.05)], ["720p", nano(0.05)]]);
  const banana = prices("gemini-3-pro-image-preview").prices;
  assert.deepEqual([banana.input, banana.output, banana.imageOutput], [
    nano(2),
    nano(12),
    nano(120),
  ]);
});

Deno.test("every text model carries its output limit; unknown variants are not guessed", () => {
  for (const [id] of TOKENS) {
    assert.ok(prices(id).model.maxOutputTokens, `${id} has an output limit`);
  }
  assert.equal(prices("gpt-5.4").model.maxOutputTokens, 128_000);
  assert.equal(prices("claude-opus-4-1").model.maxOutputTokens, 32_000);
  for (const id of ["gpt-5.9-experimental", "gpt-4o-audio-preview", "o3-ultra", "gemini-9-flash"]) {
    assert.equal(catalog.resolve(id).ok, false, `${id} is not priced at a neighbour's rate`);
  }
});
