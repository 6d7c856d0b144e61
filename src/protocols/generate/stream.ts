/** Content-generation stream pieces the gateway itself writes. */
import { encodeSse } from "../../http/sse.ts";

const encoder = new TextEncoder();
const CUT = {
  error: {
    code: 502,
    message: "The upstream provider ended the stream unexpectedly.",
    status: "UNAVAILABLE",
  },
};

/** A fragment carrying `error` (js-genai throws on it) for an SSE stream the upstream cut. */
export function streamErrorEvent(): Uint8Array {
  return encoder.encode(encodeSse(JSON.stringify(CUT), undefined, "\r\n"));
}

/**
 * The end of a cut JSON-array stream: a last element carrying `error`, and the array closed (or a
 * whole array of it when nothing was sent), so the client reads valid JSON that ends in an error.
 */
export function streamErrorElement(started: boolean): Uint8Array {
  return encoder.encode(`${started ? ",\r\n" : "["}${JSON.stringify(CUT)}\n]`);
}
