/**
 * The canonical form every wire protocol translates to and from (pure types). Shaped after the
 * Vercel AI SDK's language-model specification: a prompt of typed messages and parts, tool calls
 * with ids and parsed input, reasoning parts that keep their provider's opaque state, a unified
 * finish reason beside the raw one, usage split by cache and reasoning, and a stream of
 * start/delta/end parts per text, reasoning and tool-input block.
 */

/** The four wire formats (named where the catalog says which ones an upstream speaks). */
export type { ProtocolId } from "../catalog/catalog.ts";

/** A JSON object as decoded from a body. */
export type Json = Record<string, unknown>;

/**
 * Provider state that must be replayed to the provider that issued it, byte for byte, and never
 * sent to any other: Anthropic thinking signatures and redacted thinking, Responses encrypted
 * reasoning, Gemini thought signatures.
 */
export interface Opaque {
  /** The configured provider that issued it; empty when unknown (never replayed then). */
  provider: string;
  kind: "thinking-signature" | "redacted-thinking" | "encrypted-reasoning" | "thought-signature";
  value: string;
  /** The Responses reasoning item id (`rs_…`) it belongs to. */
  itemId?: string;
}

/**
 * A prompt-cache breakpoint (Messages `cache_control`): the prompt up to and including the part
 * that carries it is cached, for `ttl` (5 minutes when absent, as Anthropic's default).
 */
export interface CacheMark {
  ttl?: "5m" | "1h";
}

/** Text, with the Gemini signature that may close it. */
export interface TextPart {
  type: "text";
  text: string;
  /** A Gemini thought signature on a text part. */
  opaque?: Opaque;
  cache?: CacheMark;
}

/** An image, PDF or audio clip: inline base64 or a URL. */
export interface FilePart {
  type: "file";
  /** e.g. `image/png`, `application/pdf`; `image/*` when a URL's type is unknown. */
  mediaType: string;
  data: { base64: string } | { url: string };
  filename?: string;
  /** Image detail (`low`, `high`, `auto`). */
  detail?: string;
  cache?: CacheMark;
}

/** Reasoning the model showed, with the opaque state that replays it. */
export interface ReasoningPart {
  type: "reasoning";
  /** The visible reasoning (a summary or the thinking text); may be empty. */
  text: string;
  opaque?: Opaque;
}

/** A call of one of the request's functions. */
export interface ToolCallPart {
  type: "tool-call";
  id: string;
  name: string;
  /** The parsed arguments (an object); a custom tool's free-form input is `{input: "…"}`. */
  input: unknown;
  /** `custom`: a free-form (Responses custom) tool, whose input is one string. */
  kind?: "function" | "custom";
  /** A Gemini thought signature on the call. */
  opaque?: Opaque;
  cache?: CacheMark;
}

/** The result of a call, answering it by id. */
export interface ToolResultPart {
  type: "tool-result";
  /** The id of the call it answers. */
  id: string;
  /** The called tool's name, when known (Gemini needs it). */
  name?: string;
  content: (TextPart | FilePart)[];
  isError?: boolean;
  kind?: "function" | "custom";
  cache?: CacheMark;
}

/** A hosted tool call the upstream ran itself (web search), kept for the client's record. */
export interface HostedCallPart {
  type: "hosted-call";
  tool: "web_search";
  id: string;
  query?: string;
}

/** What a user message holds. */
export type UserPart = TextPart | FilePart;
/** What an assistant message (or an answer) holds. */
export type AssistantPart = TextPart | ReasoningPart | ToolCallPart | HostedCallPart;

/** One message of the conversation. */
export type Message =
  | { role: "user"; content: UserPart[] }
  | { role: "assistant"; content: AssistantPart[] }
  | { role: "tool"; content: ToolResultPart[] }
  /** A system or developer message inside the conversation, where the protocol allows one. */
  | { role: "system"; content: TextPart[] };

/** A function the model may call. */
export interface FunctionTool {
  name: string;
  description?: string;
  /** JSON Schema of the arguments (an object schema). */
  parameters: Json;
  strict?: boolean;
  /** `custom`: free-form input (a Responses custom tool); `parameters` is then `{input: string}`. */
  kind?: "function" | "custom";
  /**
   * A Responses tool namespace the function belongs to; `name` is then `<namespace>__<name>`, a
   * name every protocol accepts, and the client sees its own two fields again.
   */
  namespace?: string;
  /**
   * A Responses tool the client runs that is not a function (`tool_search` with client
   * execution, `local_shell`, `shell`, `apply_patch`, the computer tools): its type. It is offered
   * as this function, and its calls go back to the client as that type's call items.
   */
  clientType?: string;
  cache?: CacheMark;
}

/** A hosted tool the request offers; `field` names it in the client's request (for errors). */
export type HostedTool =
  | { type: "web_search"; field: string; maxUses?: number; cache?: CacheMark }
  | { type: "other"; field: string; name: string };

/** Which tools the model may or must call. */
export type ToolChoice =
  | { type: "auto" }
  | { type: "none" }
  | { type: "required" }
  | { type: "tool"; name: string };

/**
 * What the client asked of the prompt cache, beside the breakpoints its parts carry. A protocol
 * whose provider caches every prompt's prefix by itself (Responses, chat, generateContent) is
 * `implicit`: its client sets no breakpoints, so an upstream that caches only at breakpoints
 * (Messages) gets them placed by the gateway. `key` and `retention` are OpenAI's
 * `prompt_cache_key` (which cache machine a prompt goes to) and `prompt_cache_retention`
 * (`in_memory`, `24h`); `whole` is Messages' top-level `cache_control` (the upstream puts the
 * breakpoint on the prompt's last block).
 */
export interface CacheIntent {
  implicit?: boolean;
  key?: string;
  retention?: string;
  whole?: CacheMark;
}

/** A reasoning effort. */
export type Effort = "minimal" | "low" | "medium" | "high";

/** A request in the canonical form, decoded from any protocol and encoded into any. */
export interface CanonicalRequest {
  /** The system prompt: system/developer text hoisted from wherever the protocol put it. */
  system: TextPart[];
  messages: Message[];
  tools: FunctionTool[];
  hostedTools: HostedTool[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  maxOutputTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  stop?: string[];
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  /** Structured output: JSON, with a schema when one is given. */
  responseFormat?: {
    type: "json";
    schema?: Json;
    name?: string;
    description?: string;
    strict?: boolean;
  };
  /**
   * Reasoning asked for: an effort, or a token budget; `visible` asks for summaries or thoughts;
   * `off` turns it off where the model allows.
   */
  reasoning?: { effort?: Effort; budgetTokens?: number; visible?: boolean; off?: boolean };
  /** A stable end-user id. */
  user?: string;
  stream: boolean;
  /** Answers asked for at once (chat `n`, Gemini `candidateCount`). */
  choices?: number;
  /** The client's prompt-cache intent (absent: none stated, no breakpoints placed). */
  cache?: CacheIntent;
  /**
   * The client's names of its message list and its tools, for errors about their contents, and of
   * the members it set (as the decoder read them), for adaptations of them.
   */
  fields:
    & { messages: string; tools: string; choices?: string; stop?: string }
    & Partial<Record<NamedMember, string>>;
}

/** The request's sampling parameters and limits (read and written through `sampling.ts`). */
export type SamplingKey =
  | "maxOutputTokens"
  | "temperature"
  | "topP"
  | "topK"
  | "seed"
  | "presencePenalty"
  | "frequencyPenalty"
  | "stop"
  | "choices";

/**
 * Members of a request whose client name a decoder records (see `adaptations.ts`): the sampling
 * parameters but stop sequences and answers asked for (named in `fields` of their own), and more.
 */
export type NamedMember =
  | Exclude<SamplingKey, "stop" | "choices">
  | "reasoning"
  | "user"
  | "parallelToolCalls"
  | "responseFormat";

/** The unified finish reason. */
export type FinishReason = "stop" | "length" | "tool-calls" | "content-filter" | "error" | "other";

/** Token usage: input includes cache reads and writes, output includes reasoning. */
export interface TokenUsage {
  input: number;
  cacheRead: number;
  cacheWrite: number;
  output: number;
  reasoning: number;
}

/** A whole answer in the canonical form. */
export interface CanonicalResponse {
  id: string;
  model: string;
  content: AssistantPart[];
  finish: { reason: FinishReason; raw?: string };
  usage: TokenUsage;
}

/** One part of a translated stream, in order; block ids are unique within the stream. */
export type CanonicalEvent =
  | { type: "start"; id?: string; model?: string; usage?: Partial<TokenUsage> }
  | { type: "text-start"; id: string }
  | { type: "text-delta"; id: string; delta: string }
  | { type: "text-end"; id: string; opaque?: Opaque }
  | { type: "reasoning-start"; id: string }
  | { type: "reasoning-delta"; id: string; delta: string }
  | { type: "reasoning-end"; id: string; opaque?: Opaque }
  | {
    type: "tool-input-start";
    id: string;
    name: string;
    kind?: "function" | "custom";
    /** Opaque state on the call itself (a Gemini thought signature), known when it starts. */
    opaque?: Opaque;
  }
  /**
   * A fragment of the call's input as JSON text; the fragments of one call join into the JSON of
   * its canonical input (for a custom tool, of `{"input": "…"}`).
   */
  | { type: "tool-input-delta"; id: string; delta: string }
  | { type: "tool-input-end"; id: string }
  | { type: "hosted-call"; part: HostedCallPart }
  | { type: "usage"; usage: Partial<TokenUsage> }
  | { type: "finish"; reason: FinishReason; raw?: string; usage?: TokenUsage }
  | { type: "error"; message: string; code?: string; status?: number };

/** An empty usage. */
export function zeroUsage(): TokenUsage {
  return { input: 0, cacheRead: 0, cacheWrite: 0, output: 0, reasoning: 0 };
}
