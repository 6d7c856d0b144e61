/**
 * Reading usage from upstream answers and streams, per protocol, into the canonical `Usage`:
 * tokens, the service tier the call was served at, and hosted tool calls.
 *
 * Stream meters see every unit on the way through. They keep what the upstream reported so far,
 * whether its final usage has arrived (`complete`), whether the stream's end-of-stream marker
 * passed (`finished`: a stream that stops before it was cut), and the UTF-8 bytes of the output
 * relayed — text, thinking and tool-argument deltas — for the one estimator used when a stream
 * ends early (see `Bill.relayedCharge`).
 */
import type { SseEvent } from "../http/sse.ts";
import { memberKey, stringBytes } from "../http/json_bytes.ts";
import { utf8Length } from "./estimate.ts";
import { emptyUsage, type HostedTool, type Usage } from "./price.ts";

type Json = Record<string, unknown>;

const int = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) && value > 0
    ? Math.min(Math.round(value), Number.MAX_SAFE_INTEGER)
    : 0;
const obj = (value: unknown): Json =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as Json : {};
const list = (value: unknown): unknown[] => Array.isArray(value) ? value : [];
const parse = (e: SseEvent): Json => {
  try {
    return obj(JSON.parse(e.data()));
  } catch {
    return {};
  }
};

/** Adds `n` calls of `tool` to a usage. */
function addCalls(u: Usage, tool: HostedTool, n: number): void {
  if (n <= 0) return;
  u.toolCalls = { ...u.toolCalls, [tool]: (u.toolCalls?.[tool] ?? 0) + n };
}

/**
 * OpenAI Responses `usage` (also chat-style `prompt_tokens`/`completion_tokens`, embeddings'
 * `prompt_tokens` alone): `input_tokens` includes cached and cache-write tokens; output includes
 * reasoning. Cache reads are also taken from DeepSeek's `prompt_cache_hit_tokens` and Moonshot's
 * top-level `cached_tokens` on their OpenAI-compatible surfaces.
 */
export function openaiUsage(raw: unknown): Usage | null {
  const u = obj(raw);
  if (!("input_tokens" in u || "prompt_tokens" in u || "output_tokens" in u)) return null;
  const details = obj(u.input_tokens_details ?? u.prompt_tokens_details);
  const input = int(u.input_tokens ?? u.prompt_tokens);
  const cached = Math.min(
    int(details.cached_tokens ?? u.prompt_cache_hit_tokens ?? u.cached_tokens),
    input,
  );
  const written = Math.min(int(details.cache_write_tokens), input - cached);
  return {
    ...emptyUsage(),
    inputTokens: input - cached - written,
    cachedInputTokens: cached,
    cacheWriteTokens: written,
    outputTokens: int(u.output_tokens ?? u.completion_tokens),
  };
}

/** Responses output item types that are billed hosted tool calls. */
const RESPONSES_TOOL_ITEMS = new Map<string, HostedTool>([
  ["web_search_call", "web_search"],
  ["file_search_call", "file_search"],
  ["code_interpreter_call", "code_interpreter"],
  ["image_generation_call", "image_generation"],
  ["x_search_call", "x_search"],
]);

/**
 * Hosted tool calls in Responses output items; code interpreter is counted once per container
 * (it is priced per container session).
 */
function countResponsesTools(u: Usage, items: unknown[]): void {
  const containers = new Set<string>();
  for (const raw of items) {
    const item = obj(raw);
    const tool = typeof item.type === "string" ? RESPONSES_TOOL_ITEMS.get(item.type) : undefined;
    if (!tool) continue;
    if (tool === "code_interpreter") {
      const container = JSON.stringify(item.container_id ?? item.id ?? null);
      if (containers.has(container)) continue;
      containers.add(container);
    }
    addCalls(u, tool, 1);
  }
}

/** The objects a whole Responses object created: itself, and code interpreter containers. */
export function responsesObjects(
  response: unknown,
): { id: string; kind: "response" | "container" }[] {
  const r = obj(response);
  const out: { id: string; kind: "response" | "container" }[] = [];
  if (typeof r.id === "string") out.push({ id: r.id, kind: "response" });
  for (const item of list(r.output)) {
    const container = obj(item).container_id;
    if (typeof container === "string") out.push({ id: container, kind: "container" });
  }
  return out;
}

/** The container a whole Messages answer created or used. */
export function messagesObjects(message: unknown): { id: string; kind: "container" }[] {
  const id = obj(obj(message).container).id;
  return typeof id === "string" ? [{ id, kind: "container" }] : [];
}

/** A whole Responses object (JSON answer or a terminal event's `response`). */
export function responsesUsage(response: unknown): Usage | null {
  const r = obj(response);
  const usage = openaiUsage(r.usage);
  if (!usage) return null;
  if (typeof r.service_tier === "string") usage.serviceTier = r.service_tier;
  countResponsesTools(usage, list(r.output));
  return usage;
}

/** A chat completion (or the chunk carrying usage); `webSearch` when the request asked for it. */
export function chatUsage(body: unknown, webSearch = false): Usage | null {
  const c = obj(body);
  let usage = c.usage ? openaiUsage(c.usage) : null;
  for (const choice of list(c.choices)) usage ??= openaiUsage(obj(choice).usage);
  if (!usage) return null;
  if (typeof c.service_tier === "string") usage.serviceTier = c.service_tier;
  if (webSearch) addCalls(usage, "web_search", 1);
  return usage;
}

/** Anthropic server tools, by the name of their `server_tool_use` blocks. */
const ANTHROPIC_SERVER_TOOLS = new Map<string, HostedTool>([
  ["web_search", "web_search"],
  ["code_execution", "code_execution"],
  ["bash_code_execution", "code_execution"],
  ["text_editor_code_execution", "code_execution"],
]);

/**
 * Anthropic `usage`: `input_tokens` is uncached input only; cache reads and writes are separate,
 * writes split into 5-minute and 1-hour lifetimes when `cache_creation` is present;
 * `server_tool_use.web_search_requests` are web search calls.
 */
export function anthropicUsage(raw: unknown): Usage | null {
  const u = obj(raw);
  if (!("input_tokens" in u || "output_tokens" in u)) return null;
  const creation = obj(u.cache_creation);
  const written = int(u.cache_creation_input_tokens);
  const oneHour = Math.min(int(creation.ephemeral_1h_input_tokens), written);
  const usage: Usage = {
    ...emptyUsage(),
    inputTokens: int(u.input_tokens),
    cachedInputTokens: int(u.cache_read_input_tokens),
    cacheWriteTokens: written - oneHour,
    cacheWrite1hTokens: oneHour,
    outputTokens: int(u.output_tokens),
  };
  if (typeof u.service_tier === "string") usage.serviceTier = u.service_tier;
  addCalls(usage, "web_search", int(obj(u.server_tool_use).web_search_requests));
  return usage;
}

/** Server tool calls in Messages content blocks other than web search (reported in usage). */
function countAnthropicBlocks(u: Usage, blocks: unknown[]): void {
  for (const raw of blocks) {
    const block = obj(raw);
    if (block.type !== "server_tool_use" || typeof block.name !== "string") continue;
    const tool = ANTHROPIC_SERVER_TOOLS.get(block.name);
    if (tool && tool !== "web_search") addCalls(u, tool, 1);
  }
}

/** A whole Messages answer. */
export function messagesUsage(message: unknown): Usage | null {
  const m = obj(message);
  const usage = anthropicUsage(m.usage);
  if (usage) countAnthropicBlocks(usage, list(m.content));
  return usage;
}

/**
 * Gemini `usageMetadata`: `promptTokenCount` includes cached content; `candidatesTokenCount`
 * includes image tokens (the `IMAGE` entry of `candidatesTokensDetails`), billed at the image-output
 * rate; thought tokens are output.
 */
export function geminiUsage(raw: unknown): Usage | null {
  const u = obj(raw);
  if (!("promptTokenCount" in u || "candidatesTokenCount" in u)) return null;
  const prompt = int(u.promptTokenCount) + int(u.toolUsePromptTokenCount);
  const cached = Math.min(int(u.cachedContentTokenCount), prompt);
  const image = list(u.candidatesTokensDetails)
    .filter((d) => obj(d).modality === "IMAGE")
    .reduce((sum: number, d) => sum + int(obj(d).tokenCount), 0);
  const candidates = int(u.candidatesTokenCount);
  return {
    ...emptyUsage(),
    inputTokens: prompt - cached,
    cachedInputTokens: cached,
    outputTokens: Math.max(0, candidates - image) + int(u.thoughtsTokenCount),
    imageOutputTokens: Math.min(image, candidates),
  };
}

/** Search grounding in Gemini candidates: queries made, and whether the prompt was grounded. */
function geminiSearches(candidates: unknown[]): number {
  let queries = 0;
  for (const c of candidates) {
    queries += list(obj(obj(c).groundingMetadata).webSearchQueries).length;
  }
  return queries;
}

function addGrounding(u: Usage, queries: number): void {
  addCalls(u, "web_search", queries);
  addCalls(u, "grounded_prompt", queries > 0 ? 1 : 0);
}

/** A whole generateContent answer. */
export function generateUsage(body: unknown): Usage | null {
  const b = obj(body);
  const usage = geminiUsage(b.usageMetadata);
  if (usage) addGrounding(usage, geminiSearches(list(b.candidates)));
  return usage;
}

/** What a stream meter knows when the stream ends or is cut. */
export interface StreamMeter {
  /** Every unit of the stream: SSE events, or JSON array elements as unnamed events. */
  onEvent(event: SseEvent): void;
  /** What the upstream reported so far (final once `complete()`), or null. */
  usage(): Usage | null;
  /** The upstream's final usage has arrived. */
  complete(): boolean;
  /** The stream's end-of-stream marker has passed. */
  finished(): boolean;
  /** UTF-8 bytes of output relayed: text, thinking and tool-argument deltas. */
  outputBytes(): number;
  /** Upstream objects the stream created: a stored response, containers. */
  objects(): { id: string; kind: "response" | "container" }[];
}

/** Shared meter state. */
class Meter {
  reported: Usage | null = null;
  done = false;
  ended = false;
  bytes = 0;
  created: { id: string; kind: "response" | "container" }[] = [];

  remember(id: unknown, kind: "response" | "container"): void {
    if (typeof id === "string" && !this.created.some((o) => o.id === id)) {
      this.created.push({ id, kind });
    }
  }

  text(value: unknown): void {
    if (typeof value === "string") this.bytes += utf8Length(value);
  }

  /** Adds the bytes of the first of `keys` that is a string member of the event's data. */
  member(e: SseEvent, ...keys: Uint8Array[]): void {
    const raw = e.raw();
    for (const key of keys) {
      const n = stringBytes(raw, key);
      if (n >= 0) {
        this.bytes += n;
        return;
      }
    }
  }

  view(onEvent: (e: SseEvent) => void): StreamMeter {
    return {
      onEvent,
      usage: () => this.reported,
      complete: () => this.done,
      finished: () => this.ended,
      outputBytes: () => this.bytes,
      objects: () => this.created,
    };
  }
}

/** The members that carry output in delta events, read from the bytes (see `json_bytes.ts`). */
const DELTA = memberKey("delta");
const TEXT = memberKey("text");
const THINKING = memberKey("thinking");
const PARTIAL_JSON = memberKey("partial_json");

const RESPONSES_TERMINAL = new Set([
  "response.completed",
  "response.incomplete",
  "response.failed",
]);

/** Meter for Responses streams: usage, tier and tool calls from the terminal event's response. */
export function responsesMeter(): StreamMeter {
  const m = new Meter();
  const tools = new Map<string, Json>();
  return m.view((e) => {
    const name = e.event;
    if (name.endsWith(".delta")) {
      if (!name.startsWith("response.audio")) m.member(e, DELTA);
    } else if (name === "response.output_item.added") {
      const item = obj(parse(e).item);
      if (item.type === "code_interpreter_call") m.remember(item.container_id, "container");
      if (typeof item.type === "string" && RESPONSES_TOOL_ITEMS.has(item.type)) {
        tools.set(typeof item.id === "string" ? item.id : `#${tools.size}`, item);
        m.reported ??= emptyUsage();
        m.reported.toolCalls = undefined;
        countResponsesTools(m.reported, [...tools.values()]);
      }
    } else if (name === "response.created") {
      m.remember(obj(parse(e).response).id, "response");
    } else if (RESPONSES_TERMINAL.has(name)) {
      const final = responsesUsage(obj(parse(e).response));
      if (final) {
        m.reported = final;
        m.done = true;
      }
      m.ended = true;
    }
  });
}

/**
 * Meter for chat-completions streams (unnamed `data:` chunks ending in `[DONE]`): output from the
 * deltas (content, reasoning, tool-call arguments); usage from the chunk that carries it (OpenAI's
 * `include_usage` chunk, or the finishing choice on some vendors).
 */
export function chatMeter(webSearch = false): StreamMeter {
  const m = new Meter();
  return m.view((e) => {
    const data = e.data();
    if (data === "[DONE]") {
      m.ended = true;
      return;
    }
    let chunk: Json;
    try {
      chunk = obj(JSON.parse(data));
    } catch {
      return;
    }
    for (const choice of list(chunk.choices)) {
      const delta = obj(obj(choice).delta);
      m.text(delta.content);
      m.text(delta.reasoning_content);
      m.text(delta.reasoning);
      for (const call of list(delta.tool_calls)) m.text(obj(obj(call).function).arguments);
    }
    const usage = chatUsage(chunk, webSearch);
    if (usage) {
      m.reported = usage;
      m.done = true;
    }
  });
}

/** Merges the non-null fields of a Messages usage update (null means "no update"). */
function mergeUsage(into: Json, update: Json): Json {
  const merged = { ...into };
  for (const key in update) if (update[key] !== null) merged[key] = update[key];
  return merged;
}

/**
 * Meter for Messages streams: `message_start` carries the input side, `message_delta` the
 * cumulative totals (its non-null fields replace those of `message_start`, so nothing is counted
 * twice, and a null never wipes a count); output from text, thinking and tool-input deltas.
 */
export function messagesMeter(): StreamMeter {
  const m = new Meter();
  let merged: Json = {};
  const blocks: Json[] = [];
  const update = (usage: Json, final: boolean) => {
    merged = mergeUsage(merged, usage);
    const u = anthropicUsage(merged);
    if (u) countAnthropicBlocks(u, blocks);
    m.reported = u;
    if (final && u) m.done = true;
  };
  return m.view((e) => {
    switch (e.event) {
      case "content_block_delta":
        return m.member(e, TEXT, THINKING, PARTIAL_JSON);
      case "content_block_start": {
        const block = obj(parse(e).content_block);
        if (block.type === "server_tool_use") {
          blocks.push(block);
          update({}, false);
        }
        return;
      }
      case "message_start": {
        const message = obj(parse(e).message);
        m.remember(obj(message.container).id, "container");
        return update(obj(message.usage), false);
      }
      case "message_delta": {
        const data = parse(e);
        m.remember(obj(obj(data.delta).container).id, "container");
        return update(obj(data.usage), true);
      }
      case "message_stop":
        m.ended = true;
    }
  });
}

/**
 * Meter for Gemini streams (SSE fragments, or the elements of the JSON array form): every fragment
 * is a whole `GenerateContentResponse` with only the new parts; usage repeats and grows, the
 * fragment with a `finishReason` (or a blocked prompt) is final.
 */
export function geminiMeter(): StreamMeter {
  const m = new Meter();
  let queries = 0;
  return m.view((e) => {
    const fragment = parse(e);
    const candidates = list(fragment.candidates);
    for (const c of candidates) {
      const candidate = obj(c);
      for (const p of list(obj(candidate.content).parts)) {
        const part = obj(p);
        m.text(part.text);
        if (part.functionCall) m.text(JSON.stringify(obj(part.functionCall).args ?? {}));
      }
      if (typeof candidate.finishReason === "string") m.ended = m.done = true;
    }
    queries = Math.max(queries, geminiSearches(candidates));
    if (obj(fragment.promptFeedback).blockReason) m.ended = m.done = true;
    const usage = geminiUsage(fragment.usageMetadata);
    if (usage) {
      addGrounding(usage, queries);
      m.reported = usage;
    }
  });
}
