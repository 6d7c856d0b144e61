/**
 * Reading usage into the canonical `Usage`, shared by every protocol: OpenAI's usage object (read
 * by Responses, chat, embeddings and compaction alike), and the stream meter each protocol's
 * `usage.ts` builds on.
 *
 * Stream meters see every unit on the way through. They keep what the upstream reported so far,
 * whether its final usage has arrived (`complete`), whether the stream's end-of-stream marker
 * passed (`finished`: a stream that stops before it was cut), and the UTF-8 bytes of the output
 * relayed — text, thinking and tool-argument deltas — for the one estimator used when a stream
 * ends early (see `Bill.relayedCharge`).
 */
import type { SseEvent } from "../http/sse.ts";
import { asObject } from "../http/json.ts";
import { memberKey, stringBytes } from "../http/json_bytes.ts";
import { utf8Length } from "../http/utf8.ts";
import { emptyUsage, type HostedTool, inputTotal, type Usage } from "./price.ts";
import type { TokenUsage } from "../translate/ir.ts";

/**
 * A count the bill reads from an upstream's usage field: absent (or null) is 0; a non-negative
 * safe integer is itself; anything else — negative, fractional, too large, not a number — is NaN,
 * which stays NaN through the readers' arithmetic and makes the report out of range for the bill
 * (see `Bill.charged`): a faulty report is never taken as some other count.
 */
export const count = (value: unknown): number =>
  value === undefined || value === null
    ? 0
    : typeof value === "number" && Number.isSafeInteger(value) && value >= 0
    ? value
    : NaN;

/** Adds `n` calls of `tool` to a usage. */
export function addCalls(u: Usage, tool: HostedTool, n: number): void {
  if (n === 0) return;
  u.toolCalls = { ...u.toolCalls, [tool]: (u.toolCalls?.[tool] ?? 0) + n };
}

/**
 * OpenAI Responses `usage` (also chat-style `prompt_tokens`/`completion_tokens`, embeddings'
 * `prompt_tokens` alone): `input_tokens` includes cached and cache-write tokens; output includes
 * reasoning. Cache reads are also taken from DeepSeek's `prompt_cache_hit_tokens` and Moonshot's
 * top-level `cached_tokens` on their OpenAI-compatible surfaces.
 */
export function openaiUsage(raw: unknown): Usage | null {
  const u = asObject(raw);
  if (!("input_tokens" in u || "prompt_tokens" in u || "output_tokens" in u)) return null;
  const details = asObject(u.input_tokens_details ?? u.prompt_tokens_details);
  const input = count(u.input_tokens ?? u.prompt_tokens);
  const cached = Math.min(
    count(details.cached_tokens ?? u.prompt_cache_hit_tokens ?? u.cached_tokens),
    input,
  );
  const written = Math.min(count(details.cache_write_tokens), input - cached);
  return {
    ...emptyUsage(),
    inputTokens: input - cached - written,
    cachedInputTokens: cached,
    cacheWriteTokens: written,
    outputTokens: count(u.output_tokens ?? u.completion_tokens),
  };
}

/**
 * A usage as the protocols show it to clients (canonical `TokenUsage`): input with cache reads and
 * writes, output with image output (reasoning is not told apart in the gateway's own figures).
 */
export function tokenUsageOf(u: Usage): TokenUsage {
  return {
    input: inputTotal(u),
    cacheRead: u.cachedInputTokens,
    cacheWrite: u.cacheWriteTokens + u.cacheWrite1hTokens,
    output: u.outputTokens + u.imageOutputTokens,
    reasoning: 0,
  };
}

/**
 * The kinds of upstream objects an answer creates: a stored response, a container, an item of a
 * stored response (which a later call's input may refer to by id).
 */
export type ObjectKind = "response" | "container" | "item";

/** An upstream object an answer created: its id and kind. */
export interface CreatedObject {
  id: string;
  kind: ObjectKind;
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
  /** Upstream objects the stream created: a stored response, its items, containers. */
  objects(): CreatedObject[];
  /** The reported output is a running count, kept current as the stream goes (Gemini's). */
  running?(): boolean;
}

/** Shared meter state. */
export class Meter {
  reported: Usage | null = null;
  done = false;
  ended = false;
  bytes = 0;
  /** `reported` is kept current as the stream goes (see `StreamMeter.running`). */
  running = false;
  created: CreatedObject[] = [];

  remember(id: unknown, kind: ObjectKind): void {
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

  /** This state as a `StreamMeter` whose units are read by `onEvent`. */
  view(onEvent: (e: SseEvent) => void): StreamMeter {
    return new MeterView(this, onEvent);
  }
}

/** A `Meter` read through `StreamMeter`: one object a stream, its methods on the prototype. */
class MeterView implements StreamMeter {
  constructor(private readonly meter: Meter, readonly onEvent: (e: SseEvent) => void) {}

  usage(): Usage | null {
    return this.meter.reported;
  }

  complete(): boolean {
    return this.meter.done;
  }

  finished(): boolean {
    return this.meter.ended;
  }

  outputBytes(): number {
    return this.meter.bytes;
  }

  objects(): CreatedObject[] {
    return this.meter.created;
  }

  running(): boolean {
    return this.meter.running;
  }
}

/** The members that carry output in delta events, read from the bytes (see `json_bytes.ts`). */
export const DELTA = memberKey("delta");
export const TEXT = memberKey("text");
export const THINKING = memberKey("thinking");
export const PARTIAL_JSON = memberKey("partial_json");
