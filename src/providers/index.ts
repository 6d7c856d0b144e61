/**
 * Reaching an upstream: the call's surface (by protocol) gives the base URL, the auth header (as
 * data, see `surfaces.ts`) and fixed headers; a family's quirks adjust the call's own headers.
 */
import type { ProviderEntry, Surface } from "../catalog/catalog.ts";
import type { ProtocolId } from "../translate/ir.ts";
import { forwardedHeaders } from "./anthropic.ts";
import { type Deadlines, sendRequest, type UpstreamCall } from "./transport.ts";

export type { Deadlines, UpstreamCall } from "./transport.ts";
export { upstreamDeadlines } from "./transport.ts";

/** The provider's surface for `protocol` (its first when none is named), if it speaks it. */
export function surfaceFor(provider: ProviderEntry, protocol?: ProtocolId): Surface | undefined {
  return protocol ? provider.surfaces.find((s) => s.protocol === protocol) : provider.surfaces[0];
}

/** The protocols `provider` speaks natively, the first preferred. */
export function protocolsOf(provider: ProviderEntry): ProtocolId[] {
  return provider.surfaces.map((s) => s.protocol);
}

/** Sends a call already in the surface's protocol; returns the upstream `Response` as is. */
export function send(
  provider: ProviderEntry,
  call: UpstreamCall,
  abort: AbortController,
  deadlines: Deadlines,
): Promise<Response> {
  const surface = surfaceFor(provider, call.protocol);
  if (!surface) throw new Error(`provider ${provider.name} has no ${call.protocol} surface`);
  const own = surface.protocol === "messages"
    ? forwardedHeaders(provider, call.headers ?? {})
    : call.headers ?? {};
  const auth: Record<string, string> = surface.auth && provider.apiKey
    ? { [surface.auth.header]: `${surface.auth.prefix ?? ""}${provider.apiKey}` }
    : {};
  return sendRequest(
    `${surface.baseUrl}${call.path}`,
    call,
    { ...auth, ...surface.headers, ...own },
    abort,
    deadlines,
  );
}
