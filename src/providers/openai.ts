/**
 * OpenAI: `Authorization: Bearer` against `https://api.openai.com/v1` (base URL includes `/v1`).
 */
import type { ProviderEntry } from "../catalog/catalog.ts";
import { type Deadlines, sendWithAuth, type UpstreamCall } from "./transport.ts";

/** Sends a call to an OpenAI-protocol upstream with the operator's key. */
export function sendOpenAI(
  provider: ProviderEntry,
  call: UpstreamCall,
  abort: AbortController,
  deadlines: Deadlines,
): Promise<Response> {
  return sendWithAuth(provider, call, abort, deadlines, {
    authorization: `Bearer ${provider.apiKey}`,
  });
}
