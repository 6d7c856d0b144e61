/**
 * The one record a wire protocol is (see ARCHITECTURE.md): its converters to and from the
 * canonical form (`Codec`), and what the call pipeline needs of it on either side — on the
 * client's side, reading a request and the error forms; on the upstream's side, planning a call
 * (its hold and request), reading usage, metering a stream. The pipeline never asks which protocol
 * it has.
 */
import type { RequestContext } from "../context.ts";
import type { ResolvedModel } from "../catalog/catalog.ts";
import type { JsonBody } from "../http/body.ts";
import type { ErrorFormat } from "../http/errors.ts";
import type { SseEvent } from "../http/sse.ts";
import type { Usage } from "../billing/price.ts";
import type { StreamMeter } from "../billing/usage.ts";
import type { TokenRequest } from "../pipeline/reserve.ts";
import type { CreatedObject } from "../pipeline/upstream_objects.ts";
import type { CountClient, CountUpstream } from "../pipeline/count_tokens.ts";
import type { UpstreamCall } from "../providers/index.ts";
import type { Codec, UsageView } from "../translate/codec.ts";
import type { CanonicalRequest, CanonicalResponse, Json } from "../translate/ir.ts";

/** What the pipeline needs from a client's request once it is read and validated. */
export interface Accepted {
  /** The model id the client asked for. */
  model: string;
  /** The call's name in the ledger (`responses`, `messages`, `streamGenerateContent`…). */
  endpoint: string;
  stream: boolean;
  /** Gemini: the client's stream is one JSON array instead of SSE. */
  jsonArray?: boolean;
  /** Chat: the client asked for a usage chunk. */
  usageChunk?: boolean;
}

/** How a call in this protocol is to be made. */
export interface PrepareOptions {
  stream: boolean;
  /** Gemini: stream as one JSON array (the client's own choice, on pass-through only). */
  jsonArray?: boolean;
  /** The client speaks this protocol too: its request and answer pass through as they are. */
  passthrough: boolean;
  /** Chat, on pass-through: the client asked for the usage chunk itself. */
  usageChunk?: boolean;
}

/** A call planned in its upstream's protocol: how it is held, sent and read. */
export interface PreparedCall {
  tokens: TokenRequest;
  /** The upstream request; `cap` is the output cap to send when the gateway imposes one. */
  call(cap: number | undefined): UpstreamCall;
  framing: "sse" | "json-array";
  /** Pass-through only: re-frames stream events for the client (see `relayStream`). */
  rewrite?: (event: SseEvent) => string | null;
  /** Usage from a whole answer. */
  usageFromJson(body: unknown): Usage | null;
  /** A meter for the call's stream. */
  meter(): StreamMeter;
  /** The upstream objects a JSON answer created, recorded as the caller's. */
  objectsFromJson?: (body: unknown) => CreatedObject[];
  /** False when the answer's own response object is not stored upstream. */
  keepResponses?: boolean;
}

/**
 * Conversation state the gateway keeps for a protocol whose clients chain calls by id
 * (Responses `previous_response_id` on an upstream that cannot hold it).
 */
export interface ConversationState {
  /** Whether the body continues a conversation the gateway keeps (it must then be translated). */
  held(ctx: RequestContext, body: Json): boolean;
  /** The request with the conversation it continues put in front; throws 404 for unknown ids. */
  restore(ctx: RequestContext, body: Json, request: CanonicalRequest): CanonicalRequest;
  /**
   * Keeps the call — `request` as the client sent it, without the history put in front — under
   * the answer's id (when the client asked to store it).
   */
  keep(
    ctx: RequestContext,
    body: Json,
    request: CanonicalRequest,
    response: CanonicalResponse,
    id: string,
  ): void;
}

export interface WireProtocol extends Codec {
  /** The error envelope its routes answer in. */
  errors: ErrorFormat;
  /** Reads the client's request: validation (400 naming the field), the model, streaming. */
  accept(ctx: RequestContext, body: JsonBody): Accepted;
  /** A new id for a translated answer (`resp_…`, `msg_…`, `chatcmpl-…`). */
  answerId(): string;
  /** How its answers show a usage the gateway decided (an estimate, or the hold). */
  usageView: UsageView;
  /** Bytes that end a pass-through stream the upstream cut, in this protocol. */
  errorTail(started: boolean, jsonArray?: boolean): Uint8Array;
  /** Plans a call of `body` — already in this protocol — to `model`. */
  prepare(
    ctx: RequestContext,
    body: JsonBody,
    model: ResolvedModel,
    options: PrepareOptions,
  ): PreparedCall;
  /** Chained-conversation state the gateway keeps when the upstream cannot. */
  conversation?: ConversationState;
  /** The provider holding upstream state the body continues (the call must go there), if any. */
  stateProvider?(ctx: RequestContext, body: Record<string, unknown>): string | undefined;
  /** Its token-counting route, when it has one. */
  countClient?: CountClient;
  /** Its upstream token-counting endpoint, when it has one. */
  countUpstream?: CountUpstream;
}
