/**
 * Chat `usage` ⇄ the canonical token usage (pure; `openai-other.md` §1): `prompt_tokens` includes
 * cached tokens, `completion_tokens` includes reasoning, as the canonical counts do. What the bill
 * reads of the same object is in `usage.ts`.
 */
import { asObject, shownCount } from "../../http/json.ts";
import type { Json, TokenUsage } from "../../translate/ir.ts";

/**
 * A chat `usage` as canonical usage. Vendors' cache fields are read too (DeepSeek
 * `prompt_cache_hit_tokens`, Moonshot's top-level `cached_tokens`).
 */
export function decodeTokenUsage(raw: unknown): TokenUsage {
  const u = asObject(raw);
  const details = asObject(u.prompt_tokens_details);
  const input = shownCount(u.prompt_tokens);
  const cacheRead = Math.min(
    input,
    shownCount(details.cached_tokens) || shownCount(u.prompt_cache_hit_tokens) ||
      shownCount(u.cached_tokens),
  );
  return {
    input,
    cacheRead,
    cacheWrite: Math.min(input - cacheRead, shownCount(details.cache_write_tokens)),
    output: shownCount(u.completion_tokens),
    reasoning: shownCount(asObject(u.completion_tokens_details).reasoning_tokens),
  };
}

/** Canonical usage in the chat shape (`prompt_tokens` includes the cache, as canonical input). */
export function encodeTokenUsage(usage: TokenUsage): Json {
  return {
    prompt_tokens: usage.input,
    completion_tokens: usage.output,
    total_tokens: usage.input + usage.output,
    prompt_tokens_details: {
      cached_tokens: usage.cacheRead,
      ...(usage.cacheWrite ? { cache_write_tokens: usage.cacheWrite } : {}),
    },
    completion_tokens_details: { reasoning_tokens: usage.reasoning },
  };
}
