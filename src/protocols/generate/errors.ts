/**
 * The generateContent error envelope in a stream (`gemini.md` §4): a last fragment carrying
 * Google's `error` (js-genai throws on it), as an SSE event or as the JSON array's last element,
 * the array then closed so the client reads valid JSON that ends in an error — the one the gateway
 * writes for an upstream that cut the stream or failed, and an upstream's own read back as a
 * canonical error. The envelope of a whole error answer is `http/errors.ts`'s (`google`).
 */
import { errorBody } from "../../http/errors.ts";
import { encodeSse } from "../../http/sse.ts";
import type { CanonicalEvent, Json } from "../../translate/ir.ts";

const encoder = new TextEncoder();

/** Google's envelope for a stream the upstream cut. */
const CUT = errorBody("google", 502, "The upstream provider ended the stream unexpectedly.");

/**
 * The fragment that ends a stream with an error: an SSE event (CRLF, as Google writes them), or
 * the array's last element and its end (the whole array when nothing was `started`).
 */
export function errorFragment(body: unknown, jsonArray: boolean, started: boolean): string {
  const text = JSON.stringify(body);
  return jsonArray ? `${started ? ",\r\n" : "["}${text}\n]` : encodeSse(text, undefined, "\r\n");
}

/** The gateway's own error fragment: an upstream's error status kept, anything else a 502. */
export function gatewayErrorFragment(
  message: string,
  status: number | undefined,
  jsonArray: boolean,
  started: boolean,
): string {
  const code = status && status >= 400 && status < 600 ? status : 502;
  return errorFragment(errorBody("google", code, message), jsonArray, started);
}

/** The SSE event carrying `error` for a stream the upstream cut. */
export function streamErrorEvent(): Uint8Array {
  return encoder.encode(errorFragment(CUT, false, false));
}

/** The end of a cut JSON-array stream: a last element carrying `error`, and the array closed. */
export function streamErrorElement(started: boolean): Uint8Array {
  return encoder.encode(errorFragment(CUT, true, started));
}

/** An upstream fragment's `error` as a canonical error (its `status` as the code). */
export function readError(error: Json): CanonicalEvent {
  return {
    type: "error",
    message: typeof error.message === "string" && error.message
      ? error.message
      : "The upstream provider failed.",
    ...(typeof error.status === "string" ? { code: error.status } : {}),
    ...(typeof error.code === "number" ? { status: error.code } : {}),
  };
}
