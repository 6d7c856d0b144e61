/**
 * Requests per minute per key, as an exact sliding window: a request is allowed when fewer than
 * `limit` requests of that key were allowed in the last 60 seconds. In memory, per process.
 */

const WINDOW_MS = 60_000;

export interface RateDecision {
  allowed: boolean;
  /** 0 when unlimited. */
  limit: number;
  remaining: number;
  /** Milliseconds until one more request is allowed (0 when one is already allowed). */
  resetMs: number;
}

interface Window {
  times: Float64Array;
  head: number;
  count: number;
}

/** Sliding-window request counter, one ring buffer of timestamps per key. */
export class RateLimiter {
  readonly #windows = new Map<string, Window>();

  /** Counts one request of `key` against `limit` per minute (0 = unlimited) if it is allowed. */
  check(key: string, limit: number, now = Date.now()): RateDecision {
    if (limit <= 0) return { allowed: true, limit: 0, remaining: 0, resetMs: 0 };
    let w = this.#windows.get(key);
    if (!w || w.times.length !== limit) {
      w = { times: new Float64Array(limit), head: 0, count: 0 };
      this.#windows.set(key, w);
      if (this.#windows.size > 10_000) this.#sweep(now);
    }
    while (w.count > 0 && w.times[w.head] <= now - WINDOW_MS) {
      w.head = (w.head + 1) % limit;
      w.count--;
    }
    if (w.count >= limit) {
      return { allowed: false, limit, remaining: 0, resetMs: w.times[w.head] + WINDOW_MS - now };
    }
    w.times[(w.head + w.count) % limit] = now;
    w.count++;
    const remaining = limit - w.count;
    const resetMs = remaining > 0 ? 0 : w.times[w.head] + WINDOW_MS - now;
    return { allowed: true, limit, remaining, resetMs };
  }

  #sweep(now: number): void {
    for (const [key, w] of this.#windows) {
      const newest = w.times[(w.head + w.count - 1 + w.times.length) % w.times.length];
      if (w.count === 0 || newest <= now - WINDOW_MS) this.#windows.delete(key);
    }
  }
}

/** The `x-ratelimit-*` headers (and `retry-after` when refused) for a decision. */
export function rateLimitHeaders(d: RateDecision): Record<string, string> {
  if (d.limit === 0) return {};
  const headers: Record<string, string> = {
    "x-ratelimit-limit-requests": String(d.limit),
    "x-ratelimit-remaining-requests": String(d.remaining),
    "x-ratelimit-reset-requests": formatDuration(d.resetMs),
  };
  if (!d.allowed) headers["retry-after"] = String(Math.max(1, Math.ceil(d.resetMs / 1000)));
  return headers;
}

/** Go-style duration as OpenAI sends it: `0s`, `250ms`, `12s`, `1m0s`. */
export function formatDuration(ms: number): string {
  if (ms <= 0) return "0s";
  if (ms < 1000) return `${Math.ceil(ms)}ms`;
  const seconds = Math.ceil(ms / 1000);
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m${seconds % 60}s`;
}
