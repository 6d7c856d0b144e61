/**
 * The gateway's metrics (see Metrics in docs/operations.md): what each thread records, and the
 * families `/metrics` writes. Each thread keeps its own values (`metrics.samples`); a scrape adds
 * up every thread's (see `collectMetrics` in `Services`).
 */
import {
  counter,
  type Family,
  FOLDED,
  gauge,
  histogram,
  type LabelCap,
  merge,
  Registry,
  render,
  type Samples,
} from "./registry.ts";
import type { CacheCharge } from "../store/store.ts";
import type { Config } from "../config/load.ts";
import { DEFAULT_METRICS_MODELS } from "../config/schema.ts";
import { RECENT_FAMILIES, RecentCalls } from "./recent.ts";
import { heldForSockets } from "../http/held_bytes.ts";

/** Seconds: from a millisecond up to two minutes (long streams land in +Inf). */
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** Seconds for store commits: from 50 µs up. */
const COMMIT_SECONDS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25];

export const REQUESTS: Family = counter(
  "switchyard_requests_total",
  "Requests answered, by route, client protocol, model, provider and HTTP status.",
  ["route", "protocol", "model", "provider", "status"],
);
export const UPSTREAM_SECONDS: Family = histogram(
  "switchyard_upstream_duration_seconds",
  "Upstream calls from sending the request to the end of the answer (streams: their end).",
  ["provider", "model"],
  SECONDS,
);
export const UPSTREAM_TTFB: Family = histogram(
  "switchyard_upstream_ttfb_seconds",
  "Upstream calls from sending the request to the answer's headers.",
  ["provider", "model"],
  SECONDS,
);
export const UPSTREAM_ERRORS: Family = counter(
  "switchyard_upstream_errors_total",
  "Upstream answers that were not 2xx, and calls that got no answer (status 0).",
  ["provider", "status"],
);
export const UPSTREAM_RETRIES: Family = counter(
  "switchyard_upstream_retries_total",
  "Failed attempts that moved a call on to another key, deployment or model, by provider and reason.",
  ["provider", "reason"],
);
export const AFFINITY_MOVES: Family = counter(
  "switchyard_cache_affinity_moves_total",
  "Conversations a call moved off the deployment and key holding their prompt cache (a circuit, resting keys, limits or a failure), by the deployment they left.",
  ["deployment"],
);
export const CIRCUITS: Family = gauge(
  "switchyard_deployment_circuit_open",
  "1 when a deployment's circuit is open or half-open (calls pass it over), else 0.",
  ["deployment"],
);
export const TOKENS: Family = counter(
  "switchyard_tokens_total",
  "Tokens charged, by model, account and kind (input, cached_input, cache_write, output).",
  ["model", "account", "kind"],
);
export const SPEND: Family = counter(
  "switchyard_spend_nanousd_total",
  "Amount charged in nanoUSD (1e-9 USD), by model and account.",
  ["model", "account"],
);
export const CACHE_TOKENS: Family = counter(
  "switchyard_cache_input_tokens_total",
  "Input tokens charged, by model and how the prompt cache served them (read, write_5m, write_1h, uncached).",
  ["model", "cache"],
);
export const CACHE_SAVED: Family = counter(
  "switchyard_cache_saved_nanousd_total",
  "What prompt-cache reads saved in nanoUSD: the tokens read at the input rate minus what they cost, by model.",
  ["model"],
);
export const CACHE_LOST: Family = counter(
  "switchyard_cache_lost_nanousd_total",
  "Estimated nanoUSD lost to prompt-cache misses the gateway caused, by model and cause.",
  ["model", "cause"],
);
export const RATE_LIMITED: Family = counter(
  "switchyard_rate_limited_total",
  "Requests refused with 429 by a key's requests-per-minute limit, by route.",
  ["route"],
);
export const REFUSED: Family = counter(
  "switchyard_refused_total",
  "Requests the gateway itself refused (4xx it raised, not an upstream's), by route and status.",
  ["route", "status"],
);
export const ADAPTED_CALLS: Family = counter(
  "switchyard_adapted_calls_total",
  "Translated calls answered with an adaptation, by kind (see x-switchyard-adapted).",
  ["kind"],
);
export const OPEN_STREAMS: Family = gauge("switchyard_open_streams", "Streams being relayed now.");
export const WEBSOCKET_QUEUED: Family = gauge(
  "switchyard_websocket_queued_bytes",
  "Bytes held for WebSocket clients that read slower than their answers arrive, as last seen " +
    "(server.webSocketQueueBytes bounds each serving thread's).",
);
export const OPEN_CONNECTIONS: Family = gauge(
  "switchyard_open_connections",
  "Client connections open now (capped by server.maxConnections).",
);
export const REFUSED_CONNECTIONS: Family = counter(
  "switchyard_connections_refused_total",
  "Client connections closed at once because server.maxConnections were open.",
);
export const HOLDS: Family = gauge(
  "switchyard_holds_outstanding",
  "Calls holding funds now (held ledger entries in the store, every process's).",
);
export const COMMIT_SECONDS_FAMILY: Family = histogram(
  "switchyard_store_commit_seconds",
  "Store write transactions (a turn's group commit), from begin to commit.",
  [],
  COMMIT_SECONDS,
);

/** Every family, in the order `/metrics` writes them. */
export const FAMILIES: readonly Family[] = [
  REQUESTS,
  RATE_LIMITED,
  REFUSED,
  ADAPTED_CALLS,
  UPSTREAM_TTFB,
  UPSTREAM_SECONDS,
  UPSTREAM_ERRORS,
  UPSTREAM_RETRIES,
  AFFINITY_MOVES,
  CIRCUITS,
  TOKENS,
  SPEND,
  CACHE_TOKENS,
  CACHE_SAVED,
  CACHE_LOST,
  OPEN_STREAMS,
  WEBSOCKET_QUEUED,
  OPEN_CONNECTIONS,
  REFUSED_CONNECTIONS,
  HOLDS,
  COMMIT_SECONDS_FAMILY,
  FOLDED,
];

/**
 * Distinct account names the metrics keep (`switchyard_tokens_total`, `_spend_`): accounts are
 * the operator's, not a client's, but may be many; past these, per-account figures are in the
 * ledger (`/v1/usage`, `accounts list`), and the metrics count them under `other`.
 */
export const MAX_ACCOUNTS = 1000;

/**
 * The caps on client-chosen label values: model ids (other than the catalog's own, and "": no
 * model) at most `models`, accounts at most `MAX_ACCOUNTS`.
 */
function labelCaps(models: number, catalogId: (id: string) => boolean = () => false): LabelCap[] {
  return [
    { label: "model", max: models, pinned: (id) => id === "" || catalogId(id) },
    { label: "account", max: MAX_ACCOUNTS },
  ];
}

/** This thread's values (with the recent window `/readyz` reads, which `/metrics` leaves out). */
export const metrics = new Registry(
  [...FAMILIES, ...RECENT_FAMILIES],
  labelCaps(DEFAULT_METRICS_MODELS),
);

/**
 * Bounds this thread's metrics as the config says (`server.metricsModels`; the current catalog's
 * exact ids are always kept), over the bounds every thread of the process shares:
 * `services.metricBounds`, made by the first call when absent (the main thread's, which hands it
 * to the serving threads). Called once per thread, before it serves.
 */
export function shareMetricBounds(services: {
  config: Pick<Config, "metricsModels" | "catalog">;
  metricBounds?: SharedArrayBuffer;
}): void {
  const caps = labelCaps(
    services.config.metricsModels,
    (id) => services.config.catalog.isExact(id),
  );
  services.metricBounds = metrics.share(caps, services.metricBounds);
}

/** Counts one store commit that took `seconds` (see `OpenOptions.onCommit` in `store/open.ts`). */
export function observeCommit(seconds: number): void {
  metrics.observe(COMMIT_SECONDS_FAMILY, [], seconds);
}

/** This thread's upstream outcomes of the last minutes, by provider (see `recent.ts`). */
export const recentCalls = new RecentCalls(metrics);

/** The token counts of a charge that the metrics count (a billing `Usage` has them). */
export interface ChargedTokens {
  inputTokens: number;
  cachedInputTokens: number;
  cacheWriteTokens: number;
  cacheWrite1hTokens: number;
  outputTokens: number;
}

/**
 * Counts a settled charge: its tokens by kind and its amount, and with its cache figures its input
 * tokens by how the prompt cache served them, what reads saved and what a miss lost.
 */
export function recordCharge(
  model: string,
  account: string,
  usage: ChargedTokens,
  amount: number,
  cache?: CacheCharge,
): void {
  const kinds: [string, number][] = [
    ["input", usage.inputTokens],
    ["cached_input", usage.cachedInputTokens],
    ["cache_write", usage.cacheWriteTokens + usage.cacheWrite1hTokens],
    ["output", usage.outputTokens],
  ];
  for (const [kind, n] of kinds) if (n > 0) metrics.add(TOKENS, [model, account, kind], n);
  metrics.add(SPEND, [model, account], amount);
  if (!cache) return;
  const uncached = cache.inputTokens - cache.cachedTokens - cache.cacheWriteTokens -
    cache.cacheWrite1hTokens;
  const served: [string, number][] = [
    ["read", cache.cachedTokens],
    ["write_5m", cache.cacheWriteTokens],
    ["write_1h", cache.cacheWrite1hTokens],
    ["uncached", uncached],
  ];
  for (const [how, n] of served) if (n > 0) metrics.add(CACHE_TOKENS, [model, how], n);
  if (cache.saved > 0) metrics.add(CACHE_SAVED, [model], cache.saved);
  if (cache.miss) metrics.add(CACHE_LOST, [model, cache.miss.cause], cache.miss.lost);
}

/** This thread's values as plain data, with its gauges as they are now. */
export function snapshot(openStreams: number): Record<string, Samples> {
  heldForSockets.refresh(); // queues its clients have read from since they were looked at
  return {
    ...metrics.samples,
    [OPEN_STREAMS.name]: { "": openStreams },
    [WEBSOCKET_QUEUED.name]: { "": heldForSockets.total },
  };
}

/**
 * Every serving thread's snapshot (gathered by the main thread, see `serve/workers.ts`), or this
 * thread's alone when it serves by itself.
 */
export async function everyThread(services: {
  collectMetrics?: () => Promise<Record<string, Samples>[]>;
  /** This thread's streams in flight. */
  live?: { readonly size: number };
}): Promise<Record<string, Samples>[]> {
  return services.collectMetrics
    ? await services.collectMetrics()
    : [snapshot(services.live?.size ?? 0)];
}

/**
 * The exposition text of several threads' snapshots, with the store's gauge and the circuits'
 * (shared by the threads, so read once: 1 when not closed, by deployment).
 */
export function exposition(
  parts: readonly Record<string, Samples>[],
  holds: number,
  circuits: Record<string, number> = {},
): string {
  const all = merge(parts);
  all[HOLDS.name] = { "": holds };
  all[CIRCUITS.name] = { ...circuits }; // one label: the key is the deployment's name
  return render(FAMILIES, all);
}
