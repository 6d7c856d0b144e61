/**
 * OpenAI: `Authorization: Bearer` against `https://api.openai.com/v1` (base URL includes `/v1`).
 */
import type { ProviderEntry } from "../catalog/catalog.ts";
import { sendWithAuth, type UpstreamCall } from "./transport.ts";

/** Sends a call to an OpenAI-protocol upstream with the operator's key. */
export function sendOpenAI(
  provider: ProviderEntry,
  call: UpstreamCall,
  abort: AbortController,
  timeoutMs: number,
): Promise<Response> {
  return sendWithAuth(provider, call, abort, timeoutMs, {
    authorization: `Bearer ${provider.apiKey}`,
  });
}
