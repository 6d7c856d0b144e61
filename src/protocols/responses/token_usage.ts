/**
 * Responses `usage` ⇄ the canonical token usage (pure; `openai-responses.md` §4): `input_tokens`
 * includes cached tokens and `output_tokens` reasoning, as the canonical counts do. What the bill
 * reads of the same object is in `usage.ts`.
 */
import { asObject, shownCount } from "../../http/json.ts";
import type { Json, TokenUsage } from "../../translate/ir.ts";

/** A Responses `usage` as canonical usage. */
export function decodeTokenUsage(raw: unknown): TokenUsage {
  const u = asObject(raw);
  const input = asObject(u.input_tokens_details);
  return {
    input: shownCount(u.input_tokens),
    cacheRead: shownCount(input.cached_tokens),
    cacheWrite: shownCount(input.cache_write_tokens),
    output: shownCount(u.output_tokens),
    reasoning: shownCount(asObject(u.output_tokens_details).reasoning_tokens),
  };
}

/** Canonical usage in the Responses shape. */
export function encodeTokenUsage(usage: TokenUsage): Json {
  return {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: usage.cacheRead },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: usage.reasoning },
    total_tokens: usage.input + usage.output,
  };
}
