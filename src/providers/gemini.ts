/**
 * Google Gemini (generateContent family): `x-goog-api-key` against
 * `https://generativelanguage.googleapis.com`; the model and action are in the path.
 */
import type { ProviderEntry } from "../catalog/catalog.ts";
import { type Deadlines, sendWithAuth, type UpstreamCall } from "./transport.ts";

/** Sends a call to a Gemini upstream with the operator's key (never in the URL). */
export function sendGemini(
  provider: ProviderEntry,
  call: UpstreamCall,
  abort: AbortController,
  deadlines: Deadlines,
): Promise<Response> {
  return sendWithAuth(provider, call, abort, deadlines, { "x-goog-api-key": provider.apiKey });
}
