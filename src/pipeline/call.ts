/**
 * What one call is, as the pipeline runs it (`route.ts` routes and sends it, `hold.ts` holds it,
 * `relay.ts` relays its answer): the upstream request and how its answer is read,
 * metered, shown and kept — and the cross-cutting steps around its answer, in the spirit of
 * Bifrost's pre/post hooks: each step's `before` runs as the relay begins, in the list's order,
 * its `after` once the call has ended, in reverse order. The list is `relay.ts`'s; here are the
 * trace, the stored-object records and the metrics (the settlement is `hold.ts`'s).
 */
import type { Prices, ResolvedModel } from "../catalog/catalog.ts";
import type { Bill, Charged } from "../billing/ledger.ts";
import { inputTotal, type Usage } from "../billing/price.ts";
import type { StreamMeter } from "../billing/usage.ts";
import type { RequestContext } from "../context.ts";
import type { ErrorFormat } from "../http/errors.ts";
import type { SseEvent } from "../http/sse.ts";
import { metrics, UPSTREAM_SECONDS } from "../metrics/gateway.ts";
import { providerName } from "../metrics/trace.ts";
import type { UpstreamCall } from "../providers/index.ts";
import type { AdaptationKind } from "../translate/adaptations.ts";
import type { AnswerInfo, Codec, UsageView } from "../translate/codec.ts";
import type { CanonicalResponse } from "../translate/ir.ts";
import type { TokenRequest } from "../billing/reserve.ts";
import type { CreatedObject } from "../billing/usage.ts";
import { log } from "../log.ts";
import type { UpstreamObject } from "../store/store.ts";
import { MAX_ID } from "./resolve.ts";

/** One call to an upstream, in its upstream's protocol, and how its answer is read and shown. */
export interface Call {
  ctx: RequestContext;
  format: ErrorFormat;
  /** Ledger endpoint name, e.g. `responses`. */
  endpoint: string;
  model: ResolvedModel;
  /** A token-billed call: what the reservation needs to know. */
  tokens?: TokenRequest;
  /**
   * A call billed by units (images, video seconds, search calls): what to charge when nothing
   * better is known, and what to hold (`unitsHold`, else the same).
   */
  units?: Usage;
  unitsHold?: Usage;
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
  /** A stream that ends in the client protocol's error is then aborted (see `AnswerForms`). */
  abortFailed?: boolean;
  /**
   * Pass-through: the text to send instead of an SSE unit ("" for nothing), or null to pass it as
   * it came (see `PreparedCall.strip`); absent: bytes pass unchanged, but for a usage shown.
   */
  strip?: (event: SseEvent) => string | null;
  /**
   * The upstream objects a JSON answer created (streams: the meter's), recorded as the caller's
   * (see `recordStep`); absent when the call creates none that can be named later.
   */
  objectsFromJson?: (body: unknown) => CreatedObject[];
  /** False when the answer's own response object is not stored upstream (not recorded then). */
  keepResponses?: boolean;
  /** The upstream's error envelope, when it is not the client's (a translated call). */
  upstreamFormat?: ErrorFormat;
  /** A translated call: how its answer is turned into the client's protocol. */
  translate?: Translation;
  /** The upstream's protocol codec on pass-through, read only for traces (finish reasons). */
  codec?: Codec;
  /**
   * Pass-through: how the client is shown the usage charged when it is not the upstream's own
   * report (an estimate, or the hold); absent: the answer has no usage to show.
   */
  showUsage?: UsageView;
  /** Whether a whole JSON answer has the upstream protocol's shape (else: 502, unbilled). */
  isAnswer?: (answer: Record<string, unknown>) => boolean;
}

/** A translated call's answer: decoded by the upstream's codec, encoded by the client's. */
export interface Translation {
  upstream: Codec;
  client: Codec;
  /** The provider's name, which tags the opaque state of its answer. */
  provider: string;
  info: AnswerInfo;
  /** The kinds of adaptation the translation made (see `adapted.ts`). */
  adapted?: readonly AdaptationKind[];
  /** Runs with the whole answer once the call completed (the conversation state kept). */
  onAnswer?(response: CanonicalResponse): void;
}

/** A call whose answer is relayed, as its steps see it. */
export interface Relaying {
  call: Call;
  /** The call's hold. */
  bill: Bill;
  /** When the upstream request went (`performance.now()`). */
  sent: number;
  /** The answer is a stream (ended by its relay); else a whole JSON answer. */
  stream: boolean;
}

/** How a call ended, as its steps' `after` see it. */
export type CallEnd =
  /** Nothing is charged: the client was told the call failed, or it could not be answered. */
  | { outcome: "released" }
  /** Charged `charged` at `prices`; what the answer reported and created. */
  | {
    outcome: "charged";
    charged: Charged;
    prices: Prices | null;
    /** The usage the upstream reported (null: none). */
    usage: Usage | null;
    /** The upstream objects the answer created. */
    objects: CreatedObject[];
    /** A whole answer: the upstream's, and its canonical form when it was decoded. */
    answer?: Record<string, unknown>;
    canonical?: CanonicalResponse;
  }
  /** What to charge could not be worked out (a fault in the gateway): the recorded estimate is. */
  | { outcome: "recorded"; error: unknown };

/** Cross-cutting work around one call's answer (see the module's doc). */
export interface CallStep {
  /** As the relay of the answer begins. */
  before?(): void;
  /** A streamed answer's units, each as it is read (in step with the meter). */
  unit?(event: SseEvent): void;
  /** Once the call has ended. */
  after?(end: CallEnd): void | Promise<void>;
}

/** A step for one call, or undefined when it has nothing to do for it. */
export type StepOf = (relaying: Relaying) => CallStep | undefined;

/** The steps of one call's answer: begun (every `before` run) as the relay begins. */
export class CallSteps {
  readonly #steps: CallStep[] = [];
  #ended = false;
  /** Reads a unit into every step that reads units; undefined when none does. */
  readonly unit: ((event: SseEvent) => void) | undefined;

  constructor(list: StepOf[], relaying: Relaying) {
    for (const of of list) {
      const step = of(relaying);
      if (step) this.#steps.push(step);
    }
    for (const step of this.#steps) step.before?.();
    const readers = this.#steps.filter((step) => step.unit);
    this.unit = readers.length
      ? (event) => {
        for (const step of readers) step.unit!(event);
      }
      : undefined;
  }

  /** Runs every `after`, in reverse order, once; each runs whatever another threw (rethrown). */
  async end(end: CallEnd): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    let failure: { error: unknown } | undefined;
    for (let i = this.#steps.length - 1; i >= 0; i--) {
      try {
        // Most steps end at once: only a promise is waited for (no turn per step).
        const ending = this.#steps[i].after?.(end);
        if (ending) await ending;
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  }
}

/**
 * The trace step: the model call's span named and described as the relay begins, its usage and
 * finish reasons set once the call is charged; a stream's span ends with the stream.
 */
export const traceStep: StepOf = ({ call, stream }) => {
  const trace = call.ctx.trace;
  if (!trace) return undefined;
  const { model } = call;
  /** The codec that reads the upstream's answer, for its finish reasons. */
  const reader = call.translate?.upstream ?? call.codec;
  const finishes = stream && reader ? finishReasons(reader, model.provider.name) : undefined;
  return {
    before() {
      trace.named(model.id);
      trace.set({
        "gen_ai.provider.name": providerName(model.provider.type),
        "gen_ai.request.model": model.id,
        "gen_ai.response.model": model.upstreamId,
      });
      if (stream) trace.defer();
    },
    unit: finishes?.push,
    after(end) {
      if (end.outcome === "charged") {
        let finish = finishes?.result() ?? [];
        if (!stream && reader && end.answer) {
          try {
            const decoded = end.canonical ??
              reader.decodeResponse(end.answer, model.provider.name);
            finish = [decoded.finish.raw ?? decoded.finish.reason];
          } catch { /* no finish reason to report */ }
        }
        trace.set({
          "gen_ai.usage.input_tokens": inputTotal(end.charged.usage),
          "gen_ai.usage.output_tokens": end.charged.usage.outputTokens,
          "gen_ai.response.finish_reasons": finish.length ? finish : undefined,
        });
      }
      // A whole answer's span ends with its request (see `server.ts`).
      if (stream) trace.end();
    },
  };
};

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

/**
 * The records step. Upstream state — stored responses and their items, containers — lives under
 * the operator's one upstream key, so one account must never reach another's: the objects a
 * charged answer created are recorded as the caller's, with the conversation's size for later
 * holds (a response's) and the provider holding them, in the same commit as the charge (it runs
 * just before the settle step's `after`); a response stored nowhere (`store: false`) and its items
 * are not recorded. A request naming an object that is not its account's is refused as not found
 * (the rule is `resolve.ts`'s; what each protocol's requests name is its own).
 */
export const recordStep: StepOf = ({ call, bill }) => {
  if (!call.objectsFromJson) return undefined;
  return {
    after(end) {
      if (end.outcome !== "charged" || !end.objects.length) return;
      const { ctx } = call;
      const contextTokens = bill.contextTokens(end.charged, end.usage);
      const provider = call.model.provider.name;
      const accountId = ctx.principal!.accountId;
      // A WebSocket's turn: the connection knows them at once, `store: false` responses too (the
      // upstream keeps the last on its socket; the store's record is written meanwhile).
      const local = ctx.socket?.objects;
      const recorded: UpstreamObject[] = [];
      for (const { id, kind } of end.objects) {
        if (id.length > MAX_ID) continue;
        const object = { id, accountId, kind, contextTokens: kind === "item" ? 0 : contextTokens };
        local?.set(id, { ...object, provider });
        if (kind !== "container" && call.keepResponses === false) continue;
        recorded.push({ ...object, provider });
      }
      // The answer's objects in one write, not one each.
      if (!recorded.length) return;
      ctx.services.store.recordObjects(recorded)
        .catch((error) =>
          log("warn", "upstream object not recorded", {
            request_id: ctx.requestId,
            objects: recorded.length,
            error: String(error),
          })
        );
    },
  };
};

/** The metrics step: how long the upstream took to answer, to the end of its answer. */
export const metricsStep: StepOf = ({ call, sent }) => ({
  after() {
    const labels = [call.model.provider.name, call.model.id];
    metrics.observe(UPSTREAM_SECONDS, labels, (performance.now() - sent) / 1000);
  },
});

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
