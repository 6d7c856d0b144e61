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
 * OpenAI Responses `usage` (also chat-style `prompt_tokens`/`completion_tokens`):
 * `input_tokens` includes cached and cache-write tokens; output includes reasoning.
 */
export function openaiUsage(raw: unknown): Usage | null {
  const u = obj(raw);
  if (!("input_tokens" in u || "prompt_tokens" in u || "output_tokens" in u)) return null;
  const details = obj(u.input_tokens_details ?? u.prompt_tokens_details);
  const input = int(u.input_tokens ?? u.prompt_tokens);
  const cached = Math.min(int(details.cached_tokens), input);
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
  onEvent(event: SseEvent): void;
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
          usage = openaiUsage(obj(obj(JSON.parse(e.data)).response).usage) ?? usage;
        } catch { /* a malformed terminal event reports nothing */ }
      }
    },
    usage: () => usage,
    outputEvents: () => deltas,
  };
}
