/**
 * Upstream calls and their failures over the last few minutes, by provider: what `/readyz`
 * reports. Kept like the other metrics — counters in each thread's registry, here labelled by
 * provider and minute, gathered and added up across threads — but not written to `/metrics`
 * (Prometheus computes rates from `switchyard_upstream_errors_total` itself). Minutes that left the
 * window are dropped as new calls are counted, so a thread keeps a handful of series per provider.
 */
import type { Family, Registry, Samples } from "./registry.ts";
import { counter, labelsOf } from "./registry.ts";

/** The window: the current clock minute and the ones before it, this many in all. */
export const WINDOW_MINUTES = 5;
const MINUTE_MS = 60_000;

export const RECENT_CALLS: Family = counter(
  "switchyard_recent_upstream_calls",
  "Upstream calls by provider and minute since the epoch (the last few minutes only).",
  ["provider", "minute"],
);
export const RECENT_ERRORS: Family = counter(
  "switchyard_recent_upstream_failures",
  "Upstream calls that failed (see `isProviderFailure`), by provider and minute.",
  ["provider", "minute"],
);
/** The families a registry needs for `RecentCalls`. */
export const RECENT_FAMILIES: readonly Family[] = [RECENT_CALLS, RECENT_ERRORS];

/**
 * Whether an upstream call's outcome counts against its provider: no answer (status 0), a 5xx, or
 * an answer saying the provider would not serve the gateway (401, 403: its credentials; 408, 429:
 * overloaded or limited). Other 4xx are the request's own fault: counted as calls, not failures.
 */
export function isProviderFailure(status: number): boolean {
  return status === 0 || status >= 500 || [401, 403, 408, 429].includes(status);
}

function minuteOf(now: number): number {
  return Math.floor(now / MINUTE_MS);
}

/** Records this thread's upstream outcomes in its registry (see `RECENT_FAMILIES`). */
export class RecentCalls {
  /** The minute whose older series were last dropped. */
  #pruned = 0;

  constructor(readonly registry: Registry) {}

  /** Counts one call of `provider` that ended with `status` (0: no answer). */
  record(provider: string, status: number, now = Date.now()): void {
    const minute = minuteOf(now);
    const labels = [provider, String(minute)];
    this.registry.add(RECENT_CALLS, labels);
    if (isProviderFailure(status)) this.registry.add(RECENT_ERRORS, labels);
    if (minute === this.#pruned) return;
    this.#pruned = minute;
    const oldest = minute - WINDOW_MINUTES + 1;
    for (const family of RECENT_FAMILIES) {
      this.registry.retain(family, ([, m]) => Number(m) >= oldest);
    }
  }
}

/** One provider's calls and failures over the window. */
export interface ProviderOutcomes {
  calls: number;
  errors: number;
}

/**
 * Calls and failures by provider over the window ending at `now`, added up from several threads'
 * samples (each a `snapshot`); providers without a call in the window are absent.
 */
export function recentOutcomes(
  parts: readonly Record<string, Samples>[],
  now = Date.now(),
): Map<string, ProviderOutcomes> {
  const oldest = minuteOf(now) - WINDOW_MINUTES + 1;
  const out = new Map<string, ProviderOutcomes>();
  for (const part of parts) {
    for (const [family, field] of [[RECENT_CALLS, "calls"], [RECENT_ERRORS, "errors"]] as const) {
      for (const [key, sample] of Object.entries(part[family.name] ?? {})) {
        const [provider, minute] = labelsOf(key);
        if (typeof sample !== "number" || Number(minute) < oldest) continue;
        const entry = out.get(provider) ?? { calls: 0, errors: 0 };
        entry[field] += sample;
        out.set(provider, entry);
      }
    }
  }
  return out;
}
