/**
 * Reaching an upstream: the call's surface (by protocol) gives the base URL, the auth header (as
 * data, see `catalog/surfaces.ts`) and fixed headers; a family's quirks adjust the call's own headers.
 */
import type { ProviderEntry, ProviderKey, Surface } from "../catalog/catalog.ts";
import { credentialsRefused, GatewayError, retryAfterSeconds } from "../http/errors.ts";
import { type CallRoute, retryAfterMs } from "../routing/attempts.ts";
import { keyAnswered, keyTurns, keyUsable, refuseKey, restKey } from "../routing/keys.ts";
import { keyRefusal, readBounded } from "./key_failure.ts";
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

/** Whether a request body can be sent again (a streamed upload cannot). */
export function replayable(body: UpstreamCall["body"]): boolean {
  return body === undefined || body === null || typeof body === "string" ||
    body instanceof Uint8Array;
}

/** An attempt's own abort controller, aborted with the call's (the client went away). */
function attemptAbort(call: AbortController): AbortController {
  const own = new AbortController();
  if (call.signal.aborted) own.abort();
  else call.signal.addEventListener("abort", () => own.abort(), { once: true });
  return own;
}

/** Whether an upstream error refuses the key (reading a 400's body to tell; see `keyRefusal`). */
async function refusal(
  response: Response,
): Promise<{ refused: "key" | "model" | null; response: Response }> {
  const { status } = response;
  if (status !== 400) return { refused: keyRefusal(status, ""), response };
  const text = await readBounded(response);
  const copy = new Response(text, {
    status,
    statusText: response.statusText,
    headers: response.headers,
  });
  return { refused: keyRefusal(status, text), response: copy };
}

/**
 * Sends a call already in the surface's protocol; returns the upstream `Response` as is. The call
 * takes the provider's keys in turn (see `routing/keys.ts`): a key answered with 429 rests (when
 * the provider has other keys or the call other deployments) and a key refused (401, or 403 for
 * the deployment) is taken out, and the call moves on to the next key while `route` allows
 * another attempt, `routing.retryOn` names 429 (for a rate limit), and the body can be sent again. The last answer is returned whatever it is.
 * Throws a `GatewayError`: 429 when every key rests, 502 when every key was refused, and the
 * transport's 502/504 when the upstream cannot be reached.
 */
export async function send(
  provider: ProviderEntry,
  call: UpstreamCall,
  abort: AbortController,
  deadlines: Deadlines,
  route: CallRoute,
): Promise<Response> {
  const surface = surfaceFor(provider, call.protocol);
  if (!surface) throw new Error(`provider ${provider.name} has no ${call.protocol} surface`);
  const own = surface.protocol === "messages"
    ? forwardedHeaders(provider, call.headers ?? {})
    : call.headers ?? {};
  const url = `${surface.baseUrl}${call.path}`;
  const attempt = (key: ProviderKey | undefined) => {
    route.start();
    const auth: Record<string, string> = surface.auth && key
      ? { [surface.auth.header]: `${surface.auth.prefix ?? ""}${key.secret}` }
      : {};
    return sendRequest(
      url,
      call,
      { ...auth, ...surface.headers, ...own },
      attemptAbort(abort),
      { ...deadlines, headersMs: route.headersMs(deadlines.headersMs) },
    );
  };
  if (!provider.keys.length) return await attempt(undefined);
  const { board, settings } = route;
  const model = call.model ?? "";
  const turns = keyTurns(board, provider, model);
  if (call.key !== undefined) {
    // The key an object was made with, if it is still configured (else the keys in turn).
    const own = provider.keys.findIndex((k) => k.id === call.key);
    if (own >= 0) turns.order = turns.order.includes(own) ? [own] : [];
  }
  if (!turns.order.length) throw noKey(turns.wakes);
  const again = replayable(call.body);
  let response: Response | undefined;
  for (const index of turns.order) {
    if (response) {
      if (!again || !route.canStart()) break;
      if (!keyUsable(board, provider, index, model)) continue;
      await response.body?.cancel().catch(() => {});
    }
    response = await attempt(provider.keys[index]);
    if (response.status === 429) {
      // With nowhere else to go, the next call may as well ask the upstream again.
      if (provider.keys.length > 1 || route.alternatives) {
        const wait = retryAfterMs(response.headers.get("retry-after"));
        restKey(board, provider, index, model, wait, settings.cooldownMs);
      }
      if (!settings.retryOn.has("429")) return response;
      continue;
    }
    if (response.ok) {
      keyAnswered(board, provider, index, model);
      route.keyUsed = provider.keys[index].id;
      return response;
    }
    const checked = await refusal(response);
    response = checked.response;
    if (!checked.refused) return response;
    refuseKey(board, provider, index, checked.refused === "key" ? undefined : model);
  }
  return response!;
}

/** The error of a call with no key to use: all rest (429 until the first wakes), or all refused. */
function noKey(wakes: number): GatewayError {
  if (!wakes) return credentialsRefused();
  return keysResting(wakes);
}

/** The 429 of a call whose keys all rest after rate limits, until `wakes` (ms since the epoch). */
export function keysResting(wakes: number): GatewayError {
  const seconds = retryAfterSeconds(wakes - Date.now());
  return new GatewayError(
    429,
    `The upstream provider's rate limit is reached for now; retry after ${seconds}s.`,
    { headers: { "retry-after": String(seconds) }, code: "upstream_rate_limited" },
  );
}
