/**
 * Routing: a call goes to its model's deployments in turn, then to its fallbacks (see
 * `routing/candidates.ts`) — each attempt admitted with its own hold (see `hold.ts`) and sent,
 * moving on while the failure is one `routing.retryOn` names and attempts and budget remain — and
 * the first answer is relayed (see `relay.ts`), never retried. A client that goes away stops it:
 * nothing more is tried.
 *
 * Sending: one admitted call goes to its deployment (the provider's keys in turn, see
 * `routing/send.ts`), and what came of it is said so the router can move on — the answer to
 * relay, or why there is none (a rate limit, a 5xx, the operator's key refused, a context window
 * exceeded, a timeout or a connection that failed) and the client's response to it. A call that
 * failed is released unbilled before anything else is tried: a call that was retried is charged
 * once.
 */
import type { Bill } from "../billing/ledger.ts";
import { type ProviderEntry, type ResolvedModel, targetName } from "../catalog/catalog.ts";
import type { RequestContext } from "../context.ts";
import { callRoute } from "../context.ts";
import { type ErrorFormat, GatewayError, retryAfterSeconds } from "../http/errors.ts";
import { deadline } from "../http/deadlines.ts";
import {
  metrics,
  recentCalls,
  UPSTREAM_ERRORS,
  UPSTREAM_RETRIES,
  UPSTREAM_TTFB,
} from "../metrics/gateway.ts";
import { keyRefusal, readBounded } from "../providers/key_failure.ts";
import {
  CallAbort,
  keysResting,
  replayable,
  type UpstreamCall,
  upstreamDeadlines,
} from "../providers/index.ts";
import { send as sendUpstream } from "../routing/send.ts";
import {
  type Candidate,
  candidates,
  ownTarget,
  passOver,
  soonestWake,
} from "../routing/candidates.ts";
import { isHealthFailure, recordOutcome } from "../routing/circuit.ts";
import { acquire } from "../routing/limits.ts";
import { noteCalled } from "../routing/status.ts";
import type { CallRoute, FailureKind } from "../routing/attempts.ts";
import { admit, type Admitted, requirePriced, scopeOf } from "./hold.ts";
import type { Answered, Call } from "./call.ts";
import { relay } from "./relay.ts";
import { principalMayCall } from "./resolve.ts";
import { relayUpstreamError } from "./upstream_errors.ts";

/** A limit-bound wait that ran out, as the client sees it when nothing else could answer. */
function atCapacity(retryMs: number): GatewayError {
  const seconds = retryAfterSeconds(retryMs);
  return new GatewayError(
    429,
    `The upstream deployments of this model are at capacity; retry after ${seconds}s.`,
    { headers: { "retry-after": String(seconds) }, code: "upstream_capacity" },
  );
}

/** How long a call runs before its client's connection is watched (see `ClientWatch`). */
const WATCH_CLIENT_MS = 1000;

/** The client went away before an answer: nothing more is tried (the answer reaches no one). */
const GONE = new GatewayError(499, "The client closed the request.");

/**
 * The client's connection, watched only once the call has to wait, try again or has taken a
 * while: Deno makes a request's signal the first time it is read, which costs every quick call.
 * The signal aborts only when the client goes away (deno.json opts in to `no-legacy-abort`:
 * without it Deno also aborts it once a response is sent, and warns about that on the first
 * request); then the call is aborted.
 */
class ClientWatch {
  #signal: AbortSignal | undefined;
  readonly #gone = () => this.abort.abort();
  readonly #stop: () => void;

  constructor(private readonly req: Request, private readonly abort: AbortController) {
    this.#stop = deadline(WATCH_CLIENT_MS, () => this.watch());
  }

  /** Starts watching (once); a client already gone aborts the call at once. */
  watch(): void {
    if (this.#signal) return;
    this.#signal = this.req.signal;
    if (this.#signal.aborted) this.abort.abort();
    else this.#signal.addEventListener("abort", this.#gone, { once: true });
  }

  stop(): void {
    this.#stop();
    this.#signal?.removeEventListener("abort", this.#gone);
  }
}

/** The deployments a call is offered to, round after round (see `routeCall`). */
class Rounds {
  #queue: Generator<Candidate>;
  /** Upstream requests made when this round began. */
  #roundFrom = 0;
  /** The deployments tried since the rounds started from `root` (a second try backs off). */
  readonly tried = new Set<string>();

  constructor(
    private readonly queueOf: (root: ResolvedModel) => Generator<Candidate>,
    private readonly route: CallRoute,
    /** The model the rounds start from (a context-window fallback's, once jumped). */
    public root: ResolvedModel,
  ) {
    this.#queue = queueOf(root);
  }

  /** The next deployment of this round; undefined at its end. */
  next(): Candidate | undefined {
    const next = this.#queue.next();
    return next.done ? undefined : next.value;
  }

  /** Starts another round over the same upstreams, if the last one made a request. */
  again(): boolean {
    if (this.route.count === this.#roundFrom) return false;
    this.#roundFrom = this.route.count;
    this.#queue = this.queueOf(this.root);
    return true;
  }

  /** Starts over from `model` (a context-window fallback): its deployments, then its fallbacks. */
  jump(model: ResolvedModel): void {
    this.root = model;
    this.#queue = this.queueOf(model);
    this.tried.clear();
    this.#roundFrom = this.route.count;
  }
}

/** Runs a call bound to its model's own deployment end to end (see `routeCall`). */
export function passThrough(p: Call): Promise<Response> {
  return routeCall(p.ctx, p.model, () => p, false);
}

/**
 * Runs a call end to end: with `retarget`, its model's deployments in turn, then its fallbacks
 * (see `routing/candidates.ts`), else the model's own deployment only; each attempt admitted with
 * its own hold (see `hold.ts`) and sent (`send`, below), moving on while the failure is one
 * `routing.retryOn` names and attempts and budget remain. The first answer is relayed (see
 * `relay.ts`) and never retried. `build` makes the call for one deployment (lazily: a deployment
 * that cannot take the request is passed over). `pin` names the provider holding upstream state
 * the call continues: only its deployments are tried (all of them when the model has none of it);
 * `reaches` passes over the providers the endpoint cannot call (the embeddings route calls
 * OpenAI-type providers only).
 */
export async function routeCall(
  ctx: RequestContext,
  model: ResolvedModel,
  build: (model: ResolvedModel) => Call,
  retarget: boolean,
  pin?: string,
  reaches?: (provider: ProviderEntry) => boolean,
): Promise<Response> {
  const route = callRoute(ctx);
  const { board, settings } = route;
  const catalog = ctx.services.config.catalog;
  const abort = new CallAbort();
  const client = new ClientWatch(ctx.req, abort);
  const watchClient = () => client.watch();
  const r = model.route;
  route.alternatives = retarget &&
    (r.targets.length > 1 || r.fallbacks.length > 0 || r.contextFallback !== undefined);
  const allowed = (id: string) => principalMayCall(ctx, id);
  // Where the call's conversation has its cache, first (see `affinity.ts`).
  const prefer = route.prefer?.target;
  const rounds = new Rounds(
    (root) =>
      retarget
        ? candidates(board, catalog, root, settings.circuit, pin, reaches, allowed, prefer)
        : ownTarget(board, root, settings.circuit),
    route,
    model,
  );
  let failure: Failed | undefined;
  /** The error of the first deployment that could not take the request. */
  let unbuilt: GatewayError | undefined;
  /** The soonest a deployment at its limits may take a call (ms from then); 0: none was. */
  let limited = 0;
  try {
    for (;;) {
      if (abort.signal.aborted) throw GONE;
      if (!route.canStart()) break;
      const candidate = rounds.next();
      if (!candidate) {
        // Another round over the same upstreams, while the last made a request and the failure
        // allows (attempts and budget are checked above).
        if (!failure?.again || !rounds.again()) break;
        continue;
      }
      let call: Call;
      try {
        call = build(candidate.model);
        // A tier or hosted tool this deployment does not price: another may.
        if (call.tokens) requirePriced(call.model, call.tokens);
      } catch (error) {
        passOver(candidate);
        if (!(error instanceof GatewayError) || error.status >= 500) throw error;
        unbuilt ??= error;
        continue;
      }
      if (route.count > 0) watchClient();
      if (abort.signal.aborted) throw GONE;
      if (rounds.tried.has(candidate.target.name)) await route.backoff(abort.signal);
      // Waits for limits, too, end with the budget.
      const queueMs = Math.max(0, Math.min(settings.queueMs, route.remainingMs()));
      let place = acquire(candidate.slot, candidate.target, queueMs, abort.signal, watchClient);
      if (place instanceof Promise) place = await place; // only under the deployment's limits
      if ("lease" in place) {
        passOver(candidate);
        if (abort.signal.aborted) throw GONE;
        limited = limited ? Math.min(limited, place.retryMs) : place.retryMs;
        continue;
      }
      const lease = place;
      noteCalled(candidate.target);
      rounds.tried.add(candidate.target.name);
      const sentBefore = route.count;
      let outcome: Sent;
      try {
        outcome = await send(call, await admit(call), abort);
      } catch (error) {
        lease.release();
        passOver(candidate);
        if (abort.signal.aborted) throw GONE;
        // Another deployment's call that cannot be held (its price, the balance): the failure
        // before stands.
        if (failure && error instanceof GatewayError && error.status < 500) continue;
        throw error;
      }
      // Only an upstream's answer (or its silence) says anything about its health.
      if (route.count > sentBefore) {
        const ok = outcome.ok || !isHealthFailure(outcome.kind);
        recordOutcome(candidate.slot, ok, candidate.probe, settings.circuit);
      } else passOver(candidate);
      if (outcome.ok) {
        route.served = { provider: candidate.target.provider.name, model: candidate.model.id };
        ctx.log.provider = candidate.target.provider.name;
        if (candidate.model.id !== model.id) ctx.log.served_model = candidate.model.id;
        // A JSON answer is read whole before it is relayed: the client may still leave meanwhile.
        return await relay(call, outcome, abort, lease);
      }
      lease.release();
      watchClient();
      if (abort.signal.aborted) throw GONE;
      const contextFallback = candidate.model.route.contextFallback;
      // Once: the jump's own model is the root from then on.
      if (
        outcome.kind === "context" && contextFallback && retarget && rounds.root === model &&
        allowed(contextFallback)
      ) {
        const resolved = catalog.resolve(contextFallback);
        if (resolved.ok) {
          metrics.add(UPSTREAM_RETRIES, [candidate.target.provider.name, "context"]);
          failure = outcome;
          rounds.jump(resolved.model);
          continue;
        }
      }
      const kind = outcome.kind;
      if (!kind || kind === "context" || !outcome.again || !route.retries(kind)) {
        return await outcome.respond();
      }
      metrics.add(UPSTREAM_RETRIES, [candidate.target.provider.name, kind]);
      failure = outcome;
    }
  } finally {
    client.stop();
  }
  if (failure) return await failure.respond();
  if (limited) throw atCapacity(limited);
  if (unbuilt) throw unbuilt;
  // Nothing was offered: every deployment's keys rest after rate limits (or none could be called).
  const wakes = soonestWake(board, rounds.root);
  if (!wakes) {
    throw new GatewayError(503, "No upstream of this gateway can serve this call now.", {
      code: "upstream_unavailable",
    });
  }
  throw keysResting(wakes);
}

/** How providers say the input does not fit the model's context window. */
const CONTEXT_EXCEEDED =
  /context_length_exceeded|prompt is too long|exceeds the maximum number of tokens|maximum context length|context window/i;

/** A call that got no answer to relay: why, and the client's response to it. */
export interface Failed {
  ok: false;
  /** Why, when the router may move on; null: the request's own fault, answered as it is. */
  kind: FailureKind | null;
  /** Whether the call's body can be sent again (a streamed upload cannot). */
  again: boolean;
  /** The client's response to this failure (or the error it throws). */
  respond(): Promise<Response>;
}

/** What came of sending a call: an answer to relay, or a failure. */
export type Sent = Answered | Failed;

/** What a non-2xx answer means for the router. */
function kindOf(status: number, text: string): FailureKind | null {
  if (status === 429) return "429";
  if (status >= 500) return "5xx";
  if (keyRefusal(status, text)) return "auth";
  if ((status === 400 || status === 413) && CONTEXT_EXCEEDED.test(text)) return "context";
  return null;
}

/** What a `GatewayError` from the provider's send means for the router. */
function thrownKind(error: GatewayError): FailureKind {
  if (error.status === 504) return "timeout";
  if (error.status === 429) return "429";
  if (error.options.code === "upstream_auth_failed") return "auth";
  return "connection";
}

/**
 * Sends an admitted call once (the provider's keys in turn); see the module's doc. (The answer
 * carries the output cap sent, from the one object `sendWithHold` makes.)
 */
function send(call: Call, admitted: Admitted, abort: AbortController): Promise<Sent> {
  return sendWithHold(
    call.ctx,
    admitted.bill,
    call.model,
    { ...call.call(admitted.sentCap), model: targetName(call.model) },
    call.format,
    abort,
    call.upstreamFormat ?? call.format,
    admitted.sentCap,
  );
}

/**
 * Sends `call` for `model` with `bill` holding its funds; releases the hold if it fails. An answer
 * carries `sentCap`, the output cap the gateway imposed on the call (if any).
 */
async function sendWithHold(
  ctx: RequestContext,
  bill: Bill,
  model: ResolvedModel,
  call: UpstreamCall,
  format: ErrorFormat,
  abort: AbortController,
  upstreamFormat: ErrorFormat,
  sentCap?: number,
): Promise<Sent> {
  const provider = model.provider.name;
  // A request that fails from here on aborts this upstream call, whatever way it fails.
  scopeOf(ctx).upstream(abort);
  const again = replayable(call.body);
  const sent = performance.now();
  const route = callRoute(ctx);
  const requests = route.count;
  let upstream: Response;
  try {
    upstream = await sendUpstream(
      model.provider,
      call,
      abort,
      upstreamDeadlines(ctx.services.config),
      route,
    );
  } catch (error) {
    await bill.release();
    if (!(error instanceof GatewayError)) throw error; // the client went away
    // An upstream that could not be reached (not a call whose keys all rest: none was sent).
    if (route.count > requests) {
      metrics.add(UPSTREAM_ERRORS, [provider, "0"]);
      recentCalls.record(provider, 0);
    }
    return {
      ok: false,
      kind: thrownKind(error),
      again,
      respond: () => Promise.reject(error),
    };
  }
  metrics.observe(UPSTREAM_TTFB, [provider, model.id], (performance.now() - sent) / 1000);
  recentCalls.record(provider, upstream.status);
  if (upstream.ok) return { ok: true, bill, upstream, sent, sentCap };
  metrics.add(UPSTREAM_ERRORS, [provider, String(upstream.status)]);
  await bill.release();
  // Read now: the router may move on, and no upstream connection waits on an unread body.
  const text = await readBounded(upstream);
  const answer = new Response(text, { status: upstream.status, headers: upstream.headers });
  return {
    ok: false,
    kind: kindOf(upstream.status, text),
    again,
    respond: () => relayUpstreamError(answer, format, model, upstreamFormat),
  };
}

/** The upstream's 2xx answer, or the response the client gets for its failure. */
export type HeldAnswer =
  /** `sent`: when the request went (`performance.now()`), for the call's duration. */
  | { ok: true; upstream: Response; sent: number }
  | { ok: false; response: Response };

/**
 * Sends a call whose funds `bill` holds (durably: the hold was committed before), for endpoints
 * that hold by themselves (video jobs). A failed call releases the hold unbilled; a non-2xx answer
 * becomes the client's error response (or a thrown `GatewayError`).
 */
export async function sendHeld(
  ctx: RequestContext,
  bill: Bill,
  model: ResolvedModel,
  call: UpstreamCall,
  format: ErrorFormat,
  abort: AbortController = new CallAbort(),
  upstreamFormat: ErrorFormat = format,
): Promise<HeldAnswer> {
  const scoped = { ...call, model: targetName(model) };
  const outcome = await sendWithHold(ctx, bill, model, scoped, format, abort, upstreamFormat);
  if (outcome.ok) return { ok: true, upstream: outcome.upstream, sent: outcome.sent };
  return { ok: false, response: await outcome.respond() };
}
