/**
 * The one record a wire protocol is: its converters to and from the canonical form (`Codec`), what
 * it declares — its error envelope, the forms of its answers, the stored state a body names, its
 * token counting — and the two things it does for a call: reading the client's request (`accept`)
 * and planning a call to an upstream of this protocol (`prepare`: its hold and request, how usage
 * is read and a stream metered). The pipeline never asks which protocol it has. It depends on
 * nothing above it: what a protocol reads of a request besides its body comes as a `CallInput`,
 * which the pipeline builds.
 */
import type { ResolvedModel } from "../catalog/catalog.ts";
import type { JsonBody } from "../http/body.ts";
import type { ErrorFormat } from "../http/errors.ts";
import type { SseEvent } from "../http/sse.ts";
import type { Usage } from "../billing/price.ts";
import type { StreamMeter } from "../billing/usage.ts";
import type { TokenRequest } from "../billing/reserve.ts";
import type { CreatedObject, ObjectKind } from "../billing/usage.ts";
import type { UpstreamCall } from "../providers/index.ts";
import type { Codec, UsageView } from "../translate/codec.ts";
import type { Json } from "../translate/ir.ts";

/** An upstream object the caller may continue: its conversation's size. */
export interface OwnedObject {
  contextTokens: number;
}

/**
 * What a protocol reads of a request besides its body: its URL, headers and path parameters, and
 * the upstream objects it names — read by the pipeline (see `BodyNames`), which owns the rule of
 * whose they are.
 */
export interface CallInput {
  url: URL;
  headers: Headers;
  /** The route's path parameters (`model` on Gemini's routes). */
  params: Record<string, string>;
  /** The caller's own upstream object `id` of `kind`, or a thrown 404 naming `field`. */
  own(id: unknown, kind: "response" | "container", field: string): OwnedObject;
  /** The caller's own upstream object `id` of `kind`, or undefined (the protocol then decides). */
  owned(id: unknown, kind: ObjectKind): OwnedObject | undefined;
}

/**
 * A Messages thread a body creates or continues (`thread`, the `message-threads-2026-08-12` beta):
 * a conversation held between calls, by the upstream on pass-through, else by the gateway (see
 * `pipeline/threads.ts`).
 */
export type ThreadName = { type: "create" } | { type: "continue"; previous: string };

/** The stored state a request body names (pure: the pipeline reads it before the checks run). */
export interface BodyNames {
  /** The upstream objects it names: each an id, or an object with an `id`. */
  objects: unknown[];
  /** The answer whose conversation it continues (`previous_response_id`), if any. */
  previous?: unknown;
  /** The names of upstream state it continues: the call goes to the provider holding it. */
  continues?: unknown[];
  /**
   * The answers the gateway issued whose items it refers to (Responses item references): their
   * kept conversation steps are read, and a body referring to one of the caller's is translated.
   */
  answers?: string[];
  /** The thread it creates or continues, if any. */
  thread?: ThreadName;
  /**
   * The upstream items it refers to by id (Responses item references to items of a stored answer
   * passed through): read like `objects`, but more of them (a long conversation refers to many).
   */
  items?: string[];
}

/** The stored state a protocol's requests name. */
export interface StateNames {
  /** What a body names. */
  of(body: Json): BodyNames;
  /**
   * Its clients chain calls by an answer's id: a translated answer is kept by the gateway so that
   * a later call can continue it (see `pipeline/conversations.ts`).
   */
  chained?: boolean;
}

/**
 * The conversation a call belongs to, named from what clients already send, so that its calls
 * keep to the deployment and upstream key holding its prompt cache (see `pipeline/affinity.ts`).
 */
export interface ConversationId {
  /**
   * The client's own name for it (`session:…` Claude Code's session, `cache-key:…` a
   * `prompt_cache_key`, `answer:…` the answer a `previous_response_id` continues), or the hash of
   * its cacheable prefix — system prompt, tools, first turn (`prefix:…`).
   */
  id: string;
  /** The client asked the provider to keep its cache an hour or more (extended retention). */
  extended: boolean;
  /** Its clients continue it by an answer's id: each answer's id names it too. */
  chained?: boolean;
  /**
   * Its cacheable prefix as the client sent it — system prompt, tools, first turn (references into
   * the body, hashed only when needed: see `prefixHash`).
   */
  parts: readonly unknown[];
  /** `prefixHash(parts)`, when naming the conversation already took it (a `prefix:` id). */
  prefixHash?: number;
}

/** A protocol's conversations: the one a request belongs to, if it can tell (pure). */
export type ConversationOf = (input: CallInput, body: JsonBody) => ConversationId | undefined;

/** How a protocol's answers look where the gateway writes or changes them. */
export interface AnswerForms {
  /** A new id for a translated answer (`resp_…`, `msg_…`, `chatcmpl-…`). */
  id(): string;
  /** How its answers show a usage the gateway decided (an estimate, or the hold). */
  usage: UsageView;
  /** Bytes that end a pass-through stream the upstream cut, in this protocol. */
  errorTail(started: boolean, jsonArray?: boolean): Uint8Array;
  /**
   * A stream that ends in this protocol's error is then aborted (a transport error, not a clean
   * end of the body): its clients may take a last error element followed by a clean end for a
   * success (Google's older SDKs do).
   */
  abortFailed?: boolean;
}

/** Where a counting request goes on a provider of this protocol. */
export interface CountTarget {
  path: string;
  headers?: Record<string, string>;
}

/** A protocol's counting route, on the client's side. */
export interface CountClient {
  /** Validates the body; the model it names (undefined: none, so an estimate). */
  accept(input: CallInput, body: Json): { model?: string };
  /** The request a counting body holds, in the protocol's request shape. */
  request(body: Json): Json;
  /** The count in this protocol's answer shape. */
  answer(tokens: number): Json;
  /** The body's fields the local estimate counts. */
  counted: string[];
  /** Same protocol upstream: the body sent as it is, model swapped. */
  passBody(input: CallInput, body: JsonBody, model: ResolvedModel): string;
}

/** A protocol's counting endpoint, on the upstream's side. */
export interface CountUpstream {
  /** Where `model` is counted; undefined when its provider cannot count. */
  target(model: ResolvedModel, input: CallInput): CountTarget | undefined;
  /** A counting body from a request encoded in this protocol. */
  fromRequest(encoded: Json, model: ResolvedModel): Json;
  /** The count in an answer. */
  read(answer: Json): number | undefined;
}

/** A protocol's token counting: its route, and its upstream endpoint. */
export interface Counting {
  client: CountClient;
  upstream: CountUpstream;
}

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
  /**
   * The upstream request; `cap` is the output cap to send when the gateway imposes one. It holds
   * the text it sends, made when the call is planned (see `cappedBody`), and never the parsed
   * body, which is let go then (see `ClientBody`). The only function here that holds any of the
   * body: it is dropped once the call is sent, while the others are kept as long as the answer
   * streams (build it apart from them, or a closure sharing its scope keeps the body too).
   */
  call(cap: number | undefined): UpstreamCall;
  framing: "sse" | "json-array";
  /**
   * Pass-through only: takes out of a stream unit what the gateway's own change to the request
   * caused — the text to send instead of the unit ("" for nothing), or null to pass it as it came
   * (see `PassOptions.show`).
   */
  strip?: (event: SseEvent) => string | null;
  /** Usage from a whole answer. */
  usageFromJson(body: unknown): Usage | null;
  /** A meter for the call's stream. */
  meter(): StreamMeter;
  /** The upstream objects a JSON answer created, recorded as the caller's. */
  objectsFromJson?: (body: unknown) => CreatedObject[];
  /** False when the answer's own response object is not stored upstream. */
  keepResponses?: boolean;
}

/** A wire protocol (see the module's doc). */
export interface WireProtocol extends Codec {
  /** The error envelope its routes answer in. */
  errors: ErrorFormat;
  /** How its answers look where the gateway writes or changes them. */
  answers: AnswerForms;
  /** The stored state its requests name, when they can name any. */
  names?: StateNames;
  /** Its token counting, when it has any. */
  count?: Counting;
  /** The conversation a request belongs to, when its requests can tell. */
  conversation?: ConversationOf;
  /** Reads the client's request: validation (400 naming the field), the model, streaming. */
  accept(input: CallInput, body: JsonBody): Accepted;
  /** Plans a call of `body` — already in this protocol — to `model`. */
  prepare(
    input: CallInput,
    body: JsonBody,
    model: ResolvedModel,
    options: PrepareOptions,
  ): PreparedCall;
}
