/**
 * Reading usage from upstream bodies and streams, per protocol, into the canonical `Usage`.
 * Stream meters see every SSE event on the way through but parse JSON only for the few events
 * that carry usage; they also count output events for the estimate used when a stream is cut.
 */
import type { SseEvent } from "../http/sse.ts";
import { emptyUsage, type Usage } from "./price.ts";

type Json = Record<string, unknown>;

const int = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
const obj = (value: unknown): Json =>
  typeof value === "object" && value !== null ? value as Json : {};

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

/** What a stream meter knows when the stream ends or is cut. */
export interface StreamMeter {
  /** For SSE streams: every decoded event. */
  onEvent?(event: SseEvent): void;
  /** For streams that are not SSE (a JSON array delivered in pieces): the raw text. */
  onText?(text: string): void;
  /** The usage the upstream reported, or null when it reported none. */
  usage(): Usage | null;
  /** Output events seen (text/argument deltas): about one token each, for the estimate. */
  outputEvents(): number;
}

const RESPONSES_TERMINAL = new Set([
  "response.completed",
  "response.incomplete",
  "response.failed",
]);

/** Meter for Responses streams: usage from the terminal event's `response.usage`. */
export function responsesMeter(): StreamMeter {
  let usage: Usage | null = null;
  let deltas = 0;
  return {
    onEvent(e) {
      if (e.event.endsWith(".delta")) {
        deltas++;
      } else if (RESPONSES_TERMINAL.has(e.event)) {
        try {
          usage = openaiUsage(obj(obj(JSON.parse(e.data())).response).usage) ?? usage;
        } catch { /* a malformed terminal event reports nothing */ }
      }
    },
    usage: () => usage,
    outputEvents: () => deltas,
  };
}

/**
 * Meter for chat-completions streams (unnamed `data:` events ending in `[DONE]`): usage comes in
 * the last chunk before `[DONE]` (OpenAI's `include_usage` chunk with `choices: []`, or inside
 * the finishing choice on some vendors), so only the last two chunks are ever decoded.
 */
export function chatMeter(): StreamMeter {
  let last: SseEvent | null = null;
  let previous: SseEvent | null = null;
  let chunks = 0;
  return {
    onEvent(e) {
      previous = last;
      last = e;
      chunks++;
    },
    usage() {
      for (const e of [last, previous]) {
        if (!e) continue;
        try {
          const data = e.data();
          if (data === "[DONE]") continue;
          return chatChunkUsage(JSON.parse(data));
        } catch {
          return null;
        }
      }
      return null;
    },
    outputEvents: () => chunks,
  };
}

/** The usage a chat chunk carries (top level, or in a choice), or null. */
export function chatChunkUsage(chunk: unknown): Usage | null {
  const c = obj(chunk);
  if (c.usage) return openaiUsage(c.usage);
  const choices = Array.isArray(c.choices) ? c.choices : [];
  for (const choice of choices) if (obj(choice).usage) return openaiUsage(obj(choice).usage);
  return null;
}

/**
 * Anthropic `usage`: `input_tokens` is uncached input only; cache reads and writes are separate,
 * writes split into 5-minute and 1-hour lifetimes when `cache_creation` is present.
 */
export function anthropicUsage(raw: unknown): Usage | null {
  const u = obj(raw);
  if (!("input_tokens" in u || "output_tokens" in u)) return null;
  const creation = obj(u.cache_creation);
  const written = int(u.cache_creation_input_tokens);
  const oneHour = Math.min(int(creation.ephemeral_1h_input_tokens), written);
  return {
    ...emptyUsage(),
    inputTokens: int(u.input_tokens),
    cachedInputTokens: int(u.cache_read_input_tokens),
    cacheWriteTokens: written - oneHour,
    cacheWrite1hTokens: oneHour,
    outputTokens: int(u.output_tokens),
  };
}

/**
 * Meter for Messages streams: `message_start` carries the input side, `message_delta` the
 * cumulative totals; a field in `message_delta` replaces the one from `message_start`, so nothing
 * is counted twice.
 */
export function messagesMeter(): StreamMeter {
  let merged: Json | null = null;
  let deltas = 0;
  return {
    onEvent(e) {
      if (e.event === "content_block_delta") {
        deltas++;
        return;
      }
      if (e.event !== "message_start" && e.event !== "message_delta") return;
      try {
        const data = obj(JSON.parse(e.data()));
        const usage = e.event === "message_start" ? obj(obj(data.message).usage) : obj(data.usage);
        merged = { ...merged, ...usage };
      } catch { /* ignore a malformed event */ }
    },
    usage: () => merged && anthropicUsage(merged),
    outputEvents: () => deltas,
  };
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
  const details = Array.isArray(u.candidatesTokensDetails) ? u.candidatesTokensDetails : [];
  const image = details
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

/**
 * Meter for Gemini SSE streams: usage repeats on every fragment and only the last one counts, so
 * only the last fragment is ever decoded.
 */
export function geminiSseMeter(): StreamMeter {
  let last: SseEvent | null = null;
  let fragments = 0;
  return {
    onEvent(e) {
      last = e;
      fragments++;
    },
    usage() {
      try {
        return last ? geminiUsage(obj(JSON.parse(last.data())).usageMetadata) : null;
      } catch {
        return null;
      }
    },
    outputEvents: () => fragments,
  };
}

/** Meter for `streamGenerateContent` without `alt=sse`: one JSON array, parsed at the end. */
export function geminiArrayMeter(): StreamMeter {
  const parts: string[] = [];
  return {
    onText: (text) => void parts.push(text),
    usage() {
      try {
        const fragments = JSON.parse(parts.join(""));
        return Array.isArray(fragments) ? geminiUsage(obj(fragments.at(-1)).usageMetadata) : null;
      } catch {
        return null;
      }
    },
    outputEvents: () => parts.length,
  };
}

/**
 * A local token estimate for the strings in `values` (prompt text, tools…): one token per four
 * characters, at least one. Used where an upstream cannot count tokens.
 */
export function estimateTextTokens(values: unknown[]): number {
  let chars = 0;
  const walk = (value: unknown): void => {
    if (typeof value === "string") chars += value.length;
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === "object") Object.values(value).forEach(walk);
  };
  walk(values);
  return Math.max(1, Math.ceil(chars / 4));
}
