/**
 * Pricing: usage × prices → integer nanoUSD, per unit line and in total. Pure and exact: products
 * are computed in BigInt and each line is rounded up to the next nanoUSD, so no call that used
 * anything rounds to zero.
 */
import type { Prices } from "../catalog/catalog.ts";
import type { UnitLine } from "../store/store.ts";

/** Billable quantities of one call, in the gateway's canonical units. */
export interface Usage {
  /** Input tokens neither read from nor written to a prompt cache. */
  inputTokens: number;
  cachedInputTokens: number;
  /** Cache writes with the default (5-minute) lifetime. */
  cacheWriteTokens: number;
  cacheWrite1hTokens: number;
  /** Output tokens, reasoning/thinking included, image output excluded. */
  outputTokens: number;
  imageOutputTokens: number;
  images: number;
  videoSeconds: number;
  searchCalls: number;
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

/** Unit name on the ledger and in `/v1/usage` → (usage field, price field, per million?). */
type FlatPrice = { [K in keyof Prices]: Prices[K] extends number ? K : never }[keyof Prices];

const UNITS: [string, keyof Usage, FlatPrice, boolean][] = [
  ["input_tokens", "inputTokens", "input", true],
  ["cached_input_tokens", "cachedInputTokens", "cachedInput", true],
  ["cache_write_tokens", "cacheWriteTokens", "cacheWrite", true],
  ["cache_write_1h_tokens", "cacheWrite1hTokens", "cacheWrite1h", true],
  ["output_tokens", "outputTokens", "output", true],
  ["image_output_tokens", "imageOutputTokens", "imageOutput", true],
  ["images", "images", "image", false],
  ["video_seconds", "videoSeconds", "videoSecond", false],
  ["search_calls", "searchCalls", "call", false],
];

export interface Priced {
  units: UnitLine[];
  /** The sum of the unit lines, nanoUSD. */
  amount: number;
}

/** Prices a usage; `prices` null means a free model (lines with amount 0). */
export function price(usage: Usage, prices: Prices | null): Priced {
  const units: UnitLine[] = [];
  let amount = 0;
  for (const [unit, field, priceField, perMillion] of UNITS) {
    const quantity = usage[field];
    if (!quantity) continue;
    const rate = prices ? prices[priceField] : 0;
    const line = perMillion
      ? ceilDiv(BigInt(quantity) * BigInt(rate), 1_000_000n)
      : quantity * rate;
    units.push({ unit, quantity, amount: line });
    amount += line;
  }
  return { units, amount };
}

function ceilDiv(a: bigint, b: bigint): number {
  return Number((a + b - 1n) / b);
}

/**
 * The per-image price for a request's `size` and `quality`: `imageBy["size/quality"]`, then
 * `imageBy[size]`, then `imageBy[quality]`, then the flat `image` price. nanoUSD.
 */
export function imageRate(prices: Prices, size?: string, quality?: string): number {
  const by = prices.imageBy;
  const keys = [size && quality ? `${size}/${quality}` : "", size ?? "", quality ?? ""];
  for (const key of keys) if (key && key in by) return by[key];
  return prices.image;
}

/** The per-second video price for a resolution: `videoSecondBy[resolution]`, else `videoSecond`. */
export function videoSecondRate(prices: Prices, resolution?: string): number {
  const by = prices.videoSecondBy;
  return resolution && resolution in by ? by[resolution] : prices.videoSecond;
}
