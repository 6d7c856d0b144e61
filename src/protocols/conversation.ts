/**
 * What the four protocols' conversation extractors share (see `ConversationId`): a name a client
 * sent, bounded, and the hash of a request's cacheable prefix when it sent none.
 */
import { NATIVE_FROM, sha256 } from "../sha256.ts";
import { hashesOf } from "../name_hash.ts";
import type { ConversationId } from "./wire.ts";

/** The longest client-sent name taken (longer ones are hashed with the prefix instead). */
const MAX_NAME = 256;

/**
 * A client's name of its conversation, `kind:value`, when `value` is a usable one (`parts`: its
 * cacheable prefix, see `ConversationId`).
 */
export function named(
  kind: string,
  value: unknown,
  parts: readonly unknown[],
  extended: boolean,
  chained = false,
): ConversationId | undefined {
  if (typeof value !== "string" || !value || value.length > MAX_NAME) return undefined;
  return { id: `${kind}:${value}`, extended, parts, ...(chained ? { chained } : {}) };
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
 * The conversation named by its cacheable prefix: a 64-bit hash of `parts` (the system prompt,
 * the tools, the first turn — whatever of them the request has), their cache breakpoints left out.
 */
export function prefixed(
  parts: readonly unknown[],
  extended: boolean,
  chained = false,
): ConversationId {
  const { hex, short } = hashOf(prefixText(parts));
  return {
    id: `prefix:${hex}`,
    extended,
    parts,
    prefixHash: short,
    ...(chained ? { chained } : {}),
  };
}

/** The text of a prefix's parts, their cache breakpoints left out. */
function prefixText(parts: readonly unknown[]): string {
  return parts.map((part) =>
    typeof part === "string" ? part : withoutBreakpoints(JSON.stringify(part ?? null))
  ).join("\u0000");
}

/**
 * A nonzero 32-bit hash of a conversation's cacheable prefix as the client sent it (`parts`), to
 * tell whether two calls of one conversation began alike.
 */
export function prefixHash(parts: readonly unknown[]): number {
  return hashOf(prefixText(parts)).short;
}

/**
 * A 64-bit hash of `text` as 16 hex digits, and a nonzero 32-bit one: two 32-bit FNV-1a hashes in
 * JavaScript for a short text (calling a native hash costs more), SHA-256's first 8 bytes for a
 * long one.
 */
function hashOf(text: string): { hex: string; short: number } {
  if (text.length > NATIVE_FROM) {
    const digest = sha256(text);
    const short = digest[0] | (digest[1] << 8) | (digest[2] << 16) | (digest[3] << 24);
    return { hex: digest.subarray(0, 8).toHex(), short: short || 1 };
  }
  const [a, b] = hashesOf(text);
  return { hex: hex(a) + hex(b), short: a };
}

/** A 32-bit hash as 8 hex digits. */
function hex(hash: number): string {
  return (hash >>> 0).toString(16).padStart(8, "0");
}

/** The items of a conversation up to and including its first user turn (all when it has none). */
export function firstTurn(items: unknown[], isUser: (item: unknown) => boolean): unknown[] {
  const at = items.findIndex(isUser);
  return at < 0 ? items : items.slice(0, at + 1);
}
