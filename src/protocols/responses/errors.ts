/**
 * The Responses error envelope in a stream (`openai-responses.md` §6): the `error` event that ends
 * a stream (openai-node throws on it) — the one the gateway writes for an upstream that cut it,
 * and an upstream's own (an `error` event, or a failed response's `error`) read back as a
 * canonical error. The envelope of a whole error answer is `http/errors.ts`'s (`openai`).
 */
import { asObject } from "../../http/json.ts";
import { encodeSse } from "../../http/sse.ts";
import type { CanonicalEvent, Json } from "../../translate/ir.ts";

/** An `error` event's data (before its `sequence_number`, when the stream numbers its events). */
export function errorData(message: string, code = "upstream_error"): Json {
  return { type: "error", code, message, param: null };
}

/** The `error` event sent when the upstream cuts a stream mid-way. */
export function streamErrorEvent(): Uint8Array {
  const data = errorData("The upstream provider ended the stream unexpectedly.");
  return new TextEncoder().encode(encodeSse(JSON.stringify(data), "error"));
}

/** An upstream's error object as a canonical error. */
export function readError(error: unknown): CanonicalEvent {
  const body = asObject(error);
  return {
    type: "error",
    message: typeof body.message === "string" ? body.message : "The upstream failed.",
    ...(typeof body.code === "string" ? { code: body.code } : {}),
  };
}
