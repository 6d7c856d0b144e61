/**
 * The providers' prompt caches, as the emulator models them: one cache per emulated provider,
 * upstream key and model (a key of another organization, or another model, never reads what one
 * wrote). A prompt is a list of segments — a tool list, a system prompt, a message or content
 * block — each with its token count (the emulator's own estimate); a prefix is named by a hash
 * chained over its segments, so two prompts share a cached prefix exactly as far as their
 * segments are the same.
 *
 * - Anthropic (`breakpoints`): only prefixes ending at a `cache_control` breakpoint are written,
 *   each for its TTL (5 minutes, or 1 hour with `ttl: "1h"`); a breakpoint reads the longest
 *   cached prefix ending at it or at one of the 20 blocks before it; a prefix under the model's
 *   minimum is never cached. A hit refreshes the entry's TTL.
 * - OpenAI (`automatic`): every prompt of at least 1,024 tokens is cached, in 128-token steps; a
 *   prompt reads the longest step already cached; the TTL (5 minutes of inactivity, or 24 hours
 *   with `prompt_cache_retention: "24h"`) runs from the last use. `prompt_cache_key` is part of
 *   the prefix's name (it routes to the same cache machine; another key finds nothing).
 * - Gemini (`automatic`, no steps): implicit caching of prefixes over the model's minimum.
 *
 * The clock is the emulator's (`now`), which a test moves on (`POST /_emulator/clock`) to let
 * entries expire without waiting.
 */
import { createHash } from "node:crypto";
import { hashesOf } from "../name_hash.ts";

/** One piece of a prompt: what names it, and its tokens. */
export interface Segment {
  /** Its content as text (any stable serialization). */
  text: string;
  tokens: number;
  /** Anthropic: a `cache_control` breakpoint at the end of this segment, with its TTL. */
  breakpoint?: Ttl;
}

/** A cache entry's time to live. */
export type Ttl = "5m" | "1h" | "24h";

const TTL_MS: Record<Ttl, number> = { "5m": 5 * 60_000, "1h": 3600_000, "24h": 24 * 3600_000 };

/** Entries kept at most (the least recently used are dropped past it). */
const MAX_ENTRIES = 100_000;
/** How many blocks before a breakpoint Anthropic looks for a cached prefix. */
const LOOKBACK = 20;

interface Entry {
  expires: number;
  ttl: Ttl;
}

/** A prompt as chained prefix names: `names[i]` names segments 0..i, which end at `ends[i]`. */
export interface Prefixes {
  names: string[];
  ends: number[];
  /** Each segment's breakpoint, if any. */
  breakpoints: (Ttl | undefined)[];
}

/** Chains `segments` after `from` (a prompt continued: a stored response's, see `responses.ts`). */
export function prefixes(seed: string, segments: Segment[], from?: Prefixes): Prefixes {
  const out: Prefixes = from
    ? { names: [...from.names], ends: [...from.ends], breakpoints: [...from.breakpoints] }
    : { names: [], ends: [], breakpoints: [] };
  let name = out.names.at(-1) ?? hash(seed);
  let end = out.ends.at(-1) ?? 0;
  for (const segment of segments) {
    name = hash(`${name}\n${segment.text}`);
    end += segment.tokens;
    out.names.push(name);
    out.ends.push(end);
    out.breakpoints.push(segment.breakpoint);
  }
  return out;
}

/** A 64-bit hash of `text`: FNV-1a (two lanes) when short, a native SHA-256 call past 4 KiB. */
function hash(text: string): string {
  if (text.length > 4096) return createHash("sha256").update(text).digest("base64url").slice(0, 16);
  const [a, b] = hashesOf(text);
  const hex = (n: number) => (n >>> 0).toString(16).padStart(8, "0");
  return hex(a) + hex(b);
}

/** What a prompt read from and wrote to the cache, in tokens (writes by TTL). */
export interface CacheUse {
  read: number;
  written: number;
  written1h: number;
}

const NONE: CacheUse = { read: 0, written: 0, written1h: 0 };

/** The emulator's prompt caches (see the module's doc). */
export class PromptCache {
  readonly #entries = new Map<string, Entry>();

  constructor(readonly now: () => number = Date.now) {}

  #live(name: string, now: number): Entry | undefined {
    const entry = this.#entries.get(name);
    if (!entry) return undefined;
    this.#entries.delete(name);
    if (entry.expires <= now) return undefined;
    this.#entries.set(name, entry); // most recently used last
    return entry;
  }

  #write(name: string, ttl: Ttl, now: number): void {
    this.#entries.delete(name);
    this.#entries.set(name, { expires: now + TTL_MS[ttl], ttl });
    if (this.#entries.size > MAX_ENTRIES) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
  }

  /**
   * Anthropic's explicit caching: reads the longest cached prefix at or up to 20 blocks before a
   * breakpoint, writes every breakpoint's prefix past it (at least `min` tokens).
   */
  breakpoints(scope: string, prompt: Prefixes, min: number): CacheUse {
    const now = this.now();
    const marks = prompt.breakpoints.flatMap((ttl, i) => ttl ? [i] : []);
    if (!marks.length || prompt.ends[marks.at(-1)!] < min) return NONE;
    let read = 0;
    let hit: { name: string; ttl: Ttl } | undefined;
    for (const mark of marks) {
      for (let i = mark; i >= Math.max(0, mark - LOOKBACK); i--) {
        if (prompt.ends[i] < min || prompt.ends[i] <= read) break;
        const name = `${scope}|${prompt.names[i]}`;
        const entry = this.#live(name, now);
        if (entry) {
          read = prompt.ends[i];
          hit = { name, ttl: entry.ttl };
          break;
        }
      }
    }
    if (hit) this.#write(hit.name, hit.ttl, now); // a hit refreshes its TTL
    const use = { read, written: 0, written1h: 0 };
    let from = read;
    for (const mark of marks) {
      const end = prompt.ends[mark];
      if (end <= from || end < min) continue;
      const ttl = prompt.breakpoints[mark]!;
      if (ttl === "5m") use.written += end - from;
      else use.written1h += end - from;
      from = end;
      this.#write(`${scope}|${prompt.names[mark]}`, ttl, now);
    }
    return use;
  }

  /**
   * Automatic prefix caching (OpenAI, Gemini): reads the longest cached prefix of `step`-token
   * steps from `min` tokens on (`step` 1: any length), then writes every step of this prompt.
   */
  automatic(scope: string, prompt: Prefixes, min: number, step: number, ttl: Ttl): number {
    const total = prompt.ends.at(-1) ?? 0;
    if (total < min) return 0;
    const now = this.now();
    // The name of the prefix of `tokens` tokens: the segment it ends in, and the length.
    const names: string[] = [];
    let segment = 0;
    const lengths = step === 1 ? prompt.ends.filter((end) => end >= min) : [];
    if (step > 1) { for (let n = min; n <= total; n += step) lengths.push(n); }
    for (const tokens of lengths) {
      while (prompt.ends[segment] < tokens) segment++;
      names.push(`${scope}|${prompt.names[segment]}@${tokens}`);
    }
    let read = 0;
    for (let i = names.length - 1; i >= 0; i--) {
      if (this.#live(names[i], now)) {
        read = lengths[i];
        break;
      }
    }
    for (const name of names) this.#write(name, ttl, now);
    return read;
  }
}

/** OpenAI's automatic caching: from 1,024 tokens, in steps of 128. */
const OPENAI_MIN = 1024;
const OPENAI_STEP = 128;

/** What an OpenAI request's cached prompt begins with: its `prompt_cache_key` and its tools. */
export function openaiSeed(body: { prompt_cache_key?: unknown; tools?: unknown }): string {
  return `${String(body.prompt_cache_key ?? "")}\n${JSON.stringify(body.tools ?? [])}`;
}

/**
 * The tokens OpenAI's cache reads for `prompt` of `model` (`retention`: the request's
 * `prompt_cache_retention`), at most `total`; the prompt's steps are cached from then on.
 */
export function openaiCached(
  context: CacheContext,
  model: string,
  retention: unknown,
  prompt: Prefixes,
  total: number,
): number {
  const scope = cacheScope(context.provider, context.key, model);
  const ttl: Ttl = retention === "24h" ? "24h" : "5m";
  return Math.min(context.cache.automatic(scope, prompt, OPENAI_MIN, OPENAI_STEP, ttl), total);
}

/** The scope of one cache: the emulated provider, the upstream key and the model. */
export function cacheScope(provider: string, key: string, model: string): string {
  return `${provider}|${hash(key)}|${model}`;
}

/** The cache a request is made under (absent: no caching, as count_tokens). */
export interface CacheContext {
  cache: PromptCache;
  /** The emulated provider (the path prefix: `anthropic`, `openai`, `gemini`…). */
  provider: string;
  /** The upstream key the request carries. */
  key: string;
}
