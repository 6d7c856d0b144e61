/**
 * Same-protocol calls: reserve, forward the body (only the model id, credentials and — when the
 * balance requires it — the output cap change), relay the answer as it is — JSON whole, streams
 * unit by unit — reading usage on the way, then settle exactly once. Failed calls are released
 * unbilled.
 */
import { type Bill, openBill } from "../billing/ledger.ts";
import { inputTotal, price, type Usage } from "../billing/price.ts";
import type { StreamMeter } from "../billing/usage.ts";
import type { Prices, ResolvedModel } from "../catalog/catalog.ts";
import type { RequestContext } from "../context.ts";
import type { JsonBody } from "../http/body.ts";
import type { ErrorFormat } from "../http/errors.ts";
import { relayStream } from "../http/relay.ts";
import type { SseEvent } from "../http/sse.ts";
import { send, type UpstreamCall, upstreamDeadlines } from "../providers/index.ts";
import { holdTokens, type TokenRequest } from "./reserve.ts";
import { relayUpstreamError } from "./upstream_errors.ts";
import { type CreatedObject, rememberObjects } from "./upstream_objects.ts";
import { log } from "../log.ts";

/** The response header that tells a client the output cap the gateway imposed. */
export const OUTPUT_CAP_HEADER = "x-switchyard-max-output-tokens";

export interface PassThrough {
  ctx: RequestContext;
  format: ErrorFormat;
  /** Ledger endpoint name, e.g. `responses`. */
  endpoint: string;
  model: ResolvedModel;
  /** A token-billed call: what the reservation needs to know. */
  tokens?: TokenRequest;
  /** A call billed by units (images, video seconds, search calls): what to hold and charge. */
  units?: Usage;
  stream: boolean;
  /** The upstream request; `cap` is the output cap to send when the gateway imposes one. */
  call: (cap: number | undefined) => UpstreamCall;
  /** Usage from a complete JSON response body. */
  usageFromJson: (body: unknown) => Usage | null;
  /** Prices from a complete JSON response body, when the answer decides the rate. */
  pricesFromJson?: (body: unknown) => Prices | null;
  /** The stream meter, for calls that can stream. */
  meter?: () => StreamMeter;
  /** Prices from what a stream stated (an image's size and quality), when it decides the rate. */
  pricesFromMeter?: (meter: StreamMeter) => Prices | null;
  /** How the upstream frames a stream (default SSE). */
  framing?: "sse" | "json-array";
  /** The end of a stream the upstream cut, in the client's protocol. */
  errorTail?: (started: boolean) => Uint8Array | undefined;
  /** Re-frames SSE events on the way back (see `relayStream`); absent: bytes pass unchanged. */
  rewrite?: (event: SseEvent) => string | null;
  /**
   * The upstream objects a JSON answer created (streams: the meter's), recorded as the caller's
   * (see `upstream_objects.ts`); absent when the call creates none that can be named later.
   */
  objectsFromJson?: (body: unknown) => CreatedObject[];
}

/** Records what the answer created, with the conversation's size for later estimates. */
function remember(p: PassThrough, objects: CreatedObject[], usage: Usage | null): void {
  if (!p.objectsFromJson || !objects.length) return;
  rememberObjects(p.ctx, objects, usage ? inputTotal(usage) + usage.outputTokens : 0);
}

/**
 * The client's body with `model` replaced by the upstream id and `patch` applied (the same text
 * when nothing changes).
 */
export function withUpstreamModel(
  body: JsonBody,
  model: ResolvedModel,
  patch?: Record<string, unknown>,
): string {
  const sameModel = body.value.model === undefined || body.value.model === model.upstreamId;
  if (sameModel && !patch) return body.text;
  return JSON.stringify({
    ...body.value,
    ...(body.value.model === undefined ? {} : { model: model.upstreamId }),
    ...patch,
  });
}

const PASSED_HEADERS = ["content-type", "cache-control", "retry-after"];

function responseHeaders(upstream: Response): Headers {
  const headers = new Headers();
  for (const name of PASSED_HEADERS) {
    const value = upstream.headers.get(name);
    if (value) headers.set(name, value);
  }
  return headers;
}

/** The upstream's 2xx answer, or the response the client gets for its failure. */
export type HeldAnswer = { ok: true; upstream: Response } | { ok: false; response: Response };

/**
 * Sends a call whose funds `bill` holds: the hold commits while the request travels, and both are
 * done before anything is relayed. A failed call (no answer, or a non-2xx one) releases the hold
 * unbilled; a non-2xx answer becomes the client's error response (or a thrown `GatewayError`).
 */
export async function sendHeld(
  ctx: RequestContext,
  bill: Bill,
  model: ResolvedModel,
  call: UpstreamCall,
  format: ErrorFormat,
  abort = new AbortController(),
): Promise<HeldAnswer> {
  let upstream: Response;
  try {
    [upstream] = await Promise.all([
      send(model.provider, call, abort, upstreamDeadlines(ctx.services.config)),
      bill.durable,
    ]);
  } catch (error) {
    await bill.release();
    throw error;
  }
  if (upstream.ok) return { ok: true, upstream };
  await bill.release();
  return { ok: false, response: await relayUpstreamError(upstream, format, model) };
}

/** Runs a same-protocol call end to end. */
export async function passThrough(p: PassThrough): Promise<Response> {
  const { ctx, model } = p;
  const { store, config } = ctx.services;
  const identity = {
    principal: ctx.principal!,
    requestId: ctx.requestId,
    endpoint: p.endpoint,
    model,
  };
  const hold = p.tokens ? holdTokens(ctx, model, p.tokens, identity) : undefined;
  const plan = hold?.plan;
  const bill: Bill = hold?.bill ?? openBill(store, {
    ...identity,
    reserve: price(p.units!, model.prices).amount,
    estimate: p.units!,
  });
  const sentCap = plan?.sendCap ? plan.cap : undefined;
  const abort = new AbortController();
  const answer = await sendHeld(ctx, bill, model, p.call(sentCap), p.format, abort);
  if (!answer.ok) return answer.response;
  const upstream = answer.upstream;
  const headers = responseHeaders(upstream);
  if (sentCap !== undefined) headers.set(OUTPUT_CAP_HEADER, String(sentCap));
  const meter = p.stream ? p.meter?.() : undefined;
  if (meter && upstream.body) {
    const body = relayStream(upstream.body, {
      framing: p.framing ?? "sse",
      onEvent: meter.onEvent,
      finished: meter.finished,
      errorTail: p.errorTail,
      rewrite: p.rewrite,
      abort: () => abort.abort(),
      idleMs: config.streamIdleTimeoutMs,
      maxMs: config.streamMaxMs,
      live: ctx.services.live,
      onEnd: async (how, why) => {
        if (how === "cut") log("warn", "stream cut", { request_id: ctx.requestId, reason: why });
        const prices = p.pricesFromMeter?.(meter) ?? model.prices;
        remember(p, meter.objects(), meter.usage());
        await bill.settleRelayed(meter.usage(), meter.complete(), meter.outputBytes(), prices);
      },
    });
    return new Response(body, { status: upstream.status, headers });
  }
  let text: string;
  try {
    text = await upstream.text();
  } catch (error) {
    await bill.settleEstimate(0);
    throw error;
  }
  let usage: Usage | null = null;
  let prices = model.prices;
  try {
    const json = JSON.parse(text);
    usage = p.usageFromJson(json);
    if (p.pricesFromJson) prices = p.pricesFromJson(json);
    if (p.objectsFromJson) remember(p, p.objectsFromJson(json), usage);
  } catch { /* not JSON: estimated below */ }
  await (usage
    ? bill.settle(usage, false, prices)
    : bill.settleEstimate(Math.ceil(text.length / 4)));
  return new Response(text, { status: upstream.status, headers });
}
