/** The upstream state a Messages body names: a `container` (an id, or `{id}`), the caller's own. */
import type { BodyNames, CallInput } from "../wire.ts";

/** Checks the body's container, if it names one (404 when it is not the caller's). */
export function messagesState(input: CallInput, body: Record<string, unknown>): void {
  const container = body.container;
  if (container === undefined || container === null) return;
  const id = typeof container === "object" ? (container as { id?: unknown }).id : container;
  if (id !== undefined) input.own(id, "container", "container");
}

/** What a Messages body names: its `container`. */
export function messagesNames(body: Record<string, unknown>): BodyNames {
  return { objects: [body.container] };
}
