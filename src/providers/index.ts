/** Provider family → the module that reaches it. */
import type { ProviderEntry } from "../catalog/catalog.ts";
import { sendOpenAI } from "./openai.ts";
import { sendXai } from "./xai.ts";
import { sendAnthropic } from "./anthropic.ts";
import { sendGemini } from "./gemini.ts";
import type { Deadlines, UpstreamCall } from "./transport.ts";

export type { Deadlines, UpstreamCall } from "./transport.ts";
export { upstreamDeadlines } from "./transport.ts";

type Send = (
  provider: ProviderEntry,
  call: UpstreamCall,
  abort: AbortController,
  deadlines: Deadlines,
) => Promise<Response>;

const SENDERS: Record<ProviderEntry["type"], Send> = {
  openai: sendOpenAI,
  xai: sendXai,
  anthropic: sendAnthropic,
  gemini: sendGemini,
};

/** Sends a call already in `provider`'s protocol; returns the upstream `Response` as is. */
export function send(
  provider: ProviderEntry,
  call: UpstreamCall,
  abort: AbortController,
  deadlines: Deadlines,
): Promise<Response> {
  return SENDERS[provider.type](provider, call, abort, deadlines);
}
