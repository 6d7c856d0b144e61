/**
 * Messages `stop_reason` ⇄ the canonical finish reason (pure; `anthropic-messages.md` §4,
 * `translation.md` §7). The canonical finish keeps the raw reason beside it.
 */
import type { FinishReason } from "../../translate/ir.ts";

/** Anthropic's stop reasons that have a canonical meaning (any other is `other`). */
const FROM_STOP_REASON = new Map<unknown, FinishReason>([
  ["end_turn", "stop"],
  ["stop_sequence", "stop"],
  ["pause_turn", "stop"],
  ["max_tokens", "length"],
  ["model_context_window_exceeded", "length"],
  ["tool_use", "tool-calls"],
  ["refusal", "content-filter"],
]);

/** The stop reason a Messages client is shown for each canonical finish. */
const TO_STOP_REASON: Record<FinishReason, string> = {
  stop: "end_turn",
  length: "max_tokens",
  "tool-calls": "tool_use",
  "content-filter": "refusal",
  error: "end_turn",
  other: "end_turn",
};

/** A Messages `stop_reason` as the canonical finish reason. */
export function decodeStopReason(raw: unknown): FinishReason {
  return FROM_STOP_REASON.get(raw) ?? "other";
}

/** The canonical finish reason as a Messages `stop_reason`. */
export function encodeStopReason(reason: FinishReason): string {
  return TO_STOP_REASON[reason];
}
