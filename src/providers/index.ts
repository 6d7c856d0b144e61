/** Provider family → the module that reaches it. */
import type { ProviderEntry } from "../catalog/catalog.ts";
import { sendOpenAI } from "./openai.ts";
import { sendXai } from "./xai.ts";
import type { UpstreamCall } from "./transport.ts";

export type { UpstreamCall } from "./transport.ts";

type Send = (
  provider: ProviderEntry,
  call: UpstreamCall,
  signal: AbortSignal,
  timeoutMs: number,
) => Promise<Response>;

const SENDERS: Partial<Record<ProviderEntry["type"], Send>> = {
  openai: sendOpenAI,
  xai: sendXai,
};

/** Sends a call already in `provider`'s protocol; returns the upstream `Response` as is. */
export function send(
  provider: ProviderEntry,
  call: UpstreamCall,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<Response> {
  const sender = SENDERS[provider.type];
  if (!sender) throw new Error(`no provider module for type ${provider.type}`);
  return sender(provider, call, signal, timeoutMs);
}
