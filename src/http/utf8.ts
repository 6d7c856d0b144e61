/**
 * UTF-8 lengths and bytes of text. Long text is handed to `TextEncoder.encodeInto`: in Deno 2.9,
 * `TextEncoder.encode` of a long string (and `fetch`, which encodes a string body the same way)
 * takes about 35 times as long as `encodeInto` on an agent's 135 KB request.
 */

// deno-lint-ignore no-control-regex
const NON_ASCII = /[^\x00-\x7f]/;

/** Text at least this long is measured by encoding it natively (see `utf8Length`). */
const ENCODE_FROM = 256;
/** UTF-16 units encoded at a time: the scratch buffer holds three bytes for each. */
const ENCODE_CHUNK = 16_384;
const encoder = new TextEncoder();
let scratch: Uint8Array | undefined;

/**
 * The UTF-8 length of `text` in bytes, as `TextEncoder` would write it (a lone surrogate as the
 * replacement character, three bytes). Long text — an agent's conversation — is encoded natively
 * into a scratch buffer, a chunk at a time, about thirty times faster than reading it here.
 */
export function utf8Length(text: string): number {
  if (text.length < ENCODE_FROM) return shortUtf8Length(text);
  scratch ??= new Uint8Array(3 * ENCODE_CHUNK);
  let bytes = 0;
  for (let at = 0; at < text.length;) {
    let end = Math.min(text.length, at + ENCODE_CHUNK);
    // A surrogate pair is measured whole: split, each half would count as a replacement character.
    // A chunk that ends in a high surrogate leaves it to the next, where its pair (if any) is.
    if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end--;
    const chunk = at === 0 && end === text.length ? text : text.slice(at, end);
    bytes += encoder.encodeInto(chunk, scratch).written;
    at = end;
  }
  return bytes;
}

const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;

function shortUtf8Length(text: string): number {
  if (!NON_ASCII.test(text)) return text.length;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (isHighSurrogate(c) && isLowSurrogate(text.charCodeAt(i + 1))) {
      bytes += 4; // a surrogate pair: one 4-byte character
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * Text at least this long is long: encoded with `encodeInto` (see the module's doc), and sent as
 * its parts where it is made of some (`TextParts`).
 */
export const BYTES_FROM = 16_384;

/** `text` in UTF-8, as `TextEncoder.encode` writes it. */
export function utf8Bytes(text: string): Uint8Array<ArrayBuffer> {
  if (text.length < BYTES_FROM) return encoder.encode(text);
  // One byte a unit fits ASCII text exactly; other text is measured once it stops fitting.
  const ascii = new Uint8Array(text.length);
  const first = encoder.encodeInto(text, ascii);
  if (first.read === text.length) return ascii;
  const rest = text.slice(first.read);
  const whole = new Uint8Array(first.written + utf8Length(rest));
  whole.set(ascii.subarray(0, first.written));
  encoder.encodeInto(rest, whole.subarray(first.written));
  return whole;
}

/** The most the reused buffer of `utf8View` grows to; longer text gets a buffer of its own. */
const VIEW_MAX = 4 * 1024 * 1024;
let view: Uint8Array<ArrayBuffer> | undefined;

/**
 * Long text kept as the parts it was made of — a client's body with its model id replaced is its
 * text before the id, the new id and its text after — so that nothing copies it whole into fresh
 * memory to join them: V8 would, to encode a string made by `+` (135 KB for an agent's call, most
 * of that call's encoding time on a busy server). `fetchBody` encodes the parts one after another
 * into the reused buffer; `String()` joins them. No part may end inside a surrogate pair (encoded
 * alone, each half would be a replacement character).
 */
export class TextParts {
  constructor(readonly parts: readonly string[]) {}

  get length(): number {
    let length = 0;
    for (const part of this.parts) length += part.length;
    return length;
  }

  toString(): string {
    return this.parts.join("");
  }
}

/**
 * `text` in UTF-8 in a buffer this module reuses: valid only until the next call, for a consumer
 * that copies it at once, as `fetch` does with a request body (the Fetch standard's "extract a
 * body" copies a buffer source). A long body then reaches fresh memory once (`fetch`'s copy), not
 * twice. Text in parts is encoded part after part, never joined.
 */
export function utf8View(text: string | TextParts): Uint8Array<ArrayBuffer> {
  // Three bytes a UTF-16 unit at most: any text fits in one pass.
  const room = 3 * text.length;
  if (text.length < BYTES_FROM || room > VIEW_MAX) return utf8Bytes(String(text));
  if (!view || view.length < room) view = new Uint8Array(Math.min(VIEW_MAX, 2 * room));
  if (typeof text === "string") return view.subarray(0, encoder.encodeInto(text, view).written);
  let written = 0;
  for (const part of text.parts) {
    written += encoder.encodeInto(part, view.subarray(written)).written;
  }
  return view.subarray(0, written);
}

/**
 * `text` as a body for `fetch`, which copies it at once: long text encoded here into the reused
 * buffer (see `utf8View`: nothing may come between this and the `fetch`), short text as it is —
 * `fetch` encodes that as fast itself, in one copy.
 */
export function fetchBody(text: string | TextParts): string | Uint8Array<ArrayBuffer> {
  return typeof text === "string" && text.length < BYTES_FROM ? text : utf8View(text);
}
