/**
 * Resolving what a request names. Its model: the catalog's answer for the client's protocol, or an
 * error in the route's format — unknown model 404, provider without a key 503, a model of another
 * kind (or an endpoint its provider does not offer) 400 with a pointer to the endpoint that serves
 * it, a model the key may not call 403. And the stored state its body names, as its protocol
 * declares it (see `BodyNames`): upstream objects (a `previous_response_id`, a container, items
 * of a stored answer it refers to), the conversation the gateway keeps for a
 * `previous_response_id`, and the kept answers whose items it refers to, read from the store
 * once, before the protocol code that checks it runs (that code is synchronous; the store is
 * not). What the request does not name is not read; what it names but the store does not hold is
 * simply absent, so the checks refuse it. Whose state is whose is this
 * module's rule: the caller's account's, or refused exactly as an id that does not exist.
 */
import {
  isModelId,
  MAX_MODEL_ID,
  type ModelKind,
  type ProviderEntry,
  type ResolvedModel,
} from "../catalog/catalog.ts";
import type { NamedState, RequestContext } from "../context.ts";
import { GatewayError, notFound } from "../http/errors.ts";
import { mayCall } from "../auth/model_access.ts";
import type { BodyNames, CallInput } from "../protocols/wire.ts";
import type { Store, StoredResponse } from "../store/store.ts";

const byType = (...types: ProviderEntry["type"][]) => (p: ProviderEntry) => types.includes(p.type);

/**
 * The endpoints that call a model: the kind of model each serves and the providers that can serve
 * it. The first entries are the models' home endpoints, named in the error for a wrong endpoint.
 */
const ENDPOINTS: Record<Endpoint, { path: string; kind: ModelKind; serves: Serves }> = {
  // Every text model is reachable from every text route (translated when its provider speaks
  // another protocol).
  text: { path: "/v1/responses", kind: "text", serves: () => true },
  embeddings: { path: "/v1/embeddings", kind: "embedding", serves: byType("openai") },
  embedContent: {
    path: "/v1beta/models/{model}:embedContent",
    kind: "embedding",
    serves: byType("gemini"),
  },
  images: { path: "/v1/images/generations", kind: "image", serves: byType("openai", "xai") },
  videos: { path: "/v1/videos/generations", kind: "video", serves: byType("xai") },
  compact: { path: "/v1/responses/compact", kind: "text", serves: byType("openai") },
  search: { path: "/v1/alpha/search", kind: "text", serves: byType("openai") },
};

type Serves = (provider: ProviderEntry) => boolean;

/** The gateway endpoints that call a model (`embedContent`: Gemini's embedding routes). */
export type Endpoint =
  | "text"
  | "embeddings"
  | "embedContent"
  | "images"
  | "videos"
  | "compact"
  | "search";

/** Whether `endpoint` can send a call to `provider` (a deployment or fallback the router tries). */
export function reaches(endpoint: Endpoint): (provider: ProviderEntry) => boolean {
  return ENDPOINTS[endpoint].serves;
}

/** Whether `endpoint` serves a model of `kind` whose provider is `provider` (for listings). */
export function serves(endpoint: Endpoint, kind: ModelKind, provider: ProviderEntry): boolean {
  const served = ENDPOINTS[endpoint];
  return served.kind === kind && served.serves(provider);
}

/** Resolves `id` for a call to `endpoint`, or throws the error the client should see. */
export function resolveModel(
  ctx: RequestContext,
  id: string,
  endpoint: Endpoint,
): ResolvedModel {
  ctx.log.model = id;
  if (id.length > MAX_MODEL_ID) {
    throw new GatewayError(400, `Invalid 'model': must be at most ${MAX_MODEL_ID} characters.`, {
      param: "model",
      code: "invalid_value",
    });
  }
  // Ids reach stricter grammars than JSON (a response header, metric labels, upstream URLs).
  if (!isModelId(id)) {
    throw new GatewayError(
      400,
      "Invalid 'model': a model id is visible ASCII characters only (letters, digits and punctuation; no spaces, control or non-ASCII characters).",
      { param: "model", code: "invalid_value" },
    );
  }
  const resolution = ctx.services.config.catalog.resolve(id);
  if (!resolution.ok) {
    if (resolution.reason === "disabled") {
      throw new GatewayError(
        503,
        `The model \`${id}\` is served by provider ${resolution.provider}, which has no upstream key configured on this gateway.`,
        { code: "provider_disabled", param: "model" },
      );
    }
    throw new GatewayError(
      404,
      `The model \`${id}\` does not exist or you do not have access to it.`,
      { code: "model_not_found", param: "model" },
    );
  }
  const model = resolution.model;
  if (!principalMayCall(ctx, id)) {
    throw new GatewayError(403, `This API key may not use the model \`${id}\`.`, {
      code: "model_not_allowed",
      param: "model",
    });
  }
  ctx.log.provider = model.provider.name;
  const served = ENDPOINTS[endpoint];
  if (!serves(endpoint, model.kind, model.provider)) {
    const home = Object.values(ENDPOINTS).find((e) =>
      e.kind === model.kind && e.serves(model.provider)
    );
    throw new GatewayError(
      400,
      `The model \`${id}\` is not served on ${served.path}${
        home ? `; use ${home.path} for it` : ""
      }.`,
      { code: "model_not_supported", param: "model" },
    );
  }
  return model;
}

/** Whether the request's key (and its account) may call model `id` (see `auth/model_access.ts`). */
export function principalMayCall(ctx: RequestContext, id: string): boolean {
  const principal = ctx.principal;
  if (!principal) return true;
  return mayCall(principal.limits.models, principal.accountLimits.models, id);
}

/** The longest upstream object id a client may name. */
export const MAX_ID = 256;
/** The most answers a kept conversation walks back through. */
export const MAX_STEPS = 2_000;
/** The most object ids one request may name (more are not read, so refused). */
const MAX_NAMED = 64;
/**
 * The most answers whose items one request may refer to, and the most upstream items (more are
 * not read, so refused).
 */
const MAX_REFERRED = 256;
/** How many of those are read at once. */
const REFERRED_BATCH = 16;

/** An id as a request may name it: a string, or an object's `id`. */
function idOf(value: unknown): string | undefined {
  const id = value !== null && typeof value === "object" ? (value as { id?: unknown }).id : value;
  return typeof id === "string" && id && id.length <= MAX_ID ? id : undefined;
}

/** `read` of each of `ids`, `REFERRED_BATCH` at a time. */
async function inBatches<T>(ids: string[], read: (id: string) => Promise<T> | T): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < ids.length; i += REFERRED_BATCH) {
    out.push(...await Promise.all(ids.slice(i, i + REFERRED_BATCH).map(read)));
  }
  return out;
}

/** What a request that names nothing has (never written to). */
const NOTHING: NamedState = { objects: new Map(), steps: new Map() };

/**
 * The kept steps of the answers `ids` (each one step, not its chain), read a batch at a time
 * until about `bytes` of their items were read.
 */
async function referredSteps(
  store: Store,
  ids: string[],
  bytes: number,
): Promise<StoredResponse[]> {
  const steps: StoredResponse[] = [];
  let read = 0;
  for (let i = 0; i < ids.length && read <= bytes; i += REFERRED_BATCH) {
    const batch = ids.slice(i, i + REFERRED_BATCH);
    const found = await Promise.all(
      batch.map((id) => store.responseChain(id, { steps: 1, bytes })),
    );
    for (const step of found.flat()) {
      steps.push(step);
      read += step.items.length;
    }
  }
  return steps;
}

/**
 * Reads the stored state `names` names into `ctx.named` (see the module's doc): at once when the
 * request names none (the common case: no promise), else once the store has answered.
 */
export function loadNamedState(
  ctx: RequestContext,
  names: BodyNames | undefined,
): Promise<void> | undefined {
  if (!names?.objects.length && !names?.answers?.length && !names?.items?.length) {
    ctx.named = NOTHING; // the common case: no query, nothing allocated
    return undefined;
  }
  const ids = new Set<string>();
  const previous = typeof names?.previous === "string" ? idOf(names.previous) : undefined;
  for (const value of names?.objects ?? []) {
    const id = idOf(value);
    if (id !== undefined && ids.size < MAX_NAMED) ids.add(id);
  }
  const answers = (names?.answers ?? []).slice(0, MAX_REFERRED);
  const items = new Set<string>();
  for (const value of names?.items ?? []) {
    const id = idOf(value);
    if (id !== undefined && items.size < MAX_REFERRED) items.add(id);
  }
  if (!ids.size && !answers.length && !items.size) {
    ctx.named = NOTHING; // none of the names is an id
    return undefined;
  }
  return readNamedState(ctx, ids, previous, answers, items);
}

/** `loadNamedState`'s reads, for a request that names stored state. */
async function readNamedState(
  ctx: RequestContext,
  ids: Set<string>,
  previous: string | undefined,
  answers: string[],
  items: Set<string>,
): Promise<void> {
  const { store, config } = ctx.services;
  const named: NamedState = { objects: new Map(), steps: new Map() };
  const bytes = config.conversationMaxBytes * 4;
  // A client WebSocket's own state first (see `SocketState`): the store may not hold it.
  const socket = ctx.socket;
  const object = (id: string) => socket?.objects.get(id) ?? store.upstreamObject(id);
  const [objects, chain, referred, referredItems] = await Promise.all([
    Promise.all([...ids].map(object)),
    previous === undefined || previous === socket?.last?.id
      ? []
      : store.responseChain(previous, { steps: MAX_STEPS + 1, bytes }),
    referredSteps(store, answers, bytes),
    inBatches([...items].filter((id) => !ids.has(id)), object),
  ]);
  for (const object of [...objects, ...referredItems]) {
    if (object) named.objects.set(object.id, object);
  }
  for (const step of [...referred, ...chain]) named.steps.set(step.id, step);
  ctx.named = named;
}

/** The state `loadNamedState` read for this request; a route that did not load it is a bug. */
export function namedState(ctx: RequestContext): NamedState {
  if (!ctx.named) throw new Error("the request's named state was not loaded");
  return ctx.named;
}

/** The caller's own upstream object `id`, when it was read (undefined else). */
function mine(ctx: RequestContext, id: unknown) {
  const found = typeof id === "string" && ctx.named ? ctx.named.objects.get(id) : undefined;
  return found && found.accountId === ctx.principal?.accountId ? found : undefined;
}

/**
 * What the request's protocol reads of it besides its body (see `CallInput`): the upstream
 * objects it names, held to the rule of whose they are.
 */
export function callInput(ctx: RequestContext): CallInput {
  const owned: CallInput["owned"] = (id, kind) => {
    namedState(ctx); // a route that did not load the state is a bug, not a refusal
    const found = mine(ctx, id);
    return found?.kind === kind ? found : undefined;
  };
  return {
    url: ctx.url,
    headers: ctx.req.headers,
    params: ctx.params,
    own(id, kind, field) {
      const found = owned(id, kind);
      if (!found) {
        const text = typeof id === "string" ? id : "";
        throw notFound(kind === "response" ? "Previous response" : "Container", text, field);
      }
      return found;
    },
    owned,
  };
}

/**
 * The provider holding the upstream state the body continues — the caller's own, recorded with its
 * provider — so the call goes to a deployment of that provider (another would not know the id);
 * undefined when it continues none.
 */
export function continuedProvider(
  ctx: RequestContext,
  names: BodyNames | undefined,
): string | undefined {
  for (const id of names?.continues ?? []) {
    const found = mine(ctx, id);
    if (found?.provider) return found.provider;
  }
  return undefined;
}

/** The kept conversation step `id`, if it is the caller's and within the retention. */
export function keptStep(ctx: RequestContext, id: string): StoredResponse | undefined {
  // Pruning runs only every 6 h: a step past the retention is not the caller's any more.
  const step = namedState(ctx).steps.get(id);
  const oldest = Date.now() - ctx.services.config.conversationRetentionMs;
  return step && step.accountId === ctx.principal!.accountId && step.createdAt >= oldest
    ? step
    : undefined;
}

/**
 * Whether the body continues a conversation the gateway keeps, or refers to items of an answer
 * it keeps (the call must then be translated, see `conversations.ts`): an answer it names is a
 * kept step of the caller's, or the last one its WebSocket keeps.
 */
export function continuesKept(ctx: RequestContext, names: BodyNames | undefined): boolean {
  const kept = (id: string) => id === ctx.socket?.last?.id || keptStep(ctx, id) !== undefined;
  const id = names?.previous;
  if (typeof id === "string" && id.length <= MAX_ID && kept(id)) return true;
  return (names?.answers ?? []).some(kept);
}
