/**
 * Chat `finish_reason` ⇄ the canonical finish reason (pure; `openai-other.md` §1,
 * `translation.md` §7): `length` first; a refusal is `content-filter`; an answer that calls tools
 * finishes with `tool-calls` even where a server says `stop`.
 */
import type { FinishReason } from "../../translate/ir.ts";

/** Chat's finish reasons that have a canonical meaning (any other is `other`). */
const FROM_FINISH_REASON = new Map<unknown, FinishReason>([
  ["stop", "stop"],
  ["length", "length"],
  ["tool_calls", "tool-calls"],
  ["function_call", "tool-calls"],
  ["content_filter", "content-filter"],
]);

/** The finish reason a chat client is shown for each canonical finish. */
const TO_FINISH_REASON: Record<FinishReason, string> = {
  stop: "stop",
  length: "length",
  "tool-calls": "tool_calls",
  "content-filter": "content_filter",
  error: "stop",
  other: "stop",
};

/** The canonical finish of a chat answer: its `finish_reason`, whether it refused or called. */
export function decodeFinishReason(
  raw: unknown,
  refused: boolean,
  hasCalls: boolean,
): FinishReason {
  const reason = FROM_FINISH_REASON.get(raw) ?? "other";
  if (reason === "length") return reason;
  if (refused) return "content-filter";
  if (hasCalls && reason === "stop") return "tool-calls";
  return reason;
}

/** The canonical finish reason as a chat `finish_reason`. */
export function encodeFinishReason(reason: FinishReason): string {
  return TO_FINISH_REASON[reason];
}
