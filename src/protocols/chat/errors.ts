/**
 * The chat error envelope in a stream (`openai-other.md` §1.4): a chunk with a top-level `error`,
 * which openai-node throws on — the one the gateway writes for an upstream that cut the stream or
 * failed, and an upstream's own read back as a canonical error. The envelope of a whole error
 * answer is `http/errors.ts`'s (`openai`).
 */
import { errorBody } from "../../http/errors.ts";
import { asObject } from "../../http/json.ts";
import { encodeSse } from "../../http/sse.ts";
import type { CanonicalEvent } from "../../translate/ir.ts";

/** A mid-stream error chunk: OpenAI's envelope of a 502 (`server_error`, `upstream_error`). */
export function errorChunk(message: string): string {
  return encodeSse(JSON.stringify(errorBody("openai", 502, message)));
}

/** The mid-stream error chunk for a stream the upstream cut. */
export function streamErrorChunk(): Uint8Array {
  return new TextEncoder().encode(
    errorChunk("The upstream provider ended the stream unexpectedly."),
  );
}

/** An upstream chunk's `error` member (an object, or a bare message) as a canonical error. */
export function readError(error: unknown): CanonicalEvent {
  const body = asObject(error);
  const message = typeof error === "string"
    ? error
    : typeof body.message === "string"
    ? body.message
    : "The upstream provider failed.";
  const code = typeof body.code === "string"
    ? body.code
    : typeof body.type === "string"
    ? body.type
    : undefined;
  return { type: "error", message, ...(code ? { code } : {}) };
}
