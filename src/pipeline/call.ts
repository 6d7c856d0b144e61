/**
 * What one call is, as the pipeline runs it (`route.ts` routes it, `admit.ts` holds it, `send.ts`
 * sends it, `relay.ts` relays its answer): the upstream request and how its answer is read,
 * metered, shown and kept.
 */
import type { Prices, ResolvedModel } from "../catalog/catalog.ts";
import type { Usage } from "../billing/price.ts";
import type { StreamMeter } from "../billing/usage.ts";
import type { RequestContext } from "../context.ts";
import type { ErrorFormat } from "../http/errors.ts";
import type { SseEvent } from "../http/sse.ts";
import type { UpstreamCall } from "../providers/index.ts";
import type { AnswerInfo, Codec, UsageView } from "../translate/codec.ts";
import type { CanonicalResponse } from "../translate/ir.ts";
import type { TokenRequest } from "../billing/reserve.ts";
import type { CreatedObject } from "../billing/usage.ts";

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
  /** Re-frames SSE events on the way back (see `relayStream`); absent: bytes pass unchanged. */
  rewrite?: (event: SseEvent) => string | null;
  /**
   * The upstream objects a JSON answer created (streams: the meter's), recorded as the caller's
   * (see `upstream_objects.ts`); absent when the call creates none that can be named later.
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
  /** Runs with the whole answer once the call completed (the conversation state kept). */
  onAnswer?(response: CanonicalResponse): void;
}
