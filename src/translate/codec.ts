/**
 * The converter signatures each protocol module implements (pure). A stream decoder turns the
 * upstream's units (SSE events, or JSON array elements as unnamed events) into canonical events;
 * an encoder turns canonical events into the client's text. Both are push-style and synchronous,
 * so a relay runs them per unit with no extra promise (decode ∘ encode: `transcode.ts`).
 */
import type { SseEvent } from "../http/sse.ts";
import type { ProviderType } from "../config/schema.ts";
import type { Adapt } from "./adaptations.ts";
import type {
  AssistantPart,
  CanonicalEvent,
  CanonicalRequest,
  CanonicalResponse,
  Json,
  Opaque,
  ProtocolId,
  TokenUsage,
} from "./ir.ts";

/** What a request decoder knows of the route besides the body. */
export interface RouteInfo {
  /** The route streams (Gemini's `:streamGenerateContent`); else the body's `stream` decides. */
  stream?: boolean;
  /**
   * The content of an answer the gateway translated and keeps for the caller, by the answer's
   * id (a Responses `item_reference` names one of its items); undefined when it keeps no such
   * answer of the caller's. Absent: none is kept.
   */
  kept?(answerId: string): AssistantPart[] | undefined;
}

/** Where an encoded request goes: the upstream model id, the provider (for opaque state). */
export interface Target {
  model: string;
  /** The configured provider's name: opaque state is replayed only to the one that issued it. */
  provider: string;
  /** The provider's family (`openai`, `openai-compatible`…), for its dialect's small choices. */
  family: ProviderType;
  /**
   * `false`: the operator turned off the breakpoints the gateway places for clients of a protocol
   * that caches by itself (the model's `cacheBreakpoints`); a client's own are sent regardless.
   */
  cacheBreakpoints?: boolean;
}

/** What a client-side encoder puts in what it writes. */
export interface AnswerInfo {
  /** The id of the answer (`resp_…`, `msg_…`, `chatcmpl-…`), the same on every event. */
  id: string;
  /** The model id the client asked for. */
  model: string;
  /** Unix seconds. */
  created: number;
  /**
   * The gateway's estimate of the input tokens (the one the call's hold charges when the upstream
   * reports none): what a stream's opening shows as its input where the upstream has not counted
   * it by its first event (Responses and chat count it only at the end). Absent: 0 is shown.
   */
  inputEstimate?: number;
  /** Chat: the client asked for a usage chunk. */
  usageChunk?: boolean;
  /** Gemini: the stream is one JSON array instead of SSE. */
  jsonArray?: boolean;
  /**
   * The client's free-form (Responses `custom`) tools by name: a call to one is written as a
   * custom tool call even when the upstream answered it as a function call with `{input}`.
   */
  customTools?: ReadonlySet<string>;
  /** The client's namespaced functions by flattened name (see `FunctionTool.namespace`). */
  namespaced?: ReadonlyMap<string, { namespace: string; name: string }>;
  /**
   * The client's tools that it runs but are not functions, by function name: their Responses
   * type (see `FunctionTool.clientType`), whose call items their calls are written as.
   */
  clientTools?: ReadonlyMap<string, string>;
  /** The answer whose conversation this one continues (Responses `previous_response_id`). */
  previousId?: string;
  /** The token a client carries for opaque state (see `opaque.ts`). */
  token(opaque: Opaque, text?: string): string;
}

/** A protocol's stream decoder: the upstream's units in, canonical events out (push-style). */
export interface StreamDecoder {
  /** One upstream unit; canonical events go to the sink given at creation. */
  push(event: SseEvent): void;
  /** The upstream ended cleanly: whatever the protocol leaves implicit (Gemini's end). */
  end(): void;
}

/** A protocol's stream encoder: canonical events in, the client's text out (push-style). */
export interface StreamEncoder {
  /** One canonical event; bytes go to the writer given at creation. */
  push(event: CanonicalEvent): void;
  /** The stream failed: the protocol's own in-stream error, ending it. */
  fail(message: string): void;
}

/**
 * How a protocol's answers show a usage the gateway decided (an estimate, or a charge at the
 * hold) in place of the upstream's report, on pass-through where the answer is the upstream's own.
 */
export interface UsageView {
  /**
   * Whether a whole answer has the protocol's shape (its id and content members of their types):
   * one that does not is not relayed as an answer (the client gets a 502, unbilled).
   */
  answer?(answer: Json): boolean;
  /** A whole answer with `usage` as its usage. */
  json(answer: Json, usage: TokenUsage): Json;
  /**
   * Streams, one view per stream: which event carries the final usage (asked of every event, in
   * order), and that event rewritten with `usage`.
   */
  event?: () => {
    carries(event: SseEvent): boolean;
    write(event: SseEvent, usage: TokenUsage): string;
  };
}

/** The converters of one wire protocol. */
export interface Codec {
  id: ProtocolId;
  /**
   * Client request → canonical; throws a 400 `GatewayError` naming the field it cannot take, and
   * notes to `adapt` what it carries only approximately (see `adaptations.ts`).
   */
  decodeRequest(body: Json, route: RouteInfo, adapt?: Adapt): CanonicalRequest;
  /**
   * Canonical → upstream request body; throws a 400 for what this protocol cannot express, and
   * notes to `adapt` every adaptation it makes (see `adaptations.ts`).
   */
  encodeRequest(request: CanonicalRequest, target: Target, adapt?: Adapt): Json;
  /** Upstream answer → canonical; `provider` tags its opaque state. */
  decodeResponse(body: Json, provider: string): CanonicalResponse;
  /** Canonical → the client's answer. */
  encodeResponse(response: CanonicalResponse, info: AnswerInfo): Json;
  streamDecoder(emit: (event: CanonicalEvent) => void, provider: string): StreamDecoder;
  streamEncoder(write: (text: string) => void, info: AnswerInfo): StreamEncoder;
}
