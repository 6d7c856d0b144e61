/** Messages-protocol stream pieces the gateway itself writes. */
import { encodeSse } from "../../http/sse.ts";

/** The `error` event for a stream the upstream cut (the SDK raises it as an APIError). */
export function streamErrorEvent(): Uint8Array {
  const data = {
    type: "error",
    error: { type: "api_error", message: "The upstream provider ended the stream unexpectedly." },
  };
  return new TextEncoder().encode(encodeSse(JSON.stringify(data), "error"));
}
