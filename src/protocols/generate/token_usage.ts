/**
 * generateContent `usageMetadata` ⇄ the canonical token usage (pure; `gemini.md` §3): the
 * canonical input adds tool-use prompts, the canonical output adds thoughts, which Gemini counts
 * apart. What the bill reads of the same object is in `usage.ts`.
 */
import { asObject, shownCount } from "../../http/json.ts";
import type { Json, TokenUsage } from "../../translate/ir.ts";

/** `usageMetadata` as canonical usage. */
export function decodeTokenUsage(raw: unknown): TokenUsage {
  const u = asObject(raw);
  const thoughts = shownCount(u.thoughtsTokenCount);
  return {
    input: shownCount(u.promptTokenCount) + shownCount(u.toolUsePromptTokenCount),
    cacheRead: shownCount(u.cachedContentTokenCount),
    cacheWrite: 0,
    output: shownCount(u.candidatesTokenCount) + thoughts,
    reasoning: thoughts,
  };
}

/** Canonical usage as `usageMetadata` (candidates exclude thoughts). */
export function encodeTokenUsage(usage: TokenUsage): Json {
  return {
    promptTokenCount: usage.input,
    candidatesTokenCount: Math.max(0, usage.output - usage.reasoning),
    ...(usage.reasoning > 0 ? { thoughtsTokenCount: usage.reasoning } : {}),
    ...(usage.cacheRead > 0 ? { cachedContentTokenCount: usage.cacheRead } : {}),
    totalTokenCount: usage.input + usage.output,
  };
}
