/**
 * What the four protocols' conversation extractors share (see `ConversationId`): a name a client
 * sent, bounded, and the hash of a request's cacheable prefix when it sent none.
 */
import { createHash } from "node:crypto";
import type { ConversationId } from "./wire.ts";

/** The longest client-sent name taken (longer ones are hashed with the prefix instead). */
const MAX_NAME = 256;

/** A client's name of its conversation, `kind:value`, when `value` is a usable one. */
export function named(
  kind: string,
  value: unknown,
  extended: boolean,
  chained = false,
): ConversationId | undefined {
  if (typeof value !== "string" || !value || value.length > MAX_NAME) return undefined;
  return { id: `${kind}:${value}`, extended, ...(chained ? { chained } : {}) };
}

/**
 * JSON text without its cache breakpoints (`"cache_control":{…}` members, flat objects): clients
 * move them from turn to turn, to the last message.
 */
function withoutBreakpoints(json: string): string {
  if (!json.includes('"cache_control"')) return json;
  return json.replace(/,"cache_control":\{[^{}]*\}/g, "")
    .replace(/"cache_control":\{[^{}]*\},?/g, "");
}

/**
 * The conversation named by its cacheable prefix: a hash of `parts` (the system prompt, the tools,
 * the first turn — whatever of them the request has), their cache breakpoints left out.
 */
export function prefixed(parts: unknown[], extended: boolean, chained = false): ConversationId {
  const hash = createHash("sha256");
  for (const part of parts) {
    const text = typeof part === "string" ? part : withoutBreakpoints(JSON.stringify(part ?? null));
    hash.update(text).update("\u0000");
  }
  const id = `prefix:${hash.digest("base64url").slice(0, 22)}`;
  return { id, extended, ...(chained ? { chained } : {}) };
}

/** The items of a conversation up to and including its first user turn (all when it has none). */
export function firstTurn(items: unknown[], isUser: (item: unknown) => boolean): unknown[] {
  const at = items.findIndex(isUser);
  return at < 0 ? items : items.slice(0, at + 1);
}
