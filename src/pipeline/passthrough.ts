/**
 * Same-protocol calls: reserve, forward the body (only the model id and credentials change),
 * relay the answer as it is — JSON whole, SSE chunk by chunk — reading usage on the way, then
 * settle exactly once. Failed calls are released unbilled.
 */
import { type Bill, estimateInputTokens, type OpenBill, openBill } from "../billing/ledger.ts";
import type { Usage } from "../billing/price.ts";
import type { StreamMeter } from "../billing/usage.ts";
import type { Prices, ResolvedModel } from "../catalog/catalog.ts";
import type { RequestContext } from "../context.ts";
import type { JsonBody } from "../http/body.ts";
import type { ErrorFormat } from "../http/errors.ts";
import { relayStream } from "../http/relay.ts";
import type { SseEvent } from "../http/sse.ts";
import { send, type UpstreamCall } from "../providers/index.ts";
import { relayUpstreamError } from "./upstream_errors.ts";

export interface PassThrough {
  ctx: RequestContext;
  format: ErrorFormat;
  /** Ledger endpoint name, e.g. `responses`. */
  endpoint: string;
  model: ResolvedModel;
  /** Size of the request's text, for the input estimate (characters; 0 when not text). */
  inputChars: number;
  /** The request's output cap, for the reservation. */
  maxOutputTokens?: number;
  /** For calls not billed by tokens: what to reserve and the fallback charge (see `OpenBill`). */
  units?: OpenBill["units"];
  stream: boolean;
  /** The upstream request, already in the upstream's protocol (see `withUpstreamModel`). */
  call: UpstreamCall;
  /** Usage from a complete JSON response body. */
  usageFromJson: (body: unknown) => Usage | null;
  /** Prices from a complete JSON response body, when the answer decides the rate. */
  pricesFromJson?: (body: unknown) => Prices | null;
  /** The stream meter, for calls that can stream. */
  meter?: () => StreamMeter;
  /** An error event in the client's protocol for streams the upstream cuts. */
  errorTail?: () => Uint8Array | undefined;
  /** Re-frames SSE events on the way back (see `relayStream`); absent: bytes pass unchanged. */
  rewrite?: (event: SseEvent) => string | null;
}

/** The client's body with `model` replaced by the upstream id (unchanged bytes when equal). */
export function withUpstreamModel(body: JsonBody, model: ResolvedModel): string {
  if (body.value.model === undefined || body.value.model === model.upstreamId) return body.text;
  return JSON.stringify({ ...body.value, model: model.upstreamId });
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
      send(model.provider, call, abort, ctx.services.config.upstreamTimeoutMs),
      bill.durable,
    ]);
  } catch (error) {
    await bill.release();
    throw error;
  }
  if (upstream.ok) return { ok: true, upstream };
  await bill.release();
  return { ok: false, response: await relayUpstreamError(upstream, format) };
}

/** Runs a same-protocol call end to end. */
export async function passThrough(p: PassThrough): Promise<Response> {
  const { ctx } = p;
  const { store } = ctx.services;
  const bill: Bill = openBill(store, {
    principal: ctx.principal!,
    requestId: ctx.requestId,
    endpoint: p.endpoint,
    model: p.model,
    inputTokens: estimateInputTokens(p.inputChars),
    maxOutputTokens: p.maxOutputTokens,
    units: p.units,
  });
  const abort = new AbortController();
  const answer = await sendHeld(ctx, bill, p.model, p.call, p.format, abort);
  if (!answer.ok) return answer.response;
  const upstream = answer.upstream;
  const headers = responseHeaders(upstream);
  const isSse = (upstream.headers.get("content-type") ?? "").startsWith("text/event-stream");
  const meter = p.stream ? p.meter?.() : undefined;
  if (meter && upstream.body && (isSse ? meter.onEvent : meter.onText)) {
    const body = relayStream(upstream.body, {
      onEvent: isSse ? meter.onEvent : undefined,
      onText: meter.onText,
      errorTail: p.errorTail,
      rewrite: isSse ? p.rewrite : undefined,
      onEnd: async (how) => {
        if (how === "cancel") abort.abort();
        const usage = meter.usage();
        await (usage ? bill.settle(usage) : bill.settleEstimate(meter.outputEvents()));
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
  let prices = p.model.prices;
  try {
    const json = JSON.parse(text);
    usage = p.usageFromJson(json);
    if (p.pricesFromJson) prices = p.pricesFromJson(json);
  } catch { /* not JSON: estimated below */ }
  await (usage
    ? bill.settle(usage, false, prices)
    : bill.settleEstimate(Math.ceil(text.length / 4)));
  return new Response(text, { status: upstream.status, headers });
}
