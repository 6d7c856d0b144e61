/**
 * Opaque provider state carried through a client of another protocol (pure). A translated answer
 * gives the client a token where its protocol keeps such state (a Messages thinking block's
 * `signature`, a Responses reasoning item's `encrypted_content`, a Gemini part's
 * `thoughtSignature`); the client replays it as it replays its history, and the gateway restores
 * the provider's own bytes when the next call goes to that provider — and drops it otherwise.
 * A token names the provider that issued the state, so it is never sent anywhere else.
 */
import type { Opaque } from "./ir.ts";

/** Every token starts with this; native provider values never do. */
export const TOKEN_PREFIX = "swy1.";

const KINDS = new Set<Opaque["kind"]>([
  "thinking-signature",
  "redacted-thinking",
  "encrypted-reasoning",
  "thought-signature",
]);

function toBase64Url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function fromBase64Url(text: string): string | null {
  try {
    const binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
    return new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from(binary, (c) => c.charCodeAt(0)),
    );
  } catch {
    return null;
  }
}

/** The token a client carries for `opaque` (and, for Anthropic thinking, its exact text). */
export function toToken(opaque: Opaque, text?: string): string {
  const body: Record<string, string> = { p: opaque.provider, k: opaque.kind, v: opaque.value };
  if (opaque.itemId) body.i = opaque.itemId;
  if (text) body.t = text;
  return TOKEN_PREFIX + toBase64Url(JSON.stringify(body));
}

/** The state a token carries, or null when `value` is not a well-formed token. */
export function fromToken(value: unknown): { opaque: Opaque; text?: string } | null {
  if (typeof value !== "string" || !value.startsWith(TOKEN_PREFIX)) return null;
  const json = fromBase64Url(value.slice(TOKEN_PREFIX.length));
  if (json === null) return null;
  try {
    const body = JSON.parse(json) as Record<string, unknown>;
    const { p, k, v, i, t } = body;
    if (typeof p !== "string" || typeof v !== "string" || !KINDS.has(k as Opaque["kind"])) {
      return null;
    }
    return {
      opaque: {
        provider: p,
        kind: k as Opaque["kind"],
        value: v,
        ...(typeof i === "string" ? { itemId: i } : {}),
      },
      ...(typeof t === "string" ? { text: t } : {}),
    };
  } catch {
    return null;
  }
}

/**
 * The opaque state a client sent in a protocol's own slot: a token's content, or a native value
 * (from the provider itself, when the client talked to it directly) tagged with no provider, so
 * it is never replayed across.
 */
export function readOpaque(value: unknown, kind: Opaque["kind"]): Opaque | undefined {
  if (typeof value !== "string" || !value) return undefined;
  return fromToken(value)?.opaque ?? { provider: "", kind, value };
}

/** Whether `opaque` may be sent to `provider` as state of `kind`. */
export function replayable(
  opaque: Opaque | undefined,
  provider: string,
  ...kinds: Opaque["kind"][]
): boolean {
  return !!opaque && opaque.provider !== "" && opaque.provider === provider &&
    kinds.includes(opaque.kind);
}

/**
 * A Gemini thought signature carried by a client of another protocol on a reasoning item just
 * before a call (its protocol has no slot on the call) goes back onto that call.
 */
export function signaturesOntoCalls<T extends { type: string; opaque?: Opaque; text?: string }>(
  parts: T[],
): T[] {
  const out: T[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    const next = parts[i + 1];
    if (
      part.type === "reasoning" && part.opaque?.kind === "thought-signature" && !part.text &&
      next?.type === "tool-call" && !next.opaque
    ) {
      out.push({ ...next, opaque: part.opaque });
      i++;
    } else out.push(part);
  }
  return out;
}
