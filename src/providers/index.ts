/**
 * Reaching an upstream: the call's surface (by protocol) gives the base URL, the auth header (as
 * data, see `catalog/surfaces.ts`) and fixed headers; a family's quirks adjust the call's own
 * headers. Which of the provider's keys a call uses, and when it tries another, is routing's
 * choice (`routing/send.ts`): here each attempt is given its key.
 */
import type { ProviderEntry, ProviderKey, Surface } from "../catalog/catalog.ts";
import { GatewayError, retryAfterSeconds } from "../http/errors.ts";
import type { ProtocolId } from "../translate/ir.ts";
import { forwardedHeaders } from "./anthropic.ts";
import { TextParts } from "../http/utf8.ts";
import { type Deadlines, sendRequest, type UpstreamCall, withContentType } from "./transport.ts";

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
    body instanceof Uint8Array || body instanceof TextParts;
}

/**
 * A call's abort controller that aborts its attempt in flight with it (see `attempts`), with no
 * listener per attempt. Only the last attempt needs it: an earlier one's answer is read or
 * cancelled before the next attempt starts.
 */
export class CallAbort extends AbortController {
  #attempt: AbortController | undefined;

  /** The next attempt's own controller: aborted with this one (at once, when this one is). */
  attempt(): AbortController {
    const own = new AbortController();
    if (this.signal.aborted) own.abort();
    else this.#attempt = own;
    return own;
  }

  override abort(reason?: unknown): void {
    super.abort(reason);
    this.#attempt?.abort(reason);
  }
}

/** An attempt's own abort controller, aborted with the call's (the client went away). */
function attemptAbort(call: AbortController): AbortController {
  if (call instanceof CallAbort) return call.attempt();
  const own = new AbortController();
  if (call.signal.aborted) own.abort();
  else call.signal.addEventListener("abort", () => own.abort(), { once: true });
  return own;
}

/**
 * The attempts of a call already in the protocol of one of `provider`'s surfaces: each sends it
 * once with the key it is given (none for a provider without keys), under its own abort
 * controller (aborted with the call's `abort`) and `deadlines`, and returns the upstream
 * `Response` as is. Throws when the provider has no surface for the call's protocol.
 */
export function attempts(
  provider: ProviderEntry,
  call: UpstreamCall,
  abort: AbortController,
): (key: ProviderKey | undefined, deadlines: Deadlines) => Promise<Response> {
  const surface = surfaceFor(provider, call.protocol);
  if (!surface) throw new Error(`provider ${provider.name} has no ${call.protocol} surface`);
  const own = surface.protocol === "messages"
    ? forwardedHeaders(provider, call.headers ?? {})
    : call.headers ?? {};
  const url = `${surface.baseUrl}${call.path}`;
  // A Responses turn of a client's WebSocket goes over the upstream's, when it has one.
  const text = typeof call.body === "string" || call.body instanceof TextParts;
  const socket = surface.protocol === "responses" && text ? call.socket : undefined;
  // Without headers of the call's own (most calls), each key's headers are made once.
  const plain = !socket && !hasFields(own);
  return (key, deadlines) => {
    const headers = plain
      ? plainHeaders(surface, key, call.body)
      : { ...authHeader(surface, key), ...surface.headers, ...own };
    const attempt = attemptAbort(abort);
    if (!socket) return sendRequest(url, call, headers, attempt, deadlines);
    return socket.send(url, headers, String(call.body), attempt, deadlines).then((answer) =>
      answer ?? sendRequest(url, call, headers, attempt, deadlines)
    );
  };
}

/** The auth header of `surface` with `key` (none without a key). */
function authHeader(surface: Surface, key: ProviderKey | undefined): Record<string, string> {
  return surface.auth && key
    ? { [surface.auth.header]: `${surface.auth.prefix ?? ""}${key.secret}` }
    : {};
}

function hasFields(record: Record<string, string>): boolean {
  for (const _ in record) return true;
  return false;
}

/** Headers of `surface` with `key`, and a JSON body's content type: per surface, key and body. */
const plainMade = new WeakMap<
  Surface,
  Map<ProviderKey | undefined, [bare: Record<string, string>, json: Record<string, string>]>
>();

/**
 * The headers of a call with none of its own, made once per surface, key and whether it has a
 * body (read only: `fetch` copies them). The config's objects key them, so a reload makes others.
 */
function plainHeaders(
  surface: Surface,
  key: ProviderKey | undefined,
  body: UpstreamCall["body"],
): Record<string, string> {
  let byKey = plainMade.get(surface);
  if (!byKey) plainMade.set(surface, byKey = new Map());
  let made = byKey.get(key);
  if (!made) {
    const headers = { ...authHeader(surface, key), ...surface.headers };
    byKey.set(key, made = [headers, withContentType(headers)]);
  }
  return body ? made[1] : made[0];
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
