/**
 * The upstream state a Messages body names: a `container` (an id, or `{id}`), the caller's own, and
 * the thread it creates or continues (`thread`, see `thread.ts`) — a continued one held upstream is
 * the caller's own too, and its provider gets the call.
 */
import type { BodyNames, CallInput } from "../wire.ts";
import { threadOf } from "./thread.ts";

/**
 * Checks the body's container, if it names one (404 when it is not the caller's); the size of the
 * conversation the thread it continues upstream holds (0 when it continues none there).
 */
export function messagesState(
  input: CallInput,
  body: Record<string, unknown>,
): { contextTokens: number } {
  const container = body.container;
  if (container !== undefined && container !== null) {
    const id = typeof container === "object" ? (container as { id?: unknown }).id : container;
    if (id !== undefined) input.own(id, "container", "container");
  }
  const thread = threadOf(body);
  if (thread?.type !== "continue") return { contextTokens: 0 };
  return {
    contextTokens: input.own(thread.previous, "response", "thread.previous_message_id")
      .contextTokens,
  };
}

/** What a Messages body names: its `container`, and the thread it creates or continues. */
export function messagesNames(body: Record<string, unknown>): BodyNames {
  const thread = threadOf(body);
  const previous = thread?.type === "continue" ? [thread.previous] : [];
  return {
    objects: [body.container, ...previous],
    ...(previous.length ? { continues: previous } : {}),
    ...(thread ? { thread } : {}),
  };
}
