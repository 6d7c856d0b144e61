/**
 * The prompt cache's figures as `GET /v1/usage`, the admin API and the dashboard show them, from
 * the store's sums per day, key, model and miss cause (`Store.cacheUsage`): for a set of calls, the
 * share of their input tokens read from the cache (`hit_rate`), the tokens written to it by
 * lifetime, what the reads saved, and what misses the gateway caused lost (an estimate, by cause) —
 * in total, by model, by UTC day and, for the admin, by key. Pure; sums exact at any size.
 */
import { amountFields } from "../money.ts";
import { sumTotals } from "../store/amounts.ts";
import type { CacheCharge, CacheUsageRow, Total } from "../store/store.ts";

/** The JSON of one set of calls' cache figures (see `cacheFigures`). */
export type CacheFiguresJson = Record<string, unknown>;

/** Exact sums of the rows' `field`. */
function sum(rows: readonly CacheUsageRow[], field: keyof CacheUsageRow): Total {
  return sumTotals(rows.map((r) => r[field] as Total));
}

/** `part / whole` as a number from 0 to 1, null when `whole` is 0. */
function share(part: Total, whole: Total): number | null {
  return BigInt(whole) === 0n ? null : Number(part) / Number(whole);
}

/** Rows grouped by `key`, in the order each key is first met. */
function groupBy<K>(
  rows: readonly CacheUsageRow[],
  key: (row: CacheUsageRow) => K,
): Map<K, CacheUsageRow[]> {
  const groups = new Map<K, CacheUsageRow[]>();
  for (const row of rows) {
    const k = key(row);
    const group = groups.get(k);
    if (group) group.push(row);
    else groups.set(k, [row]);
  }
  return groups;
}

/**
 * The cache figures of the calls the rows sum: `requests`, `input_tokens` (all of them),
 * `cached_input_tokens` (read from the cache), `cache_write_tokens` (written for 5 minutes),
 * `cache_write_1h_tokens`, `uncached_input_tokens` (the rest), `hit_rate` (cached ÷ input; null
 * without input), `saved_*` (what the reads saved), `missed_input_tokens` and `lost_*` (what misses
 * the gateway caused would have read, and lost), and `misses` by cause.
 */
export function cacheFigures(rows: readonly CacheUsageRow[]): CacheFiguresJson {
  const input = sum(rows, "inputTokens");
  const cached = sum(rows, "cachedTokens");
  const write = sum(rows, "cacheWriteTokens");
  const write1h = sum(rows, "cacheWrite1hTokens");
  const missed = rows.filter((r) => r.missCause !== null);
  return {
    requests: rows.reduce((n, r) => n + r.requests, 0),
    input_tokens: input,
    cached_input_tokens: cached,
    cache_write_tokens: write,
    cache_write_1h_tokens: write1h,
    uncached_input_tokens: sumTotals([input, -BigInt(cached), -BigInt(write), -BigInt(write1h)]),
    hit_rate: share(cached, input),
    ...amountFields("saved", sum(rows, "saved")),
    missed_input_tokens: sum(rows, "missTokens"),
    ...amountFields("lost", sum(rows, "lost")),
    misses: Object.fromEntries(
      [...groupBy(missed, (r) => r.missCause!)].map(([cause, group]) => [cause, {
        requests: group.reduce((n, r) => n + r.requests, 0),
        missed_input_tokens: sum(group, "missTokens"),
        ...amountFields("lost", sum(group, "lost")),
      }]),
    ),
  };
}

/**
 * A cache report: the rows' figures in total, `by_model` (public model id → figures) and `by_day`
 * (one entry per UTC day with calls, oldest first, each with its `day`).
 */
export function cacheReport(rows: readonly CacheUsageRow[]): CacheFiguresJson {
  const byDay = [...groupBy(rows, (r) => r.day)].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
  return {
    ...cacheFigures(rows),
    by_model: Object.fromEntries(
      [...groupBy(rows, (r) => r.model)].map(([model, group]) => [model, cacheFigures(group)]),
    ),
    by_day: byDay.map(([day, group]) => ({ day, ...cacheFigures(group) })),
  };
}

/** A cache report per key (key id → report) of an account's rows (see `Store.cacheUsage`). */
export function cacheReportByKey(rows: readonly CacheUsageRow[]): Record<string, CacheFiguresJson> {
  return Object.fromEntries(
    [...groupBy(rows, (r) => r.keyId ?? "")].map(([key, group]) => [key, cacheReport(group)]),
  );
}

/** One ledger entry's cache figures, as the admin API lists it with the entry. */
export function entryCacheJson(c: CacheCharge): Record<string, unknown> {
  return {
    input_tokens: c.inputTokens,
    cached_input_tokens: c.cachedTokens,
    cache_write_tokens: c.cacheWriteTokens,
    cache_write_1h_tokens: c.cacheWrite1hTokens,
    ...amountFields("saved", c.saved),
    miss: c.miss && {
      cause: c.miss.cause,
      missed_input_tokens: c.miss.tokens,
      ...amountFields("lost", c.miss.lost),
    },
  };
}
