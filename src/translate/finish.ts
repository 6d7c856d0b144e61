/**
 * Finish reasons between the four vocabularies and the canonical one (pure), after
 * `translation.md` §7. The canonical reason keeps the raw one beside it.
 */
import type { FinishReason } from "./ir.ts";

/** Anthropic `stop_reason` → canonical. */
export function fromAnthropic(raw: unknown): FinishReason {
  switch (raw) {
    case "end_turn":
    case "stop_sequence":
    case "pause_turn":
      return "stop";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool-calls";
    case "refusal":
      return "content-filter";
    default:
      return "other";
  }
}

/** Canonical → Anthropic `stop_reason`. */
export function toAnthropic(reason: FinishReason): string {
  switch (reason) {
    case "length":
      return "max_tokens";
    case "tool-calls":
      return "tool_use";
    case "content-filter":
      return "refusal";
    default:
      return "end_turn";
  }
}

/** Chat `finish_reason` → canonical. */
export function fromChat(raw: unknown): FinishReason {
  switch (raw) {
    case "stop":
      return "stop";
    case "length":
      return "length";
    case "tool_calls":
    case "function_call":
      return "tool-calls";
    case "content_filter":
      return "content-filter";
    default:
      return "other";
  }
}

/** Canonical → chat `finish_reason`. */
export function toChat(reason: FinishReason): string {
  switch (reason) {
    case "length":
      return "length";
    case "tool-calls":
      return "tool_calls";
    case "content-filter":
      return "content_filter";
    default:
      return "stop";
  }
}

const GEMINI_FILTERED = new Set([
  "SAFETY",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "LANGUAGE",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION",
]);

/** Gemini `finishReason` → canonical (a turn with function calls is `tool-calls` whatever it says). */
export function fromGemini(raw: unknown, hasToolCalls: boolean): FinishReason {
  if (raw === "MAX_TOKENS") return "length";
  if (hasToolCalls) return "tool-calls";
  if (typeof raw === "string" && GEMINI_FILTERED.has(raw)) return "content-filter";
  if (raw === "MALFORMED_FUNCTION_CALL" || raw === "UNEXPECTED_TOOL_CALL") return "error";
  return "stop";
}

/** Canonical → Gemini `finishReason` (tool calls end with `STOP`). */
export function toGemini(reason: FinishReason): string {
  switch (reason) {
    case "length":
      return "MAX_TOKENS";
    case "content-filter":
      return "SAFETY";
    case "error":
      return "OTHER";
    default:
      return "STOP";
  }
}

/**
 * The Responses status of a finished answer: `incomplete` with a reason for length and content
 * filtering, else `completed` (tool calls do not change it).
 */
export function toResponses(
  reason: FinishReason,
): { status: "completed" | "incomplete"; incomplete?: "max_output_tokens" | "content_filter" } {
  if (reason === "length") return { status: "incomplete", incomplete: "max_output_tokens" };
  if (reason === "content-filter") return { status: "incomplete", incomplete: "content_filter" };
  return { status: "completed" };
}

/** A Responses status and incomplete reason → canonical (`tool-calls` when it called any). */
export function fromResponses(
  status: unknown,
  incomplete: unknown,
  hasToolCalls: boolean,
): FinishReason {
  if (status === "incomplete") {
    return incomplete === "content_filter" ? "content-filter" : "length";
  }
  if (status === "failed") return "error";
  return hasToolCalls ? "tool-calls" : "stop";
}
