/**
 * What runs once per serving process, whatever its number of serving threads: readying the store
 * for serving, and the background work — the video poller, pruning, recovery of calls held by
 * processes that died, the metrics port, memory trimming and alerts.
 */
import type { Services } from "../context.ts";
import { log } from "../log.ts";
import { startVideoPoller } from "../pipeline/video_jobs.ts";
import { recoverHolds } from "../billing/ledger.ts";
import { startAlerts } from "../alerts/watch.ts";
import { metricsPortHandler } from "../endpoints/metrics.ts";
import { startMemoryTrim } from "./memory_trim.ts";

/** How long the owner of an upstream object (a stored response) is remembered. */
const OBJECT_RETENTION_MS = 30 * 24 * 3600 * 1000;
/** How often calls held by a process that died are looked for (also done at startup). */
const RECOVERY_INTERVAL_MS = 30_000;
/** How often conversations' expired placements are pruned (a store replicas share). */
const AFFINITY_PRUNE_MS = 10 * 60_000;

/** Work that runs once per process, whatever the number of serving threads. */
export interface Background {
  stop(): void;
}

/**
 * Starts the background work: the video poller, pruning of upstream objects and kept
 * conversations (now and every 6 hours) and of conversations' expired placements (every 10
 * minutes, on a store replicas share), settling calls held by processes that died (every
 * `RECOVERY_INTERVAL_MS`; startup recovery is the caller's), and alerts (see `alerts/watch.ts`).
 */
export function startBackground(services: Services): Background {
  const { store } = services;
  const poller = startVideoPoller(services);
  const metricsPort = services.config.metricsPort;
  const metricsServer = metricsPort === null ? null : Deno.serve({
    hostname: "127.0.0.1",
    port: metricsPort,
    onListen: ({ port }) => log("info", "metrics listening", { host: "127.0.0.1", port }),
  }, (req) => metricsPortHandler(req, services));
  // Upstream objects are kept as long as providers keep stored responses (OpenAI: 30 days).
  const prune = async () => {
    try {
      if (store.leading && !(await store.leading())) return;
      await store.pruneObjects(Date.now() - OBJECT_RETENTION_MS);
      await store.pruneResponses(Date.now() - services.config.conversationRetentionMs);
      await store.pruneThreadTurns(Date.now() - services.config.conversationRetentionMs);
    } catch (error) {
      log("error", "pruning upstream objects failed", { error: String(error) });
    }
  };
  void prune();
  const pruner = setInterval(prune, 6 * 3600 * 1000);
  // Calls held by another process on this store that has since died (see `store/owners.ts`).
  const recovery = setInterval(async () => {
    try {
      if (store.leading && !(await store.leading())) return;
      const calls = await recoverHolds(store, services.config.budgetTimeZone);
      if (calls) log("warn", "settled calls left open by a process that stopped", { calls });
    } catch (error) {
      log("error", "recovering held calls failed", { error: String(error) });
    }
  }, RECOVERY_INTERVAL_MS);
  // Conversations' placements expire within the hour (see `pipeline/affinity.ts`).
  const affinityPruner = store.pruneAffinity && setInterval(async () => {
    try {
      if (store.leading && !(await store.leading())) return;
      await store.pruneAffinity!(Date.now());
    } catch (error) {
      log("warn", "pruning conversations' placements failed", { error: String(error) });
    }
  }, AFFINITY_PRUNE_MS);
  const trimmer = startMemoryTrim();
  const alerts = startAlerts(services);
  return {
    stop: () => {
      alerts.stop();
      trimmer.stop();
      poller.stop();
      void metricsServer?.shutdown();
      clearInterval(pruner);
      clearInterval(affinityPruner);
      clearInterval(recovery);
    },
  };
}

/**
 * Readies the store for serving, once per process (see `Store.prepareForServing`), by `shared`
 * serving threads or by this one; returns what serving threads need to share it.
 */
export function prepareStore(services: Services, shared: boolean): SharedArrayBuffer | undefined {
  return services.store.prepareForServing?.({
    shared,
    onError: (error) =>
      log("warn", "the store's checkpoints failed: commits checkpoint the log themselves", {
        error,
      }),
  });
}
