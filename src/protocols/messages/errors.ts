/**
 * The Messages error envelope in a stream (`anthropic-messages.md` §5): the `error` event that ends
 * a stream — the one the gateway writes for an upstream that cut it, and an upstream's own read
 * back as a canonical error. The envelope of a whole error answer is `http/errors.ts`'s
 * (`anthropic`).
 */
import { errorBody } from "../../http/errors.ts";
import { asObject } from "../../http/json.ts";
import { encodeSse } from "../../http/sse.ts";
import type { CanonicalEvent } from "../../translate/ir.ts";

/** An `error` event: `overloaded_error` for a 529, else `api_error` (the SDK raises either). */
export function errorEvent(message: string, status?: number): string {
  const type = status === 529 ? "overloaded_error" : "api_error";
  return encodeSse(JSON.stringify(errorBody("anthropic", 502, message, { type })), "error");
}

/** The `error` event for a stream the upstream cut (the SDK raises it as an APIError). */
export function streamErrorEvent(): Uint8Array {
  return new TextEncoder().encode(
    errorEvent("The upstream provider ended the stream unexpectedly."),
  );
}

/** An upstream's `error` event data as a canonical error (its `error.type` as the code). */
export function readError(data: Record<string, unknown>): CanonicalEvent {
  const error = asObject(data.error);
  return {
    type: "error",
    message: typeof error.message === "string" ? error.message : "The upstream provider failed.",
    ...(typeof error.type === "string" ? { code: error.type } : {}),
  };
}
