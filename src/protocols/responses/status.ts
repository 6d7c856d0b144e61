/**
 * A Responses answer's `status` and `incomplete_details.reason` ⇄ the canonical finish reason
 * (pure; `openai-responses.md` §4, `translation.md` §7). Responses has no finish reason of its own:
 * an answer is `completed`, or `incomplete` for length and content filtering (tool calls do not
 * change it), or `failed`.
 */
import type { FinishReason } from "../../translate/ir.ts";

/** The status (and incomplete reason) of a finished answer. */
export interface ResponsesStatus {
  status: "completed" | "incomplete";
  incomplete?: "max_output_tokens" | "content_filter";
}

/**
 * A Responses status and incomplete reason as the canonical finish reason: `tool-calls` when the
 * answer called any, `content-filter` when a completed answer refused.
 */
export function decodeStatus(
  status: unknown,
  incomplete: unknown,
  hasToolCalls: boolean,
  refused: boolean,
): FinishReason {
  if (status === "incomplete") {
    return incomplete === "content_filter" ? "content-filter" : "length";
  }
  if (status === "failed") return "error";
  if (hasToolCalls) return "tool-calls";
  return refused ? "content-filter" : "stop";
}

/** The Responses status of a finished answer. */
export function encodeStatus(reason: FinishReason): ResponsesStatus {
  if (reason === "length") return { status: "incomplete", incomplete: "max_output_tokens" };
  if (reason === "content-filter") return { status: "incomplete", incomplete: "content_filter" };
  return { status: "completed" };
}
