/**
 * Relaying an answer to the client: the body goes upstream as the caller built it (on
 * pass-through only the model id, credentials and — when the balance requires it — the output cap
 * change); the answer is relayed as it is — JSON whole, streams unit by unit — or, for a
 * translated call, decoded from the upstream's protocol and encoded in the client's, event by
 * event. The meter always reads the upstream's side. Settled exactly once; failed calls are
 * released unbilled.
 */
import { inputTotal, type Usage } from "../billing/price.ts";
import type { Charged } from "../billing/ledger.ts";
import { tokenUsageOf } from "../billing/usage.ts";
import { utf8Length } from "../billing/estimate.ts";
import { GatewayError } from "../http/errors.ts";
import {
  PassUnits,
  ReadUnits,
  readWhole,
  relayStream,
  RewriteUnits,
  UnitFramer,
  type UnitOutput,
} from "../http/relay.ts";
import type { SseEvent } from "../http/sse.ts";
import { log } from "../log.ts";
import { metrics, UPSTREAM_SECONDS } from "../metrics/gateway.ts";
import { type CallSpan, providerName } from "../metrics/trace.ts";
import type { Lease } from "../routing/limits.ts";
import { faultPoint } from "../test_hooks.ts";
import type { Codec } from "../translate/codec.ts";
import { Transcoder } from "../translate/transcode.ts";
import type { CanonicalResponse } from "../translate/ir.ts";
import type { Call } from "./call.ts";
import { scopeOf } from "./scope.ts";
import type { Answered } from "./send.ts";
import { type CreatedObject, rememberObjects } from "./upstream_objects.ts";
import { redact } from "./upstream_errors.ts";

/** The response header that tells a client the output cap the gateway imposed. */
export const OUTPUT_CAP_HEADER = "x-switchyard-max-output-tokens";

/** A trace's view of a stream: the finish reasons its upstream events state. */
function finishReasons(codec: Codec, provider: string) {
  const reasons: string[] = [];
  const decoder = codec.streamDecoder((event) => {
    if (event.type === "finish") reasons.push(event.raw ?? event.reason);
  }, provider);
  let failed = false;
  return {
    push(event: SseEvent) {
      if (failed) return;
      try {
        decoder.push(event);
      } catch {
        failed = true; // a trace attribute is not worth an error
      }
    },
    result: () => reasons,
  };
}

/** The usage and finish reasons of a settled call, on its trace span. */
function traceUsage(trace: CallSpan, usage: Usage, finish: string[]): void {
  trace.set({
    "gen_ai.usage.input_tokens": inputTotal(usage),
    "gen_ai.usage.output_tokens": usage.outputTokens,
    "gen_ai.response.finish_reasons": finish.length ? finish : undefined,
  });
}

/** Records what the answer created, with the conversation's size for later holds. */
function remember(p: Call, objects: CreatedObject[], contextTokens: number): void {
  if (!p.objectsFromJson || !objects.length) return;
  const kept = p.keepResponses === false
    ? objects.filter((object) => object.kind !== "response")
    : objects;
  if (kept.length) rememberObjects(p.ctx, kept, contextTokens, p.model.provider.name);
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

/** The deadline of a JSON answer after its headers: the smaller stream limit set (0: none). */
function answerDeadline(idleMs: number, maxMs: number): number {
  const limits = [idleMs, maxMs].filter((ms) => ms > 0);
  return limits.length ? Math.min(...limits) : 0;
}

/**
 * Relays an answer; should anything fail before the relay owns it, the call's place, hold and
 * upstream body are given back (a settled hold stays settled: releasing it is a no-op). The
 * request's scope does the same for whatever fails after (see `scope.ts`).
 */
export async function relayGuarded(
  p: Call,
  answer: Answered,
  abort: AbortController,
  lease: Lease,
): Promise<Response> {
  try {
    faultPoint(p.ctx.req, "answered");
    return await relayAnswer(p, answer, abort, lease);
  } catch (error) {
    lease.release();
    await answer.bill.release();
    answer.upstream.body?.cancel().catch(() => {});
    throw error;
  }
}

/** The header that tells a client its usage is the gateway's estimate, not the upstream's report. */
export const USAGE_HEADER = "x-switchyard-usage";

/** The 502 of an answer the gateway cannot read: the client is told the call failed (unbilled). */
function unreadable(what: string): GatewayError {
  return new GatewayError(502, `The upstream provider answered with ${what}.`, {
    code: "upstream_bad_response",
  });
}

/** The relay of an attempt's answer: the client's response, settled when it ends. */
async function relayAnswer(
  p: Call,
  answer: Answered,
  abort: AbortController,
  lease: Lease,
): Promise<Response> {
  const { ctx, model } = p;
  faultPoint(ctx.req, "relay");
  const { config } = ctx.services;
  const bill = answer.bill;
  const sentCap = answer.sentCap;
  const upstream = answer.upstream;
  const upstreamLabels = [model.provider.name, model.id];
  const sent = answer.sent;
  const headers = responseHeaders(upstream);
  if (sentCap !== undefined) headers.set(OUTPUT_CAP_HEADER, String(sentCap));
  const trace = ctx.trace;
  trace?.named(model.id);
  trace?.set({
    "gen_ai.provider.name": providerName(model.provider.type),
    "gen_ai.request.model": model.id,
    "gen_ai.response.model": model.upstreamId,
  });
  /** The codec that reads the upstream's answer, for a trace's finish reasons. */
  const reader = trace ? p.translate?.upstream ?? p.codec : undefined;
  const meter = p.stream ? p.meter?.() : undefined;
  if (meter && upstream.body) {
    /** What the client was shown as its usage, when that is the gateway's (see `UsageView`). */
    let shown: Charged | undefined;
    const charge = () =>
      bill.charged(meter.usage(), meter.complete(), meter.outputBytes(), meter.running?.());
    /** At the event that carries the final usage: the charge, when the client must be shown it. */
    const showable = () => {
      const charged = charge();
      if (!charged.estimated) return null;
      shown = charged;
      return charged;
    };
    const translated = p.translate
      ? new Transcoder(p.translate, {
        shown: () => {
          const charged = showable();
          return charged && tokenUsageOf(charged.usage);
        },
        readable: () => meter.outputBytes() > 0 || meter.complete(),
        answer: p.translate.onAnswer,
      })
      : undefined;
    if (translated) {
      headers.set(
        "content-type",
        p.translate!.info.jsonArray ? "application/json; charset=utf-8" : "text/event-stream",
      );
      headers.set("cache-control", "no-cache");
    }
    const finishes = reader ? finishReasons(reader, model.provider.name) : undefined;
    trace?.defer();
    bill.toStream();
    const redacted = (text: string) => redact(text, model);
    const read = new ReadUnits(
      finishes
        ? (event) => {
          meter.onEvent(event);
          finishes.push(event);
        }
        : meter.onEvent,
      meter.finished,
    );
    const tail = p.errorTail ?? (() => undefined);
    let out: UnitOutput;
    if (translated) out = new RewriteUnits(translated, redacted);
    else if (p.rewrite) out = new RewriteUnits({ unit: p.rewrite, cut: tail }, redacted);
    else {
      const view = p.showUsage?.event?.();
      out = new PassUnits({
        show: view
          ? (event) => {
            if (shown || !view.carries(event)) return null;
            const charged = showable();
            return charged && view.write(event, tokenUsageOf(charged.usage));
          }
          : undefined,
        redact: redacted,
        tail,
      });
    }
    const body = relayStream(upstream.body, [new UnitFramer(p.framing ?? "sse"), read, out], {
      abort: () => abort.abort(),
      idleMs: config.streamIdleTimeoutMs,
      maxMs: config.streamMaxMs,
      live: ctx.services.live,
      onEnd: async (how, why) => {
        lease.release();
        metrics.observe(UPSTREAM_SECONDS, upstreamLabels, (performance.now() - sent) / 1000);
        if (how === "cut") log("warn", "stream cut", { request_id: ctx.requestId, reason: why });
        try {
          faultPoint(ctx.req, "settle");
          // A stream that brought nothing the gateway could read, or was cut before the upstream
          // produced anything, or whose translation failed: the client was told it failed.
          const nothing = meter.outputBytes() === 0 && !meter.complete();
          const failed = (how === "cut" && nothing) ||
            (how === "done" && (translated ? !translated.answered() : nothing && !meter.usage()));
          if (failed) {
            await bill.release();
          } else {
            const prices = p.pricesFromMeter?.(meter) ?? model.prices;
            const charged = how === "done" && shown ? shown : charge();
            // Recorded in the same commit as the charge.
            remember(p, meter.objects(), bill.contextTokens(charged, meter.usage()));
            await bill.settle(charged, prices);
            if (trace) traceUsage(trace, charged.usage, finishes?.result() ?? []);
          }
        } catch (error) {
          log("error", "settling a stream failed: charged its recorded estimate", {
            request_id: ctx.requestId,
            error: String(error),
          });
          await bill.settleRecorded();
        } finally {
          trace?.end();
        }
      },
    });
    return new Response(body, { status: upstream.status, headers });
  }
  let text: string;
  try {
    text = await readWhole(upstream, {
      abort: () => abort.abort(),
      ms: answerDeadline(config.streamIdleTimeoutMs, config.streamMaxMs),
    });
  } catch (error) {
    // No answer reached the client: nothing is charged.
    await bill.release();
    throw error;
  } finally {
    lease.release();
    metrics.observe(UPSTREAM_SECONDS, upstreamLabels, (performance.now() - sent) / 1000);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch { /* not JSON: refused below */ }
  if (!json || typeof json !== "object" || Array.isArray(json)) {
    await bill.release();
    throw unreadable(text ? "a body that is not a JSON object" : "an empty body");
  }
  const answerJson = json as Record<string, unknown>;
  if (p.isAnswer && !p.isAnswer(answerJson)) {
    await bill.release();
    throw unreadable("a body that is not an answer of its protocol");
  }
  let usage: Usage | null;
  let prices = model.prices;
  let canonical: CanonicalResponse | undefined;
  try {
    usage = p.usageFromJson(answerJson);
    if (p.pricesFromJson) prices = p.pricesFromJson(answerJson);
    if (p.translate) {
      canonical = p.translate.upstream.decodeResponse(answerJson, p.translate.provider);
    }
  } catch (error) {
    await bill.release();
    if (error instanceof GatewayError && error.status < 500) throw error;
    log("warn", "an upstream answer could not be read", {
      request_id: ctx.requestId,
      provider: model.provider.name,
      error: String(error),
    });
    throw unreadable("an answer of the wrong shape");
  }
  const charged = bill.charged(usage, usage !== null, utf8Length(text));
  faultPoint(ctx.req, "settle");
  // Settled once the response is sure to be sent (released if it cannot be: see `scope.ts`).
  const objects = p.objectsFromJson && usage ? p.objectsFromJson(answerJson) : [];
  scopeOf(ctx).settleOnAnswer(bill, async () => {
    // Recorded in the same commit as the charge.
    if (objects.length) remember(p, objects, bill.contextTokens(charged, usage));
    await bill.settle(charged, prices);
  });
  if (charged.estimated) headers.set(USAGE_HEADER, "estimated");
  if (trace) {
    let finish: string[] = [];
    if (reader) {
      try {
        const decoded = canonical ?? reader.decodeResponse(answerJson, model.provider.name);
        finish = [decoded.finish.raw ?? decoded.finish.reason];
      } catch { /* no finish reason to report */ }
    }
    traceUsage(trace, charged.usage, finish);
  }
  if (!p.translate) {
    if (!charged.estimated || !p.showUsage) {
      return new Response(text, { status: upstream.status, headers });
    }
    const patched = p.showUsage.json(answerJson, tokenUsageOf(charged.usage));
    return new Response(JSON.stringify(patched), { status: upstream.status, headers });
  }
  const t = p.translate;
  if (charged.estimated) canonical = { ...canonical!, usage: tokenUsageOf(charged.usage) };
  t.onAnswer?.(canonical!);
  headers.set("content-type", "application/json");
  return new Response(JSON.stringify(t.client.encodeResponse(canonical!, t.info)), { headers });
}
