/**
 * Requests per minute per key over a 60-second sliding window: a request is allowed when fewer
 * than `limit` requests of that key were allowed in the last 60 seconds. Refused requests are not
 * counted. In memory, per process.
 *
 * Memory per key is bounded by a constant whatever the limit (config and `keys create --rpm`
 * allow up to 1,000,000), using one of two representations chosen by the limit:
 *
 * - `limit <= EXACT_MAX_LIMIT` (1024): an exact ring buffer of the allowed requests' timestamps,
 *   `Float64Array(limit)`, at most 8 KiB. Each request leaves the window exactly 60 s after it
 *   was made, as before. Small limits are the common case, and the ones where 100 ms of
 *   imprecision would be most visible (a client retrying after `retry-after`).
 * - larger limits: 600 buckets of 100 ms covering the 60 s, a `Uint32Array(600)` ring of counts
 *   (2,400 bytes). The window is the bucket holding `now` and the 599 before it; a request leaves
 *   the window when its bucket does, i.e. between 59.9 s and 60 s after it was made (so at most
 *   `limit` requests are allowed in any 59.9 s, and never more than `limit` are counted). When
 *   refused, `resetMs` is the time until the oldest non-empty bucket leaves the window (> 0 and
 *   ≤ 60 s). With one request per timestamp the buckets could not reproduce the exact behaviour
 *   for small limits, hence the two representations rather than one.
 *
 * A key's history restarts when its limit changes. Idle keys (nothing counted in the last 60 s)
 * are swept when the number of tracked keys grows past a threshold; deciding idleness is O(1) per
 * key, and the threshold doubles with the keys still active after a sweep, so sweeping costs
 * amortized O(1) per new key.
 */
import { formatDuration, retryAfterSeconds } from "../http/errors.ts";
import type { RateDecision } from "../store/store.ts";

const WINDOW_MS = 60_000;

/** Largest limit kept as an exact ring of timestamps (8 bytes a request, so at most 8 KiB). */
export const EXACT_MAX_LIMIT = 1024;

const BUCKET_MS = 100;
const BUCKETS = WINDOW_MS / BUCKET_MS;

/** Tracked keys above which idle ones are swept. */
const SWEEP_MIN_KEYS = 10_000;

/**
 * The outcome of {@link RateLimiter.check} (or of a store that counts requests itself), also what
 * {@link rateLimitHeaders} reports.
 */
export type { RateDecision };

/** One key's window, in either representation. */
interface Window {
  readonly limit: number;
  /** Counts one request at `now` if allowed. */
  check(now: number): RateDecision;
  /** True when nothing counted is left in the window at `now`; O(1). */
  idle(now: number): boolean;
}

/** Exact window: the timestamps of the allowed requests still in it, oldest at `head`. */
class ExactWindow implements Window {
  readonly #times: Float64Array;
  #head = 0;
  #count = 0;

  constructor(readonly limit: number) {
    this.#times = new Float64Array(limit);
  }

  check(now: number): RateDecision {
    const { limit } = this;
    const times = this.#times;
    while (this.#count > 0 && times[this.#head] <= now - WINDOW_MS) {
      this.#head = (this.#head + 1) % limit;
      this.#count--;
    }
    if (this.#count >= limit) {
      return { allowed: false, limit, remaining: 0, resetMs: times[this.#head] + WINDOW_MS - now };
    }
    times[(this.#head + this.#count) % limit] = now;
    this.#count++;
    const remaining = limit - this.#count;
    const resetMs = remaining > 0 ? 0 : times[this.#head] + WINDOW_MS - now;
    return { allowed: true, limit, remaining, resetMs };
  }

  idle(now: number): boolean {
    if (this.#count === 0) return true;
    const newest = this.#times[(this.#head + this.#count - 1) % this.limit];
    return newest <= now - WINDOW_MS;
  }
}

/** Bucketed window: counts per 100 ms bucket, ring-indexed by absolute bucket number. */
class BucketWindow implements Window {
  readonly #counts = new Uint32Array(BUCKETS);
  /** Sum of `#counts`. */
  #total = 0;
  /** Absolute number (`floor(ms / BUCKET_MS)`) of the newest bucket the ring has reached. */
  #newest: number;
  /** Absolute number of the bucket of the last counted request. */
  #lastCounted = -Infinity;

  constructor(readonly limit: number, now: number) {
    this.#newest = Math.floor(now / BUCKET_MS);
  }

  check(now: number): RateDecision {
    const { limit } = this;
    // A clock that went back counts into the newest bucket rather than rewriting the past.
    const bucket = Math.max(Math.floor(now / BUCKET_MS), this.#newest);
    this.#advance(bucket);
    if (this.#total >= limit) {
      return { allowed: false, limit, remaining: 0, resetMs: this.#resetMs(now) };
    }
    this.#counts[slot(bucket)]++;
    this.#total++;
    this.#lastCounted = bucket;
    const remaining = limit - this.#total;
    return { allowed: true, limit, remaining, resetMs: remaining > 0 ? 0 : this.#resetMs(now) };
  }

  idle(now: number): boolean {
    return this.#total === 0 || Math.floor(now / BUCKET_MS) >= this.#lastCounted + BUCKETS;
  }

  /** Empties the buckets that left the window by the time `bucket` is the newest; ≤ 600 steps. */
  #advance(bucket: number): void {
    if (bucket <= this.#newest) return;
    if (bucket - this.#newest >= BUCKETS) {
      this.#counts.fill(0);
      this.#total = 0;
    } else {
      for (let b = this.#newest + 1; b <= bucket; b++) {
        const s = slot(b);
        this.#total -= this.#counts[s];
        this.#counts[s] = 0;
      }
    }
    this.#newest = bucket;
  }

  /** Time until the oldest non-empty bucket leaves the window (the window is not empty). */
  #resetMs(now: number): number {
    for (let b = this.#newest - BUCKETS + 1; b <= this.#newest; b++) {
      if (this.#counts[slot(b)] > 0) {
        return Math.min(WINDOW_MS, Math.max(0, (b + BUCKETS) * BUCKET_MS - now));
      }
    }
    return 0;
  }
}

/** Ring index of an absolute bucket number (also for negative times). */
function slot(bucket: number): number {
  return ((bucket % BUCKETS) + BUCKETS) % BUCKETS;
}

/** The decision for a key without a limit (nothing is counted). */
export const UNLIMITED: Readonly<RateDecision> = {
  allowed: true,
  limit: 0,
  remaining: 0,
  resetMs: 0,
};

/** Sliding-window request counter per key, in bounded memory per key (see the module doc). */
export class RateLimiter {
  readonly #windows = new Map<string, Window>();
  #sweepAbove = SWEEP_MIN_KEYS;

  /** Counts one request of `key` against `limit` per minute (0 = unlimited) if it is allowed. */
  check(key: string, limit: number, now = Date.now()): RateDecision {
    if (limit <= 0) return UNLIMITED;
    let w = this.#windows.get(key);
    if (!w || w.limit !== limit) {
      // Sweep before adding: the new window is empty and would itself be swept as idle.
      if (!w && this.#windows.size >= this.#sweepAbove) this.#sweep(now);
      w = limit <= EXACT_MAX_LIMIT ? new ExactWindow(limit) : new BucketWindow(limit, now);
      this.#windows.set(key, w);
    }
    return w.check(now);
  }

  /** Number of keys currently tracked (read-only; for monitoring and tests). */
  get size(): number {
    return this.#windows.size;
  }

  /** Forgets idle keys: O(keys), and at most once per doubling of the active keys. */
  #sweep(now: number): void {
    for (const [key, w] of this.#windows) {
      if (w.idle(now)) this.#windows.delete(key);
    }
    this.#sweepAbove = Math.max(SWEEP_MIN_KEYS, 2 * this.#windows.size);
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
  if (!d.allowed) headers["retry-after"] = String(retryAfterSeconds(d.resetMs));
  return headers;
}

export { formatDuration };
