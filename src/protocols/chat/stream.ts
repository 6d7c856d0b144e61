/**
 * Chat-completions stream pieces the gateway writes itself: dropping the usage chunk it asked the
 * upstream for when the client did not, and the error payload for streams the upstream cuts.
 */
import { encodeSse, type SseEvent } from "../../http/sse.ts";

/** `"usage":null` as a member of a compact JSON object (quotes inside strings are escaped). */
const NULL_USAGE = /,\s*"usage"\s*:\s*null(?=\s*[,}])|"usage"\s*:\s*null\s*,/g;

/**
 * Re-encodes one chunk for a client that did not ask for usage, as the upstream would have sent
 * it: the usage-only chunk (`choices: []`) is dropped, and the `usage` member (null, or the
 * usage some vendors put in the last choice) removed; everything else is unchanged.
 */
export function withoutUsage(event: SseEvent): string | null {
  const data = event.data().replace(NULL_USAGE, "");
  if (/"usage"\s*:\s*\{/.test(data)) {
    try {
      const chunk = JSON.parse(data);
      if (Array.isArray(chunk.choices) && chunk.choices.length === 0) return null;
      delete chunk.usage;
      for (const choice of chunk.choices ?? []) delete choice.usage;
      return encodeSse(JSON.stringify(chunk), event.event || undefined);
    } catch { /* not a JSON chunk: relayed as it is */ }
  }
  return encodeSse(data, event.event || undefined);
}

/** The mid-stream error payload (top-level `error`, which openai-node throws on). */
export function streamErrorChunk(): Uint8Array {
  const error = {
    message: "The upstream provider ended the stream unexpectedly.",
    type: "server_error",
    param: null,
    code: "upstream_error",
  };
  return new TextEncoder().encode(encodeSse(JSON.stringify({ error })));
}
