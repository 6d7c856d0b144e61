/**
 * Relaying an answer to the client: JSON read whole, streams unit by unit through the stages of
 * `http/relay.ts` — the bytes as they are (pass-through), or decoded from the upstream's protocol
 * and encoded in the client's (a translation) — with the meter always reading the upstream's side.
 * The cross-cutting work around the answer runs as the steps listed here (`STEPS`: the trace, the
 * settlement, the stored-object records, the metrics, the adaptations shown, the conversation's
 * placement; see `call.ts`, `adapted.ts`, `affinity.ts`): each `before` as the relay begins, each
 * `after` once the call has ended — a stream when it ends, a whole answer once its response is
 * sure to be sent (see `hold.ts`). Settled exactly once; failed calls are released unbilled.
 */
import type { Charged } from "../billing/ledger.ts";
import type { Usage } from "../billing/price.ts";
import type { StreamMeter } from "../billing/usage.ts";
import { tokenUsageOf } from "../billing/usage.ts";
import { utf8Length } from "../http/utf8.ts";
import { GatewayError } from "../http/errors.ts";
import { deadline } from "../http/deadlines.ts";
import { PassUnits, ReadUnits, RewriteUnits, UnitFramer, type UnitOutput } from "../http/relay.ts";
import { relayStream } from "../http/relay_stream.ts";
import { log } from "../log.ts";
import type { Lease } from "../routing/limits.ts";
import { faultPoint } from "../test_hooks.ts";
import { Transcoder } from "../translate/transcode.ts";
import type { CanonicalResponse } from "../translate/ir.ts";
import {
  type Answered,
  type Call,
  type CallEnd,
  CallSteps,
  metricsStep,
  recordStep,
  type StepOf,
  traceStep,
} from "./call.ts";
import { scopeOf, settleStep } from "./hold.ts";
import { affinityStep } from "./affinity.ts";
import { adaptedStep } from "./adapted.ts";

import { redact } from "./upstream_errors.ts";

/** The steps around every answer, in order: `before` runs down this list, `after` up it. */
const STEPS: StepOf[] = [traceStep, settleStep, recordStep, metricsStep, adaptedStep, affinityStep];

/** The response header that tells a client the output cap the gateway imposed. */
export const OUTPUT_CAP_HEADER = "x-switchyard-max-output-tokens";

/** The header that tells a client its usage is the gateway's estimate, not the upstream's report. */
export const USAGE_HEADER = "x-switchyard-usage";

const RELEASED: CallEnd = { outcome: "released" };

const PASSED_HEADERS = ["content-type", "cache-control", "retry-after"];

/**
 * The upstream's headers the client gets, as a record: a `Response` takes a record's fields as they
 * are, where a `Headers` is sorted and combined again to be copied.
 */
function responseHeaders(upstream: Response): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of PASSED_HEADERS) {
    const value = upstream.headers.get(name);
    if (value) headers[name] = value;
  }
  return headers;
}

/** The deadline of a JSON answer after its headers: the smaller stream limit set (0: none). */
function answerDeadline(idleMs: number, maxMs: number): number {
  const limits = [idleMs, maxMs].filter((ms) => ms > 0);
  return limits.length ? Math.min(...limits) : 0;
}

/** The 502 of an answer the gateway cannot read: the client is told the call failed (unbilled). */
function unreadable(what: string): GatewayError {
  return new GatewayError(502, `The upstream provider answered with ${what}.`, {
    code: "upstream_bad_response",
  });
}

/** The request of a call whose answer is being relayed: it was sent, and is not built again. */
const SENT = (): never => {
  throw new Error("the call was sent: its answer is being relayed");
};

/**
 * Relays an attempt's answer: the client's response, settled when it ends. Should anything fail
 * before the relay owns the answer, the call's place, hold and upstream body are given back (a
 * settled hold stays settled: releasing it is a no-op); the request's scope does the same for
 * whatever fails after (see `hold.ts`).
 *
 * What relays a stream and settles it keeps the call without the function that builds its
 * upstream request: that function holds the text it sends, which a stream would otherwise keep
 * until it ends — an agent's request of a few hundred kilobytes for a minute of streaming. A whole
 * answer is settled as its request ends, and keeps the call as it is.
 */
export async function relay(
  sent: Call,
  answer: Answered,
  abort: AbortController,
  lease: Lease,
): Promise<Response> {
  let steps: CallSteps | undefined;
  try {
    faultPoint(sent.ctx.req, "answered");
    faultPoint(sent.ctx.req, "relay");
    const { upstream, bill } = answer;
    const headers = responseHeaders(upstream);
    if (answer.sentCap !== undefined) headers[OUTPUT_CAP_HEADER] = String(answer.sentCap);
    const meter = sent.stream && upstream.body ? sent.meter?.() : undefined;
    // A whole answer ends with its request: only a stream's call is kept without its builder.
    const p: Call = meter ? { ...sent, call: SENT } : sent;
    steps = new CallSteps(STEPS, { call: p, bill, sent: answer.sent, stream: meter !== undefined });
    if (meter) return relayAnswerStream(p, answer, meter, steps, headers, abort, lease);
    return await relayAnswerJson(p, answer, steps, headers, abort, lease);
  } catch (error) {
    lease.release();
    if (steps) await steps.end(RELEASED);
    await answer.bill.release();
    answer.upstream.body?.cancel().catch(() => {});
    throw error;
  }
}

/** A streamed answer, relayed through the stages of `http/relay.ts`; its steps end with it. */
function relayAnswerStream(
  p: Call,
  answer: Answered,
  meter: StreamMeter,
  steps: CallSteps,
  headers: Record<string, string>,
  abort: AbortController,
  lease: Lease,
): Response {
  const { ctx, model } = p;
  const { config } = ctx.services;
  const { bill, upstream } = answer;
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
  // The client's opening shows the hold's input estimate where the upstream has not counted it.
  const translated = p.translate
    ? new Transcoder({
      ...p.translate,
      info: { ...p.translate.info, inputEstimate: bill.inputEstimate },
    }, {
      shown: () => {
        const charged = showable();
        return charged && tokenUsageOf(charged.usage);
      },
      readable: () => meter.outputBytes() > 0 || meter.complete(),
      answer: p.translate.onAnswer,
    })
    : undefined;
  if (translated) {
    headers["content-type"] = p.translate!.info.jsonArray
      ? "application/json; charset=utf-8"
      : "text/event-stream";
    headers["cache-control"] = "no-cache";
  }
  const tap = steps.unit;
  const read = new ReadUnits(
    tap
      ? {
        onEvent(event) {
          meter.onEvent(event);
          tap(event);
        },
        finished() {
          return meter.finished();
        },
      }
      : meter,
  );
  const redacted = (text: string) => redact(text, model);
  const tail = p.errorTail ?? (() => undefined);
  let out: UnitOutput;
  if (translated) out = new RewriteUnits(translated, redacted);
  else {
    const view = p.strip ? undefined : p.showUsage?.event?.();
    out = new PassUnits({
      show: view
        ? (event) => {
          if (shown || !view.carries(event)) return null;
          const charged = showable();
          return charged && view.write(event, tokenUsageOf(charged.usage));
        }
        : p.strip,
      redact: redacted,
      tail,
    });
  }
  const body = relayStream(upstream.body!, [new UnitFramer(p.framing ?? "sse"), read, out], {
    abort: () => abort.abort(),
    idleMs: config.streamIdleTimeoutMs,
    maxMs: config.streamMaxMs,
    live: ctx.services.live,
    abortFailed: p.abortFailed,
    onEnd: async (how, why) => {
      lease.release();
      if (how === "cut") log("warn", "stream cut", { request_id: ctx.requestId, reason: why });
      let end: CallEnd;
      try {
        faultPoint(ctx.req, "settle");
        // A stream that brought nothing the gateway could read, or was cut before the upstream
        // produced anything, or whose translation failed: the client was told it failed.
        const nothing = meter.outputBytes() === 0 && !meter.complete();
        const failed = (how === "cut" && nothing) ||
          (how === "done" && (translated ? !translated.answered() : nothing && !meter.usage()));
        end = failed ? RELEASED : {
          outcome: "charged",
          prices: p.pricesFromMeter?.(meter) ?? model.prices,
          charged: how === "done" && shown ? shown : charge(),
          usage: meter.usage(),
          objects: meter.objects(),
        };
      } catch (error) {
        end = { outcome: "recorded", error };
      }
      await steps.end(end);
    },
  });
  return new Response(body, { status: upstream.status, headers });
}

/**
 * A JSON answer, read whole and checked, then relayed as it is (or with the usage the gateway
 * charges, when that is not the upstream's), or encoded in the client's protocol; its steps end
 * once the response is sure to be sent (see `CallScope.settleOnAnswer`).
 */
async function relayAnswerJson(
  p: Call,
  answer: Answered,
  steps: CallSteps,
  headers: Record<string, string>,
  abort: AbortController,
  lease: Lease,
): Promise<Response> {
  const { ctx, model } = p;
  const { config } = ctx.services;
  const { bill, upstream } = answer;
  // Read natively, within the deadline: past it the upstream request is aborted (which ends the
  // read) and a 504 thrown. An answer arrives in one go after its headers, so one deadline (the
  // stream idle limit) stands for both the idle and the total limit of streams.
  const ms = answerDeadline(config.streamIdleTimeoutMs, config.streamMaxMs);
  let late = false;
  const stop = ms > 0
    ? deadline(ms, () => {
      late = true;
      abort.abort();
    })
    : undefined;
  let text: string;
  try {
    text = await upstream.text();
  } catch (error) {
    if (late) throw new GatewayError(504, "The upstream stopped sending its answer.");
    throw error;
  } finally {
    stop?.();
    lease.release();
  }
  // From here, what fails is released (no answer reached the client: nothing is charged).
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch { /* not JSON: refused below */ }
  if (!json || typeof json !== "object" || Array.isArray(json)) {
    throw unreadable(text ? "a body that is not a JSON object" : "an empty body");
  }
  const answerJson = json as Record<string, unknown>;
  if (p.isAnswer && !p.isAnswer(answerJson)) {
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
    if (error instanceof GatewayError && error.status < 500) throw error;
    log("warn", "an upstream answer could not be read", {
      request_id: ctx.requestId,
      provider: model.provider.name,
      error: String(error),
    });
    throw unreadable("an answer of the wrong shape");
  }
  // The answer's size counts only for a charge estimated without a report (a complete one is the
  // charge): not measured otherwise.
  const charged = bill.charged(usage, usage !== null, usage === null ? utf8Length(text) : 0);
  faultPoint(ctx.req, "settle");
  const end: CallEnd = {
    outcome: "charged",
    charged,
    prices,
    usage,
    objects: p.objectsFromJson && usage ? p.objectsFromJson(answerJson) : [],
    answer: answerJson,
    canonical,
  };
  // Settled once the response is sure to be sent (released if it cannot be).
  scopeOf(ctx).settleOnAnswer(bill, (answered) => steps.end(answered ? end : RELEASED));
  if (charged.estimated) headers[USAGE_HEADER] = "estimated";
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
  headers["content-type"] = "application/json";
  return new Response(JSON.stringify(t.client.encodeResponse(canonical!, t.info)), { headers });
}
