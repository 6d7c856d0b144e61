/**
 * Messages threads (`anthropic-beta: message-threads-2026-08-12`) as the protocol states them:
 * the request's `thread` — `{type: "create"}`, or `{type: "continue", previous_message_id}` naming
 * the answer whose conversation the request continues with only its new messages (the thread
 * keeps `system` and `tools` from the request that created it) — and the errors Anthropic answers
 * for a thread, whose `error.details.error_code` the SDKs act on: `thread_not_found` (404: the
 * SDK replays the whole conversation under a new thread) and `thread_unsupported_request` (400: it
 * sends the conversation without a thread). The answer itself is an ordinary message: its `id` is
 * what the next turn continues.
 */
import * as v from "valibot";
import { GatewayError } from "../../http/errors.ts";
import type { ThreadName } from "../wire.ts";

/** The beta a client names to use threads. */
export const THREADS_BETA = "message-threads-2026-08-12";

/** The longest `previous_message_id` read. */
const MAX_ID = 256;

/** The request's `thread` field, as the schema reads it. */
export const ThreadField = v.nullish(
  v.variant("type", [
    v.looseObject({ type: v.literal("create") }),
    v.looseObject({
      type: v.literal("continue"),
      previous_message_id: v.pipe(
        v.string("must be a string"),
        v.minLength(1, "must not be empty"),
        v.maxLength(MAX_ID, `must be at most ${MAX_ID} characters`),
      ),
    }),
  ], 'must be {"type": "create"} or {"type": "continue", "previous_message_id": …}'),
);

/** The thread a (validated) body creates or continues; undefined when it names none. */
export function threadOf(body: Record<string, unknown>): ThreadName | undefined {
  const thread = body.thread as { type?: unknown; previous_message_id?: unknown } | null;
  if (thread?.type === "create") return { type: "create" };
  if (thread?.type === "continue" && typeof thread.previous_message_id === "string") {
    return { type: "continue", previous: thread.previous_message_id };
  }
  return undefined;
}

/** The 404 for a thread that cannot be continued here: unknown, expired, or another account's. */
export function threadNotFound(id: string, why = ""): GatewayError {
  const shown = id.length > 64 ? `${id.slice(0, 64)}…` : id;
  return new GatewayError(
    404,
    `No thread was found for previous_message_id '${shown}'${why}. Send the whole conversation again with thread: {"type": "create"}.`,
    { type: "not_found_error", details: { error_code: "thread_not_found" } },
  );
}

/** The 400 for a request that cannot be threaded here (`why`: the reason, a sentence). */
export function threadUnsupported(why: string): GatewayError {
  return new GatewayError(
    400,
    `${why} Send the whole conversation without \`thread\`.`,
    { type: "invalid_request_error", details: { error_code: "thread_unsupported_request" } },
  );
}
