/**
 * What the prompt cache did for a call, in money — pure and exact, as `price` is: the call's input
 * tokens by how the cache served them (read, written for 5 minutes or for an hour, neither), what
 * the reads saved, and what a miss the gateway itself caused lost.
 *
 * - **Saved**: the tokens read from the cache at the input rate, minus what they cost at the
 *   cached rate — each rounded up to the nanoUSD as the charge's lines are, at the rates the call
 *   was charged at (its tier, long context).
 * - **Lost** (an estimate): when the gateway moved a conversation (failover to another deployment,
 *   another key) or changed its prefix only through translation, the input tokens the call would
 *   have read from the cache × (input rate − cached rate) — at most the tokens it did not read.
 *   Who knows of such a miss (the routing side) tells the call's bill (`Bill.cacheMiss`); it is
 *   kept with the call's ledger entry.
 */
import type { ModelKind, Prices } from "../catalog/catalog.ts";
import type { CacheCharge } from "../store/store.ts";
import { inputTotal, ratesFor, tokenCost, type Usage } from "./price.ts";

/**
 * Whether calls to models of `kind` go through a prompt cache — text and image models (their text
 * input); embeddings have none, videos are billed by the second — and so have cache figures.
 */
export function hasPromptCache(kind: ModelKind): boolean {
  return kind === "text" || kind === "image";
}

/** Why a call missed a prompt cache it could have read, when the gateway caused it. */
export const CACHE_MISS_CAUSES = [
  /** The call went to another deployment than the conversation's last (a failover, a move). */
  "failover",
  /** The call went with another upstream key than the conversation's last. */
  "key_rotation",
  /** The prefix sent upstream changed only through the gateway's translation. */
  "translation",
] as const;

/** One of `CACHE_MISS_CAUSES`. */
export type CacheMissCause = typeof CACHE_MISS_CAUSES[number];

/** A miss of the prompt cache the gateway caused: why, and how much it would have read. */
export interface CacheMiss {
  cause: CacheMissCause;
  /** Input tokens the call would have read from the cache, but for the gateway. */
  tokens: number;
}

/**
 * `tokens` at the input rate minus the same tokens at the cached rate (each rounded up as a charge
 * line is), never below 0: what reading them from the cache saves. nanoUSD.
 */
export function readDiscount(
  tokens: number,
  rates: { input: number; cachedInput: number },
): number {
  if (tokens <= 0) return 0;
  return Math.max(0, tokenCost(tokens, rates.input) - tokenCost(tokens, rates.cachedInput));
}

/**
 * The cache figures of a call charged `usage` at `prices` (null: a free model, which saves and
 * loses nothing), with the miss the gateway caused, if any.
 */
export function cacheCharge(
  usage: Usage,
  prices: Prices | null,
  miss?: CacheMiss | null,
): CacheCharge {
  const input = inputTotal(usage);
  const rates = prices ? ratesFor(prices, usage.serviceTier, input).rates : null;
  const cached = usage.cachedInputTokens;
  const missed = miss ? Math.max(0, Math.min(miss.tokens, input - cached)) : 0;
  return {
    inputTokens: input,
    cachedTokens: cached,
    cacheWriteTokens: usage.cacheWriteTokens,
    cacheWrite1hTokens: usage.cacheWrite1hTokens,
    saved: rates ? readDiscount(cached, rates) : 0,
    miss: miss
      ? { cause: miss.cause, tokens: missed, lost: rates ? readDiscount(missed, rates) : 0 }
      : null,
  };
}
