/**
 * Token estimates for what the upstream has not counted (yet): one estimator for every protocol.
 * Output relayed on a stream is estimated at one token per four bytes of UTF-8 (English text runs
 * about four bytes per token; CJK three bytes per character and about one token each). Reservations
 * use a bound instead: one token per two bytes of prompt text, so ordinary text never costs more
 * than was held. Pure; every walk is iterative, so no body can overflow the stack.
 */

import { utf8Length } from "../http/utf8.ts";

/** Estimated tokens for `bytes` of UTF-8 text: one per four bytes, rounded up. */
export function tokensForBytes(bytes: number): number {
  return Math.ceil(bytes / 4);
}

/** Tokens reserved for one image, or one file or media item referenced by id or URL. */
export const MEDIA_TOKENS = 3_000;
/** Bytes a number counts as: one token of the typical estimate, two of the bound. */
const NUMBER_BYTES = 4;
/** Structural tokens reserved per JSON object (message and tool framing upstream). */
const OBJECT_TOKENS = 4;

/** What a request's input may cost: a typical estimate and a bound for the reservation. */
export interface InputEstimate {
  /** Typical input tokens (one per four bytes of text, media at their allowance). */
  typical: number;
  /** Upper bound on input tokens for ordinary text (one per two bytes, plus framing). */
  bound: number;
}

/** Keys whose long string values are base64 media, not prompt text. */
const MEDIA_KEYS = new Set(["data", "file_data", "b64_json", "image_url", "url"]);
/** Keys that name content held elsewhere (a file by id or URI), whose size the gateway can't see. */
const REFERENCE_KEYS = new Set(["file_id", "fileUri", "file_uri", "file_url"]);
const MIME_KEYS = ["mimeType", "mime_type", "media_type"];

type Json = Record<string, unknown>;

function isImage(owner: Json, value: string): boolean {
  if (value.startsWith("data:")) return value.startsWith("data:image/");
  return MIME_KEYS.some((key) => {
    const mime = owner[key];
    return typeof mime === "string" && mime.startsWith("image/");
  });
}

/** Tokens for one string found under `key` of `owner`. */
function stringTokens(key: string, value: string, owner: Json): { media: number; bytes: number } {
  if (REFERENCE_KEYS.has(key)) return { media: MEDIA_TOKENS, bytes: 0 };
  if (MEDIA_KEYS.has(key)) {
    if (/^https?:\/\//.test(value) && (key === "image_url" || owner.type === "url")) {
      return { media: MEDIA_TOKENS, bytes: 0 };
    }
    if (value.length > 512 && (key !== "url" || value.startsWith("data:"))) {
      // Images cost a fixed number of tokens whatever their bytes; documents about their size.
      return {
        media: isImage(owner, value) ? MEDIA_TOKENS : Math.ceil(value.length / 4),
        bytes: 0,
      };
    }
  }
  return { media: 0, bytes: utf8Length(value) };
}

/**
 * Estimates the input tokens of a request body: its strings and keys as text, base64 images and
 * referenced files at `MEDIA_TOKENS` each, inline documents by their size.
 */
export function estimateInput(body: unknown): InputEstimate {
  let bytes = 0;
  let media = 0;
  let objects = 0;
  const stack: unknown[] = [body];
  while (stack.length) {
    const value = stack.pop();
    if (typeof value === "string") {
      bytes += utf8Length(value);
    } else if (typeof value === "number") {
      bytes += NUMBER_BYTES; // token ids (embeddings) are a token each
    } else if (Array.isArray(value)) {
      for (const item of value) stack.push(item);
    } else if (value !== null && typeof value === "object") {
      objects++;
      const owner = value as Json;
      for (const key in owner) {
        const item = owner[key];
        bytes += key.length;
        if (typeof item === "string") {
          const t = stringTokens(key, item, owner);
          bytes += t.bytes;
          media += t.media;
        } else if (typeof item === "number") {
          bytes += NUMBER_BYTES;
        } else if (item !== null && typeof item === "object") {
          stack.push(item);
        }
      }
    }
  }
  return {
    typical: Math.max(1, tokensForBytes(bytes) + media),
    bound: Math.ceil(bytes / 2) + media + OBJECT_TOKENS * objects + 16,
  };
}
