/**
 * The stored state a request names — upstream objects (a `previous_response_id`, a container)
 * and the conversation the gateway keeps for a `previous_response_id` — read from the store once,
 * before the protocol code that checks it runs (that code is synchronous; the store is not).
 * What the request does not name is not read; what it names but the store does not hold is
 * simply absent, so the checks refuse it (404).
 */
import type { NamedState, RequestContext } from "../context.ts";
import { notFound } from "../http/errors.ts";
import type { CallInput } from "../protocols/wire.ts";

export type { NamedState };

/** The longest upstream object id a client may name. */
export const MAX_ID = 256;
/** The most answers a kept conversation walks back through. */
export const MAX_STEPS = 2_000;
/** The most object ids one request may name (more are not read, so refused). */
const MAX_NAMED = 64;

/** An id as a request may name it: a string, or an object's `id`. */
function idOf(value: unknown): string | undefined {
  const id = value !== null && typeof value === "object" ? (value as { id?: unknown }).id : value;
  return typeof id === "string" && id && id.length <= MAX_ID ? id : undefined;
}

/** What a request that names nothing has (never written to). */
const NOTHING: NamedState = { objects: new Map(), steps: new Map() };

/** Reads what `body` names into `ctx.named` (see `namedState`). */
export async function loadNamedState(
  ctx: RequestContext,
  body: Record<string, unknown>,
): Promise<void> {
  const { store, config } = ctx.services;
  const ids = new Set<string>();
  const add = (value: unknown) => {
    const id = idOf(value);
    if (id !== undefined && ids.size < MAX_NAMED) ids.add(id);
  };
  const previous = typeof body.previous_response_id === "string"
    ? idOf(body.previous_response_id)
    : undefined;
  add(previous);
  add(body.container);
  if (Array.isArray(body.tools)) {
    for (const tool of body.tools) add((tool as { container?: unknown } | null)?.container);
  }
  if (!ids.size) {
    ctx.named = NOTHING; // the common case: no query, nothing allocated
    return;
  }
  const named: NamedState = { objects: new Map(), steps: new Map() };
  const [objects, chain] = await Promise.all([
    Promise.all([...ids].map((id) => store.upstreamObject(id))),
    previous === undefined ? [] : store.responseChain(previous, {
      steps: MAX_STEPS + 1,
      bytes: config.conversationMaxBytes * 4,
    }),
  ]);
  for (const object of objects) if (object) named.objects.set(object.id, object);
  for (const step of chain) named.steps.set(step.id, step);
  ctx.named = named;
}

/** The state `loadNamedState` read for this request; a route that did not load it is a bug. */
export function namedState(ctx: RequestContext): NamedState {
  if (!ctx.named) throw new Error("the request's named state was not loaded");
  return ctx.named;
}

/**
 * What the request's protocol reads of it besides its body (see `CallInput`): the upstream
 * objects it names, found in what `loadNamedState` read and held to the rule of whose they are —
 * the caller's account's, or a 404 exactly as for an id that does not exist.
 */
export function callInput(ctx: RequestContext): CallInput {
  const mine = (id: unknown) => {
    const found = typeof id === "string" && ctx.named ? ctx.named.objects.get(id) : undefined;
    return found && found.accountId === ctx.principal?.accountId ? found : undefined;
  };
  return {
    url: ctx.url,
    headers: ctx.req.headers,
    params: ctx.params,
    own(id, kind, field) {
      namedState(ctx); // a route that did not load the state is a bug, not a 404
      const found = mine(id);
      if (!found || found.kind !== kind) {
        const text = typeof id === "string" ? id : "";
        throw notFound(kind === "response" ? "Previous response" : "Container", text, field);
      }
      return found;
    },
    find: (id) => mine(id),
  };
}
