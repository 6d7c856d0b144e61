/**
 * Sending a call to a provider, taking its keys in turn (see `keys.ts`): a key answered with 429
 * rests, a key refused is taken out, and the call moves on to the next key while its route allows
 * another attempt. The provider's side of each attempt — URL, auth header, headers — is
 * `providers/index.ts`'s, given the key chosen here.
 */
import type { ProviderEntry } from "../catalog/catalog.ts";
import { credentialsRefused, type GatewayError } from "../http/errors.ts";
import { attempts, type Deadlines, keysResting, replayable } from "../providers/index.ts";
import { refusal } from "../providers/key_failure.ts";
import type { UpstreamCall } from "../providers/transport.ts";
import { type CallRoute, retryAfterMs } from "./attempts.ts";
import { keyAnswered, keyTurns, keyUsable, refuseKey, restKey } from "./keys.ts";

/**
 * Sends a call already in the surface's protocol; returns the upstream `Response` as is. The call
 * takes the provider's keys in turn: a key answered with 429 rests (when the provider has other
 * keys or the call other deployments) and a key refused (401, or 403 for the deployment) is taken
 * out, and the call moves on to the next key while `route` allows another attempt,
 * `routing.retryOn` names 429 (for a rate limit), and the body can be sent again. The last answer
 * is returned whatever it is. Throws a `GatewayError`: 429 when every key rests, 502 when every
 * key was refused, and the transport's 502/504 when the upstream cannot be reached.
 */
export async function send(
  provider: ProviderEntry,
  call: UpstreamCall,
  abort: AbortController,
  deadlines: Deadlines,
  route: CallRoute,
): Promise<Response> {
  const sendWith = attempts(provider, call, abort);
  const attempt = (index: number | undefined) => {
    route.start();
    const key = index === undefined ? undefined : provider.keys[index];
    // After the first attempt, the header deadline is what is left of the call's budget.
    const headersMs = route.headersMs(deadlines.headersMs);
    return sendWith(
      key,
      headersMs === deadlines.headersMs ? deadlines : { ...deadlines, headersMs },
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
  } else if (route.prefer?.target === model) {
    // The key holding the conversation's cache first, while it is usable.
    const at = turns.order.findIndex((i) => provider.keys[i].id === route.prefer!.key);
    if (at > 0) turns.order.unshift(...turns.order.splice(at, 1));
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
    response = await attempt(index);
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
