/**
 * Messages `usage` ⇄ the canonical token usage (pure; `anthropic-messages.md` §4): Messages counts
 * input without the cache (reads and writes are separate), the canonical input with it; a stream
 * states it in parts (`message_start`, then `message_delta`s), merged as they come. What the bill
 * reads of the same object is in `usage.ts`.
 */
import { asObject, shownCount } from "../../http/json.ts";
import type { Json, TokenUsage } from "../../translate/ir.ts";

/** Merges a usage update into the usage so far (null and absent fields mean "no update"). */
export function mergeUsage(into: Json, update: unknown): Json {
  const merged = { ...into };
  const fields = asObject(update);
  for (const key in fields) if (fields[key] !== null) merged[key] = fields[key];
  return merged;
}

/** A Messages `usage` (cumulative, possibly partial) as canonical usage. */
export function decodeTokenUsage(raw: unknown): TokenUsage {
  const u = asObject(raw);
  const cacheRead = shownCount(u.cache_read_input_tokens);
  const cacheWrite = shownCount(u.cache_creation_input_tokens);
  return {
    input: shownCount(u.input_tokens) + cacheRead + cacheWrite,
    cacheRead,
    cacheWrite,
    output: shownCount(u.output_tokens),
    reasoning: shownCount(asObject(u.output_tokens_details).thinking_tokens),
  };
}

/** Canonical usage in the Messages shape (`input_tokens` is the uncached part). */
export function encodeTokenUsage(usage: TokenUsage): Json {
  return {
    input_tokens: Math.max(0, usage.input - usage.cacheRead - usage.cacheWrite),
    cache_creation_input_tokens: usage.cacheWrite,
    cache_read_input_tokens: usage.cacheRead,
    output_tokens: usage.output,
  };
}
