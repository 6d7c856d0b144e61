/**
 * One call's attempts at its upstreams: how many were made, whether another may start (at most
 * `maxAttempts`, none once `budgetMs` has passed since the call began), the deadline of the next one's
 * headers, and the backoff before trying a target that just failed again. Also what served the
 * call, for the `x-switchyard-*` headers.
 */
import type { RoutingSettings } from "../config/load.ts";
import type { RetryTrigger } from "../config/schema.ts";
import type { Board } from "./board.ts";
import { sleep } from "./limits.ts";

/** Why an attempt did not give an answer to relay. */
export type FailureKind =
  /** The upstream could not be reached. */
  | "connection"
  /** No headers in time. */
  | "timeout"
  /** Rate-limited (every key of the target resting). */
  | "429"
  /** A server error (5xx, Anthropic's 529). */
  | "5xx"
  /** The target's calls are all taken (`maxConcurrent`, `rpm`) and the wait ran out. */
  | "limited"
  /** The input exceeds the model's context window. */
  | "context"
  /** Every key of the target was refused. */
  | "auth";

/** The routing of one call, kept on its request context. */
export class CallRoute {
  /** Upstream requests made so far. */
  count = 0;
  /** When the call began: the budget counts from here. */
  readonly #began = Date.now();
  /** The provider and public model that answered, once one did. */
  served?: { provider: string; model: string };
  /**
   * Whether the call has somewhere else to go (other deployments or fallbacks): a rate-limited
   * key then rests even when it is its provider's only one (see `pipeline/route.ts`).
   */
  alternatives = false;
  /** The id of the key the last answered request used (see `UpstreamCall.key`). */
  keyUsed?: string;
  /**
   * Where the call's conversation has its prompt cache: that deployment (by name) is tried first
   * and that key (by id) first on it, while they are usable (see `pipeline/affinity.ts`).
   */
  prefer?: { target: string; key: string };

  constructor(readonly settings: RoutingSettings, readonly board: Board) {}

  /** What is left of `routing.budgetMs` (ms; ≤ 0 once spent). */
  remainingMs(now = Date.now()): number {
    return this.settings.budgetMs - (now - this.#began);
  }

  /** Whether another attempt may start now: the first always, the others within count and budget. */
  canStart(now = Date.now()): boolean {
    if (this.count === 0) return true;
    return this.count < this.settings.maxAttempts && this.remainingMs(now) > 0;
  }

  /** Counts an attempt that starts now. */
  start(): void {
    this.count++;
  }

  /** The header deadline of the attempt about to start: the budget's rest, after the first. */
  headersMs(base: number, now = Date.now()): number {
    if (this.count <= 1) return base;
    return Math.max(1, Math.min(base, this.remainingMs(now)));
  }

  /** Whether a failure of `kind` moves the call on (to another key, target or model). */
  retries(kind: FailureKind): boolean {
    if (kind === "limited" || kind === "context" || kind === "auth") return true;
    return this.settings.retryOn.has(kind as RetryTrigger);
  }

  /**
   * Waits before retrying a target that just failed: `backoffMs` doubled per attempt so far, with
   * full jitter between half and all of it, never past the budget.
   */
  async backoff(signal?: AbortSignal, now = Date.now()): Promise<void> {
    const base = this.settings.backoffMs * 2 ** Math.max(0, this.count - 1);
    const ms = Math.min(base * (0.5 + Math.random() / 2), this.remainingMs(now));
    if (ms > 0) await sleep(ms, signal);
  }
}

/**
 * The ms a `retry-after` header asks for (seconds, or an HTTP date), at most an hour; null when
 * absent or unreadable.
 */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  const seconds = Number(value);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - now;
  if (!Number.isFinite(ms) || ms < 0) return null;
  return Math.min(ms, 3600_000);
}
