/**
 * The emulator's deterministic "model": a tokenizer, answers derived from the prompt, and the
 * fault directives a prompt can carry, e.g. `[[emulate status=429]]`, `[[emulate cut=5]]`,
 * `[[emulate stop=5]]` (a stream that ends cleanly before its end),
 * `[[emulate delay=20]]`, `[[emulate cached=64]]`, `[[emulate words=300]]`, `[[emulate wait=500]]`,
 * and for video jobs `[[emulate ready=800 seconds=5]]`, `[[emulate fail=1]]`, `[[emulate expire=1]]`,
 * `[[emulate gone=1]]`; tool calls are steered with `[[emulate tool=NAME]]` (`tool=none`: no call),
 * `[[emulate parallel=2]]` and `[[emulate arg.KEY=VALUE]]`.
 */

import { createHmac } from "node:crypto";

const TOKEN = /\s*(?:\w+|[^\w\s])/g;

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
  /** Cut a stream after this many events (or send a truncated JSON body). */
  cut?: number;
  /** End a stream cleanly after this many events, before its end-of-stream marker. */
  stop?: number;
  /** Milliseconds to wait before each stream event. */
  delay?: number;
  /** Report this many input tokens as read from the prompt cache. */
  cached?: number;
  /** Report this many input tokens as written to the prompt cache. */
  cacheWrite?: number;
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
  /** Images: `quality: auto` comes back `high` (1) instead of `medium`. */
  detail?: number;
  /** Responses and chat streams: after this many events, the provider's error event (a rate limit). */
  streamError?: number;
  /** JSON answers: the body pauses this many milliseconds after its first bytes. */
  stall?: number;
  /** Call this function tool (by name) instead of the first one; `none`: call no tool. */
  tool?: string;
  /** Make this many tool calls in one turn (the named tool again, or the first tools). */
  parallel?: number;
  /** String arguments set on the call (`arg.KEY=VALUE`), over the generated example. */
  args?: Record<string, string>;
}

const NUMERIC = [
  "status",
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
        if (key === "null_usage" && Number.isFinite(n)) found.nullUsage = n;
        if (key === "stream_error" && Number.isFinite(n)) found.streamError = n;
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

/** An example value for a JSON schema: enums take their first value, strings "Paris". */
export function exampleValue(schema: unknown): unknown {
  const s = (schema ?? {}) as {
    type?: string | string[];
    enum?: unknown[];
    properties?: Record<string, unknown>;
    required?: string[];
    items?: unknown;
    anyOf?: unknown[];
  };
  if (s.enum?.length) return s.enum[0];
  if (s.anyOf?.length) return exampleValue(s.anyOf[0]);
  const type = String(Array.isArray(s.type) ? s.type[0] : s.type ?? "object").toLowerCase();
  switch (type) {
    case "number":
    case "integer":
      return 1;
    case "boolean":
      return true;
    case "array":
      return [exampleValue(s.items)];
    case "string":
      return "Paris";
    default: {
      const out: Record<string, unknown> = {};
      const names = s.required ?? Object.keys(s.properties ?? {}).slice(0, 1);
      for (const name of names) out[name] = exampleValue(s.properties?.[name]);
      return out;
    }
  }
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

/** Counters tests read at `GET /_emulator/stats`. */
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

/**
 * The function tools to call this turn (see `Directives.tool`/`parallel`): none when the prompt
 * says `tool=none` or names a tool that is not offered.
 */
export function pickTools<T>(tools: T[], name: (tool: T) => string, d: Directives): T[] {
  if (!tools.length || d.tool === "none") return [];
  const count = Math.max(1, Math.min(d.parallel ?? 1, 4));
  if (d.tool) {
    const named = tools.find((t) => name(t) === d.tool);
    return named ? Array(count).fill(named) : [];
  }
  return tools.slice(0, count);
}

/** A call's arguments: the schema's example with the prompt's `arg.KEY=VALUE` strings over it. */
export function toolArguments(schema: unknown, d: Directives): unknown {
  const value = exampleValue(schema);
  if (!d.args || !value || typeof value !== "object" || Array.isArray(value)) return value;
  return { ...value, ...d.args };
}

const SECRET = "switchyard-emulator-signing-key";

/**
 * An opaque signature over `content` (thinking text, a call), as providers issue them: the
 * emulator can later tell its own from forged or foreign ones without keeping state.
 */
export function sign(kind: string, content: string): string {
  return `${kind}${createHmac("sha256", SECRET).update(`${kind}\n${content}`).digest("base64url")}`;
}

/** Whether `signature` is one the emulator issued for `content`. */
export function signed(kind: string, content: string, signature: unknown): boolean {
  return typeof signature === "string" && signature === sign(kind, content);
}
