/**
 * The emulator's deterministic "model": a tokenizer, answers derived from the prompt, and the
 * fault directives a prompt can carry, e.g. `[[emulate status=429]]`, `[[emulate context=1]]` (the
 * input exceeds the context window), `[[emulate cut=5]]`,
 * `[[emulate stop=5]]` (a stream that ends cleanly before its end), `[[emulate stream_error=5]]`
 * (the provider's error event after 5 events, ending the stream), `[[emulate finish_usage=1]]`
 * (chat: usage on the finishing chunk, asked for or not),
 * `[[emulate delay=20]]`, `[[emulate cached=64]]` (cache reads), `[[emulate cache_write=30]]` and
 * `[[emulate cache_write_1h=20]]` (cache writes; 5-minute and 1-hour on Messages),
 * `[[emulate words=300]]`, `[[emulate wait=500]]`,
 * and for video jobs `[[emulate ready=800 seconds=5]]`, `[[emulate fail=1]]`, `[[emulate expire=1]]`,
 * `[[emulate gone=1]]`; tool calls are steered with `[[emulate tool=NAME]]` (`tool=none`: no call),
 * `[[emulate parallel=2]]` and `[[emulate arg.KEY=VALUE]]` (a string argument over the
 * schema's example), Messages thinking comes back redacted with `[[emulate redacted=1]]`, and
 * Gemini embeddings come without usage with `[[emulate no_usage=1]]`.
 * Reasoning artefacts (thinking signatures, `encrypted_content`, thought signatures, redacted
 * thinking) are HMACs of the content they cover under a fixed emulator secret (`sign`, `seal`),
 * so forged or foreign ones are told apart without state.
 */

import { createHmac } from "node:crypto";

const TOKEN = /\s*(?:\w+|[^\w\s])/gu;

/** Splits text into tokens (a word or one punctuation mark, with its leading spaces). */
export function tokenize(text: string): string[] {
  return text.match(TOKEN) ?? [];
}

/** The number of tokens in `text`. */
export function countTokens(text: string): number {
  return tokenize(text).length;
}

/** Fault and shape controls found in a prompt. */
export interface Directives {
  /** Answer with this HTTP error status instead. */
  status?: number;
  /** Answer that the input exceeds the model's context window (1), in the family's words. */
  context?: number;
  /** Cut a stream after this many events (or send a truncated JSON body). */
  cut?: number;
  /** End a stream cleanly after this many events, before its end-of-stream marker. */
  stop?: number;
  /** Milliseconds to wait before each stream event. */
  delay?: number;
  /** Report this many input tokens as read from the prompt cache. */
  cached?: number;
  /**
   * Report this many input tokens as written to the prompt cache (Messages: with the 5-minute
   * lifetime, or the 1-hour one when the request's system prompt asks `ttl: "1h"`).
   */
  cacheWrite?: number;
  /** Messages: report this many input tokens as written to the cache with the 1-hour lifetime. */
  cacheWrite1h?: number;
  /** Answer with this many words of filler text. */
  words?: number;
  /** Milliseconds to wait before answering at all (before the response headers). */
  wait?: number;
  /** Video jobs: milliseconds from submission until the job is finished. */
  ready?: number;
  /** Video jobs: finish as `failed` (1) instead of `done`. */
  fail?: number;
  /** Video jobs: finish as `expired` (1) instead of `done`. */
  expire?: number;
  /** Video jobs: seconds actually generated (default: the requested duration). */
  seconds?: number;
  /** Video jobs: once ready, the job is unknown upstream (404), as a job past its retention. */
  gone?: number;
  /** Messages streams: the final `message_delta` gives its input counts as null. */
  nullUsage?: number;
  /** Gemini embeddings: the answer carries no `usageMetadata` (as the API's older surfaces). */
  noUsage?: number;
  /** Images: `quality: auto` comes back `high` (1) instead of `medium`. */
  detail?: number;
  /**
   * Responses and chat streams: after this many events, the provider's error event (a rate limit)
   * ends the stream (chat: a chunk with a top-level `error`, and no `[DONE]`).
   */
  streamError?: number;
  /**
   * Chat streams: the chunk with the finish reason carries the usage even when it was not asked
   * for, as some OpenAI-compatible servers send it (Mistral's API among them).
   */
  finishUsage?: number;
  /** JSON answers: the body pauses this many milliseconds after its first bytes. */
  stall?: number;
  /** Call this function tool (by name) instead of the first one; `none`: call no tool. */
  tool?: string;
  /** Make this many tool calls in one turn (the named tool again, or the first tools). */
  parallel?: number;
  /** Messages with thinking on: a `redacted_thinking` block instead of the thinking block. */
  redacted?: number;
  /** String arguments set on the call (`arg.KEY=VALUE`), over the generated example. */
  args?: Record<string, string>;
}

const NUMERIC = [
  "status",
  "context",
  "cut",
  "stop",
  "delay",
  "cached",
  "words",
  "wait",
  "ready",
  "fail",
  "expire",
  "seconds",
  "gone",
  "detail",
  "stall",
  "parallel",
  "redacted",
];

const DIRECTIVE = /\[\[emulate ([^\]]*)\]\]/g;

/** Reads every `[[emulate k=v …]]` directive in the texts. */
export function directives(texts: string[]): Directives {
  const found: Directives = {};
  for (const text of texts) {
    for (const match of text.matchAll(DIRECTIVE)) {
      for (const pair of match[1].trim().split(/\s+/)) {
        const at = pair.indexOf("=");
        const key = at < 0 ? pair : pair.slice(0, at);
        const value = at < 0 ? undefined : pair.slice(at + 1);
        const n = Number(value);
        if (Number.isFinite(n) && NUMERIC.includes(key)) {
          (found as Record<string, unknown>)[key] = n;
        }
        if (key === "cache_write" && Number.isFinite(n)) found.cacheWrite = n;
        if (key === "cache_write_1h" && Number.isFinite(n)) found.cacheWrite1h = n;
        if (key === "null_usage" && Number.isFinite(n)) found.nullUsage = n;
        if (key === "no_usage" && Number.isFinite(n)) found.noUsage = n;
        if (key === "stream_error" && Number.isFinite(n)) found.streamError = n;
        if (key === "finish_usage" && Number.isFinite(n)) found.finishUsage = n;
        if (key === "tool" && value) found.tool = value;
        if (key.startsWith("arg.") && value !== undefined) {
          found.args = { ...found.args, [key.slice(4)]: value };
        }
      }
    }
  }
  return found;
}

const FILLER = "the quick brown fox jumps over a lazy dog while rivers run to the sea".split(" ");

/** The emulator's answer to a prompt: an echo of the last user text, or filler of N words. */
export function answer(lastUserText: string, d: Directives): string {
  if (d.words) {
    return Array.from({ length: d.words }, (_, i) => FILLER[i % FILLER.length]).join(" ") + ".";
  }
  const prompt = lastUserText.replace(DIRECTIVE, "").trim().slice(0, 400);
  return prompt ? `You said: ${prompt}` : "Hello from the emulator.";
}

/** Keys whose strings are structure or media, not prompt text. */
const NOT_TEXT = new Set([
  "data",
  "image_url",
  "signature",
  "thoughtSignature",
  "role",
  "type",
  "id",
  "call_id",
  "tool_use_id",
  "mimeType",
]);

/** Collects every prompt string of a JSON value (for token counts), skipping structure and media. */
export function collectText(value: unknown, into: string[] = []): string[] {
  if (typeof value === "string") into.push(value);
  else if (Array.isArray(value)) { for (const item of value) collectText(item, into); }
  else if (value && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      if (NOT_TEXT.has(key)) continue;
      collectText(item, into);
    }
  }
  return into;
}

type Schema = Record<string, unknown>;

/** Example strings for the common `format`s. */
const FORMATS: Record<string, string> = {
  "date-time": "2025-01-01T00:00:00Z",
  date: "2025-01-01",
  time: "12:00:00",
  email: "user@example.com",
  uri: "https://example.com",
  url: "https://example.com",
  uuid: "00000000-0000-4000-8000-000000000000",
  ipv4: "192.0.2.1",
};

/**
 * An example value conforming to a JSON schema (or Gemini's OpenAPI subset, types in any case):
 * `const` and the first `enum` value win, `$ref`s into `$defs`/`definitions` are followed,
 * `allOf` is merged, a union takes its first non-null branch, strings are "Paris" (or a
 * `format`'s example, padded to `minLength`), numbers 1 within their bounds, arrays hold
 * `minItems` (at least one) items, objects their required properties (or the first one).
 */
export function exampleValue(schema: unknown): unknown {
  const root = schema && typeof schema === "object" ? schema as Schema : {};
  return example(root, root, 0);
}

function example(schema: unknown, root: Schema, depth: number): unknown {
  if (!schema || typeof schema !== "object" || depth > 24) return {};
  const s = schema as Schema;
  if (typeof s.$ref === "string") {
    const match = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(s.$ref);
    const defs = { ...(root.definitions as Schema), ...(root.$defs as Schema) };
    const target = match ? defs[match[1].replaceAll("~1", "/").replaceAll("~0", "~")] : undefined;
    const { $ref: _, ...rest } = s;
    return example({ ...(target as Schema ?? {}), ...rest }, root, depth + 1);
  }
  if ("const" in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
  if (Array.isArray(s.allOf) && s.allOf.length) {
    const { allOf, ...rest } = s;
    const merged: Schema = { ...rest };
    for (const part of allOf as Schema[]) {
      for (const [key, value] of Object.entries(part ?? {})) {
        if (key === "properties") {
          merged.properties = { ...(merged.properties as Schema), ...(value as Schema) };
        } else if (key === "required" && Array.isArray(value)) {
          merged.required = [...((merged.required as string[]) ?? []), ...value];
        } else merged[key] ??= value;
      }
    }
    return example(merged, root, depth + 1);
  }
  const union = (s.anyOf ?? s.oneOf ?? s.any_of) as unknown[] | undefined;
  if (Array.isArray(union) && union.length) {
    const branch = union.find((b) => String((b as Schema)?.type).toLowerCase() !== "null");
    return example(branch ?? union[0], root, depth + 1);
  }
  const types = (Array.isArray(s.type) ? s.type : [s.type]).map((t) => String(t).toLowerCase());
  const type = types.find((t) => t !== "null" && t !== "undefined") ??
    (types[0] === "null" ? "null" : s.items ? "array" : "object");
  switch (type) {
    case "null":
      return null;
    case "number":
    case "integer":
      return exampleNumber(s, type === "integer");
    case "boolean":
      return true;
    case "string": {
      let text = FORMATS[String(s.format)] ?? "Paris";
      const min = Number(s.minLength ?? s.min_length ?? 0);
      const max = Number(s.maxLength ?? s.max_length ?? Infinity);
      while (text.length < min) text += "x";
      return text.slice(0, Math.max(min, Math.min(max, text.length)));
    }
    case "array": {
      const min = Number(s.minItems ?? s.min_items ?? 1);
      const max = Number(s.maxItems ?? s.max_items ?? Infinity);
      const count = Math.min(Math.max(1, min), max);
      const prefix = Array.isArray(s.prefixItems) ? s.prefixItems as unknown[] : [];
      return Array.from(
        { length: Math.max(count, prefix.length) },
        (_, i) => example(prefix[i] ?? s.items, root, depth + 1),
      );
    }
    default: {
      const properties = (s.properties ?? {}) as Schema;
      const out: Record<string, unknown> = {};
      const names = Array.isArray(s.required)
        ? s.required as string[]
        : Object.keys(properties).slice(0, 1);
      for (const name of names) out[name] = example(properties[name], root, depth + 1);
      return out;
    }
  }
}

/** 1 when the bounds allow it, else the nearest allowed value. */
function exampleNumber(s: Schema, integer: boolean): number {
  let low = -Infinity;
  let high = Infinity;
  if (typeof s.minimum === "number") low = s.minimum;
  if (typeof s.maximum === "number") high = s.maximum;
  const step = integer ? 1 : 0.5;
  if (typeof s.exclusiveMinimum === "number") low = Math.max(low, s.exclusiveMinimum + step);
  if (typeof s.exclusiveMaximum === "number") high = Math.min(high, s.exclusiveMaximum - step);
  let value = Math.min(Math.max(1, low), high);
  if (integer) value = Math.ceil(value) <= high ? Math.ceil(value) : Math.floor(value);
  const multiple = s.multipleOf;
  if (typeof multiple === "number" && multiple > 0 && value % multiple !== 0) {
    value = Math.ceil(value / multiple) * multiple;
  }
  return value;
}

/** A random id with a prefix, like the real services' ids. */
export function newId(prefix: string, length = 24): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length / 2));
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Waits `ms` milliseconds (no-op for 0). */
export function sleep(ms: number | undefined): Promise<void> {
  return ms ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

/**
 * Counters tests read at `GET /_emulator/stats` (they only grow): the streams started, completed
 * and cancelled (by the emulators of this process together); beside them each emulator reports
 * the provider requests it received (`requests`).
 */
export const stats = { streamsStarted: 0, streamsCompleted: 0, streamsCancelled: 0 };

/** Builds an SSE response body from an async generator of encoded events, honouring `cut`. */
export function sseBody(
  events: () => AsyncGenerator<string>,
  d: Directives,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let sent = 0;
  const iterator = events();
  stats.streamsStarted++;
  return new ReadableStream({
    async pull(controller) {
      if (d.cut !== undefined && sent >= d.cut) {
        controller.error(new Error("emulated cut"));
        return;
      }
      if (d.stop !== undefined && sent >= d.stop) {
        stats.streamsCompleted++;
        controller.close();
        return;
      }
      await sleep(d.delay);
      const { done, value } = await iterator.next();
      if (done) {
        stats.streamsCompleted++;
        controller.close();
        return;
      }
      sent++;
      controller.enqueue(encoder.encode(value));
    },
    cancel() {
      stats.streamsCancelled++;
    },
  });
}

/** Standard base64 of raw bytes. */
export function base64Bytes(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/** An opaque, encrypted-looking token for `text` (as the real services' `encrypted_*` fields). */
export function opaque(text: string): string {
  return `gAAAA${base64Bytes(new TextEncoder().encode(text.slice(0, 60)))}`;
}

/** A real 1×1 PNG, base64: the emulator's generated image. */
export const TINY_PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/** What the request itself says about tool calls. */
export interface ToolChoice {
  /** The tool `tool_choice` forces, by name (it wins over the prompt's `tool=`). */
  forced?: string;
  /** Parallel calls are turned off (`parallel_tool_calls: false`, `disable_parallel_tool_use`). */
  single?: boolean;
}

/**
 * The function tools to call this turn (see `Directives.tool`/`parallel`): none when the prompt
 * says `tool=none` or names a tool that is not offered; `parallel=N` makes N calls (the named
 * tool N times, or the first N tools, repeated when fewer are offered).
 */
export function pickTools<T>(
  tools: T[],
  name: (tool: T) => string,
  d: Directives,
  choice: ToolChoice = {},
): T[] {
  const wanted = choice.forced ?? d.tool;
  if (!tools.length || wanted === "none") return [];
  const count = choice.single ? 1 : Math.max(1, Math.min(d.parallel ?? 1, 4));
  if (wanted) {
    const named = tools.find((t) => name(t) === wanted);
    return named ? Array(count).fill(named) : [];
  }
  return Array.from({ length: count }, (_, i) => tools[i % tools.length]);
}

/** A call's arguments: the schema's example with the prompt's `arg.KEY=VALUE` strings over it. */
export function toolArguments(schema: unknown, d: Directives): unknown {
  const value = exampleValue(schema);
  if (!d.args || !value || typeof value !== "object" || Array.isArray(value)) return value;
  return { ...value, ...d.args };
}

const SECRET = "switchyard-emulator-signing-key";

function mac(kind: string, content: string): string {
  return createHmac("sha256", SECRET).update(`${kind}\n${content}`).digest("base64url");
}

/**
 * An opaque signature over `content` (thinking text, a call), as providers issue them: the
 * emulator can later tell its own from forged or foreign ones without keeping state.
 */
export function sign(kind: string, content: string): string {
  return `${kind}${mac(kind, content)}`;
}

/** Whether `signature` is one the emulator issued for `content`. */
export function signed(kind: string, content: string, signature: unknown): boolean {
  return typeof signature === "string" && signature === sign(kind, content);
}

/** The length of a base64url HMAC-SHA256. */
const MAC_LENGTH = 43;

/**
 * An opaque token carrying `payload` under the emulator's seal (`encrypted_content`,
 * `redacted_thinking` data): it verifies on its own, whatever item it is replayed on.
 */
export function seal(kind: string, payload: string): string {
  const body = base64Bytes(new TextEncoder().encode(payload)).replaceAll("+", "-")
    .replaceAll("/", "_").replace(/=+$/, "");
  return `${kind}${mac(kind, payload)}${body}`;
}

/** The payload of a token `seal(kind, …)` issued, or undefined for a forged or foreign one. */
export function unseal(kind: string, token: unknown): string | undefined {
  if (typeof token !== "string" || !token.startsWith(kind)) return undefined;
  const tag = token.slice(kind.length, kind.length + MAC_LENGTH);
  const body = token.slice(kind.length + MAC_LENGTH);
  if (!/^[A-Za-z0-9_-]*$/.test(body)) return undefined;
  let payload: string;
  try {
    const binary = atob(body.replaceAll("-", "+").replaceAll("_", "/"));
    payload = new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from(binary, (c) => c.charCodeAt(0)),
    );
  } catch {
    return undefined;
  }
  return tag === mac(kind, payload) ? payload : undefined;
}

/** JSON with object keys sorted, so equal values sign alike whatever their key order. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
