/**
 * xAI: an OpenAI-shaped REST surface (`https://api.x.ai/v1`, Bearer auth) for Responses, chat and
 * images, plus its own asynchronous video API.
 */
import type { ProviderEntry } from "../catalog/catalog.ts";
import { sendOpenAI } from "./openai.ts";
import type { Deadlines, UpstreamCall } from "./transport.ts";

/** Sends a call to xAI; the wire and auth are OpenAI's. */
export function sendXai(
  provider: ProviderEntry,
  call: UpstreamCall,
  abort: AbortController,
  deadlines: Deadlines,
): Promise<Response> {
  return sendOpenAI(provider, call, abort, deadlines);
}
