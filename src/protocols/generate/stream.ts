/** Content-generation stream pieces the gateway itself writes. */
import { encodeSse } from "../../http/sse.ts";

/** A fragment carrying `error` (js-genai throws on it) for a stream the upstream cut. */
export function streamErrorEvent(): Uint8Array {
  const data = {
    error: {
      code: 502,
      message: "The upstream provider ended the stream unexpectedly.",
      status: "UNAVAILABLE",
    },
  };
  return new TextEncoder().encode(encodeSse(JSON.stringify(data), undefined, "\r\n"));
}
