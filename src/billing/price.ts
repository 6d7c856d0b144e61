/**
 * Pricing: usage × prices → integer nanoUSD, per unit line and in total. Pure and exact: products
 * are computed in BigInt and each line is rounded up to the next nanoUSD, so no call that used
 * anything rounds to zero.
 *
 * Token rates depend on how the call was served: the service tier the upstream reports
 * (`Prices.tiers`, e.g. `priority`, `flex`) and, above a model's long-context threshold, its
 * long-context rates. Such lines carry the tier in their unit name (`output_tokens.priority`,
 * `input_tokens.long_context`), so `/v1/usage` shows them apart. Hosted tool calls are priced per
 * call (`tools`), in units named `<tool>_calls`.
 */
import type { Prices, TokenRates } from "../catalog/catalog.ts";
import type { UnitLine } from "../store/store.ts";

export { HOSTED_TOOLS, type HostedTool } from "../catalog/hosted_tools.ts";
import { HOSTED_TOOLS, type HostedTool } from "../catalog/hosted_tools.ts";

/** Billable quantities of one call, in the gateway's canonical units. */
export interface Usage {
  /** Input tokens neither read from nor written to a prompt cache. */
  inputTokens: number;
  cachedInputTokens: number;
  /** Cache writes with the default (5-minute) lifetime. */
  cacheWriteTokens: number;
  cacheWrite1hTokens: number;
  /** Input tokens of images given to an image model (priced at `imageInput`). */
  imageInputTokens?: number;
  /** Output tokens, reasoning/thinking included, image output excluded. */
  outputTokens: number;
  imageOutputTokens: number;
  images: number;
  videoSeconds: number;
  searchCalls: number;
  /** Hosted tool calls by tool. */
  toolCalls?: Partial<Record<HostedTool, number>>;
  /** The service tier the upstream says it served the call at (`default` when unsaid). */
  serviceTier?: string;
}

/** A usage with every quantity zero, to build on. */
export function emptyUsage(): Usage {
  return {
    inputTokens: 0,
    cachedInputTokens: 0,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    outputTokens: 0,
    imageOutputTokens: 0,
    images: 0,
    videoSeconds: 0,
    searchCalls: 0,
  };
}

/** All input tokens of a usage, cached and cache writes included. */
export function inputTotal(u: Usage): number {
  return u.inputTokens + u.cachedInputTokens + u.cacheWriteTokens + u.cacheWrite1hTokens +
    (u.imageInputTokens ?? 0);
}

/** Token units: ledger name, usage field, rate field. */
const TOKEN_UNITS: [string, keyof Usage, keyof TokenRates][] = [
  ["input_tokens", "inputTokens", "input"],
  ["cached_input_tokens", "cachedInputTokens", "cachedInput"],
  ["cache_write_tokens", "cacheWriteTokens", "cacheWrite"],
  ["cache_write_1h_tokens", "cacheWrite1hTokens", "cacheWrite1h"],
  ["image_input_tokens", "imageInputTokens", "imageInput"],
  ["output_tokens", "outputTokens", "output"],
  ["image_output_tokens", "imageOutputTokens", "imageOutput"],
];

/** Per-unit items: ledger name, usage field, price field. */
const ITEM_UNITS: [string, keyof Usage, "image" | "videoSecond" | "call"][] = [
  ["images", "images", "image"],
  ["video_seconds", "videoSeconds", "videoSecond"],
  ["search_calls", "searchCalls", "call"],
];

const RATE_FIELDS: (keyof TokenRates)[] = [
  "input",
  "cachedInput",
  "cacheWrite",
  "cacheWrite1h",
  "imageInput",
  "output",
  "imageOutput",
];

/** The larger of two rate sets, field by field. */
export function maxRates(a: TokenRates, b: TokenRates): TokenRates {
  const out = { ...a };
  for (const field of RATE_FIELDS) out[field] = Math.max(a[field], b[field]);
  return out;
}

/** Tiers that are the base rates under another name. */
const BASE_TIERS = new Set(["default", "standard", "standard_only", "auto", "on_demand"]);

/** Whether `tier` names the base rates (or lets the upstream choose them). */
export function isBaseTier(tier: string): boolean {
  return BASE_TIERS.has(tier);
}

/**
 * The token rates a call is charged at, and the suffix its unit names carry: the tier's rates when
 * the catalog prices the tier the upstream reported, long-context rates above the threshold (the
 * larger of the two when both apply).
 */
export function ratesFor(
  prices: Prices,
  tier: string | undefined,
  inputTokens: number,
): { rates: TokenRates; suffix: string } {
  let rates: TokenRates = prices;
  let suffix = "";
  const tierRates = tier && !BASE_TIERS.has(tier) ? prices.tiers.get(tier) : undefined;
  if (tierRates) {
    rates = tierRates;
    suffix = `.${tier}`;
  }
  const long = prices.longContext;
  if (long && inputTokens > long.above) {
    rates = tierRates ? maxRates(tierRates, long.rates) : long.rates;
    suffix += ".long_context";
  }
  return { rates, suffix };
}

export interface Priced {
  units: UnitLine[];
  /** The sum of the unit lines, nanoUSD. */
  amount: number;
}

/**
 * `quantity` tokens at `rate` nanoUSD per million, rounded up: in doubles while the product is a
 * safe integer (each step is exact then: the product, its remainder and the quotient of a multiple
 * of a million), in BigInt past that.
 */
export function tokenCost(quantity: number, rate: number): number {
  const product = quantity * rate;
  if (Number.isSafeInteger(product) && product >= 0) {
    const rest = product % 1_000_000;
    return (product - rest) / 1_000_000 + (rest > 0 ? 1 : 0);
  }
  return ceilDiv(BigInt(quantity) * BigInt(rate), 1_000_000n);
}

/** Prices a usage; `prices` null means a free model (lines with amount 0). */
export function price(usage: Usage, prices: Prices | null): Priced {
  const units: UnitLine[] = [];
  let amount = 0;
  const add = (unit: string, quantity: number, line: number) => {
    units.push({ unit, quantity, amount: line });
    amount += line;
  };
  const { rates, suffix } = prices
    ? ratesFor(prices, usage.serviceTier, inputTotal(usage))
    : { rates: null, suffix: "" };
  for (const [unit, field, rateField] of TOKEN_UNITS) {
    const quantity = (usage[field] ?? 0) as number;
    if (quantity) add(unit + suffix, quantity, rates ? tokenCost(quantity, rates[rateField]) : 0);
  }
  for (const [unit, field, priceField] of ITEM_UNITS) {
    const quantity = usage[field] as number;
    if (quantity) add(unit, quantity, prices ? quantity * prices[priceField] : 0);
  }
  for (const tool of HOSTED_TOOLS) {
    const quantity = usage.toolCalls?.[tool];
    if (quantity) add(`${tool}_calls`, quantity, quantity * (prices?.tools.get(tool) ?? 0));
  }
  return { units, amount };
}

function ceilDiv(a: bigint, b: bigint): number {
  return Number((a + b - 1n) / b);
}

/**
 * The per-image price for `size` and `quality`: `imageBy["size/quality"]`, then `imageBy[size]`,
 * then `imageBy[quality]`, then the flat `image` price; null when none applies (the variant is
 * unpriced). nanoUSD.
 */
export function imageRate(prices: Prices, size?: string, quality?: string): number | null {
  const by = prices.imageBy;
  const keys = [size && quality ? `${size}/${quality}` : "", size ?? "", quality ?? ""];
  for (const key of keys) {
    const rate = key ? by.get(key) : undefined;
    if (rate !== undefined) return rate;
  }
  return prices.image || null;
}

/**
 * The per-second video price for a resolution: `videoSecondBy[resolution]` when the model prices
 * video by resolution (any other resolution is unpriced: null), else the flat `videoSecond`.
 */
export function videoSecondRate(prices: Prices, resolution?: string): number | null {
  const by = prices.videoSecondBy;
  if (!by.size) return prices.videoSecond || null;
  return (resolution ? by.get(resolution) : undefined) ?? null;
}
