/**
 * generateContent `finishReason` ⇄ the canonical finish reason (pure; `gemini.md` §3,
 * `translation.md` §7). Gemini ends a turn of function calls with `STOP`: a turn with calls is
 * `tool-calls` whatever it says, but for `MAX_TOKENS`; a prompt blocked before any answer
 * (`promptFeedback.blockReason`, no finish reason) is `content-filter`.
 */
import type { FinishReason } from "../../translate/ir.ts";

/** Finish reasons that mean the answer was filtered. */
const FILTERED = new Set<unknown>([
  "SAFETY",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "LANGUAGE",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION",
]);

/** Finish reasons that mean the model's call went wrong. */
const FAILED = new Set<unknown>(["MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"]);

/** The finish reason a Gemini client is shown for each canonical finish. */
const TO_FINISH_REASON: Record<FinishReason, string> = {
  stop: "STOP",
  length: "MAX_TOKENS",
  "tool-calls": "STOP",
  "content-filter": "SAFETY",
  error: "OTHER",
  other: "STOP",
};

/**
 * A Gemini `finishReason` as the canonical finish reason (`hasToolCalls`: the turn called;
 * `blocked`: the prompt was blocked).
 */
export function decodeFinishReason(
  raw: unknown,
  hasToolCalls: boolean,
  blocked = false,
): FinishReason {
  if (blocked && raw === undefined) return "content-filter";
  if (raw === "MAX_TOKENS") return "length";
  if (hasToolCalls) return "tool-calls";
  if (FILTERED.has(raw)) return "content-filter";
  if (FAILED.has(raw)) return "error";
  return "stop";
}

/** The canonical finish reason as a Gemini `finishReason`. */
export function encodeFinishReason(reason: FinishReason): string {
  return TO_FINISH_REASON[reason];
}
