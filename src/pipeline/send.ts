/**
 * Sending: one admitted call goes to its deployment (the provider's keys in turn, see
 * `routing/send.ts`), and what came of it is said so the router can move on — the answer to
 * relay, or why there is none (a rate limit, a 5xx, the operator's key refused, a context window
 * exceeded, a timeout or a connection that failed) and the client's response to it. A call that
 * failed is released unbilled before anything else is tried: a call that was retried is charged
 * once.
 */
import type { Bill } from "../billing/ledger.ts";
import { type ResolvedModel, targetName } from "../catalog/catalog.ts";
import type { RequestContext } from "../context.ts";
import { callRoute } from "../context.ts";
import { type ErrorFormat, GatewayError } from "../http/errors.ts";
import { metrics, recentCalls, UPSTREAM_ERRORS, UPSTREAM_TTFB } from "../metrics/gateway.ts";
import { keyRefusal, readBounded } from "../providers/key_failure.ts";
import { replayable, type UpstreamCall, upstreamDeadlines } from "../providers/index.ts";
import { send as sendUpstream } from "../routing/send.ts";
import type { FailureKind } from "../routing/attempts.ts";
import type { Admitted } from "./admit.ts";
import type { Call } from "./call.ts";
import { scopeOf } from "./settle.ts";
import { relayUpstreamError } from "./upstream_errors.ts";

/** How providers say the input does not fit the model's context window. */
const CONTEXT_EXCEEDED =
  /context_length_exceeded|prompt is too long|exceeds the maximum number of tokens|maximum context length|context window/i;

/** An upstream's 2xx answer to an admitted call, to relay. */
export interface Answered {
  ok: true;
  bill: Bill;
  upstream: Response;
  /** When the request went (`performance.now()`). */
  sent: number;
  /** The output cap the gateway imposed, if any. */
  sentCap?: number;
}

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

/** Sends an admitted call once (the provider's keys in turn); see the module's doc. */
export async function send(call: Call, admitted: Admitted, abort: AbortController): Promise<Sent> {
  const outcome = await sendWithHold(
    call.ctx,
    admitted.bill,
    call.model,
    { ...call.call(admitted.sentCap), model: targetName(call.model) },
    call.format,
    abort,
    call.upstreamFormat ?? call.format,
  );
  return outcome.ok ? { ...outcome, sentCap: admitted.sentCap } : outcome;
}

/** Sends `call` for `model` with `bill` holding its funds; releases the hold if it fails. */
async function sendWithHold(
  ctx: RequestContext,
  bill: Bill,
  model: ResolvedModel,
  call: UpstreamCall,
  format: ErrorFormat,
  abort: AbortController,
  upstreamFormat: ErrorFormat,
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
  if (upstream.ok) return { ok: true, bill, upstream, sent };
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
  abort = new AbortController(),
  upstreamFormat: ErrorFormat = format,
): Promise<HeldAnswer> {
  const scoped = { ...call, model: targetName(model) };
  const outcome = await sendWithHold(ctx, bill, model, scoped, format, abort, upstreamFormat);
  if (outcome.ok) return { ok: true, upstream: outcome.upstream, sent: outcome.sent };
  return { ok: false, response: await outcome.respond() };
}
