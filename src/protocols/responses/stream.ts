/** Responses-protocol stream pieces the gateway itself writes. */
import { encodeSse } from "../../http/sse.ts";

/** The `error` event sent when the upstream cuts a stream mid-way (openai-node throws on it). */
export function streamErrorEvent(): Uint8Array {
  const data = {
    type: "error",
    code: "upstream_error",
    message: "The upstream provider ended the stream unexpectedly.",
    param: null,
  };
  return new TextEncoder().encode(encodeSse(JSON.stringify(data), "error"));
}
