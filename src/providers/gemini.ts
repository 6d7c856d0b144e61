/**
 * Google Gemini (generateContent family): `x-goog-api-key` against
 * `https://generativelanguage.googleapis.com`; the model and action are in the path.
 */
import type { ProviderEntry } from "../catalog/catalog.ts";
import { fetchUpstream, type UpstreamCall } from "./transport.ts";

/** Sends a call to a Gemini upstream with the operator's key (never in the URL). */
export function sendGemini(
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
        "x-goog-api-key": provider.apiKey,
        ...(call.body ? { "content-type": "application/json" } : {}),
        ...call.headers,
      },
      body: call.body,
    },
    abort,
    timeoutMs,
  );
}
