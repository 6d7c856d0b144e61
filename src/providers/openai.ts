/**
 * OpenAI: `Authorization: Bearer` against `https://api.openai.com/v1` (base URL includes `/v1`).
 */
import type { ProviderEntry } from "../catalog/catalog.ts";
import { fetchUpstream, type UpstreamCall } from "./transport.ts";

/** Sends a call to an OpenAI-protocol upstream with the operator's key. */
export function sendOpenAI(
  provider: ProviderEntry,
  call: UpstreamCall,
  abort: AbortController,
  timeoutMs: number,
): Promise<Response> {
  return fetchUpstream(
    `${provider.baseUrl}${call.path}`,
    {
      method: call.method ?? "POST",
      headers: {
        authorization: `Bearer ${provider.apiKey}`,
        ...(call.body ? { "content-type": "application/json" } : {}),
        ...call.headers,
      },
      body: call.body,
    },
    abort,
    timeoutMs,
  );
}
