/**
 * `serve --workers N` with N > 1: N serving threads (Web Workers, see `worker.ts`) listen on one
 * port (`SO_REUSEPORT`, the kernel spreads connections), each with its own connection to the
 * store; the store's transactions keep holds and settlements exact across them. The main thread
 * keeps what must exist once per process: the rate limiter every thread asks (so a key's limit is
 * the key's, not the thread's), startup recovery (done by the caller), and the background work
 * (video poller, pruning, recovery of dead processes' calls, alerts — which hear from the threads
 * who spent).
 */
import { RateLimiter } from "../auth/ratelimit.ts";
import type { Config, ConfigRead, Overrides } from "../config/load.ts";
import { boardOf, type Services } from "../context.ts";
import { flushLog, log } from "../log.ts";
import { prepareStore, startBackground } from "./background.ts";
import type { ToMain, ToWorker } from "./messages.ts";
import { shareMetricBounds, snapshot } from "../metrics/gateway.ts";
import { connectionCounts } from "./connections.ts";
import type { Samples } from "../metrics/registry.ts";
import { passNotes } from "../billing/spend_notes.ts";
import { takeEarlyThread, whyNoThreads, WORKER_MODULE } from "./early_thread.ts";

/** A running set of serving threads. */
export interface WorkerPool {
  /** The port they share (the real one when 0 was asked for). */
  port: number;
  /** Drains every thread and stops the background work; resolves once all have stopped. */
  stop(): Promise<void>;
  /** Gives every thread the config file as the main thread read it and found it valid. */
  reload(read: ConfigRead): void;
}

/** How long a scrape waits for the threads' metrics. */
const GATHER_MS = 2000;

/** A scrape gathering the threads' metrics. */
interface Gathering {
  parts: Record<string, Samples>[];
  waiting: number;
  done: (parts: Record<string, Samples>[]) => void;
}

/** Serving threads cannot run in this process (a permission or a flag is missing). */
export class ThreadsUnavailable extends Error {
  override name = "ThreadsUnavailable";
}

/**
 * Throws `Deno.errors.AddrInUse` when something already listens on the port, as a single thread
 * would: threads bind with `SO_REUSEPORT`, which would let them share the port with another
 * process that does too (a second gateway started by mistake) instead of failing.
 */
function ensurePortFree(hostname: string, port: number): void {
  Deno.listen({ hostname, port }).close();
}

/** Where the config of the serving threads comes from: what the main thread loaded it from. */
export interface ConfigSource {
  configFile?: string;
  overrides: Overrides;
}

/**
 * Starts `config.workers` serving threads and the background work. A thread that fails later
 * stops the process (exit code 1), so that its supervisor restarts it whole. Rejects with
 * `ThreadsUnavailable` when threads cannot run here (the caller may serve on one thread instead),
 * with `Deno.errors.AddrInUse` when the port is taken; threads already started are stopped.
 */
export async function startWorkers(
  services: Services & { config: Config },
  source: ConfigSource,
): Promise<WorkerPool> {
  const { config } = services;
  const missing = whyNoThreads();
  if (missing) throw new ThreadsUnavailable(missing);
  if (config.port !== 0) ensurePortFree(config.host, config.port);
  const limiter = new RateLimiter();
  const shared = prepareStore(services, true);
  if (!services.metricBounds) shareMetricBounds(services);
  // One count of open connections for the process, whichever thread accepted them.
  const connections = connectionCounts();
  const threads: { worker: Worker; stopped: PromiseWithResolvers<void> }[] = [];
  const gathering = new Map<number, Gathering>();
  let gathers = 0;
  /** Every thread's metrics and this one's (the background work's). */
  const gather = (): Promise<Record<string, Samples>[]> => {
    const id = ++gathers;
    const done = Promise.withResolvers<Record<string, Samples>[]>();
    const entry: Gathering = { parts: [snapshot(0)], waiting: threads.length, done: done.resolve };
    gathering.set(id, entry);
    // A thread that does not answer (stuck, stopping) leaves its values out rather than the scrape.
    const late = setTimeout(() => finishGathering(id), GATHER_MS);
    done.promise.finally(() => clearTimeout(late));
    for (const { worker } of threads) worker.postMessage({ type: "snapshot", id } as ToWorker);
    if (!threads.length) finishGathering(id);
    return done.promise;
  };
  const finishGathering = (id: number) => {
    const entry = gathering.get(id);
    if (!entry) return;
    gathering.delete(id);
    entry.done(entry.parts);
  };
  services.collectMetrics = gather;
  const start = (index: number, port: number): Promise<number> => {
    // The first thread may have been started with the process (`early_thread.ts`).
    const early = index === 0 ? takeEarlyThread() : undefined;
    const worker = early?.worker ?? new Worker(WORKER_MODULE.href, { type: "module" });
    if (early?.failure) {
      worker.terminate();
      return Promise.reject(new ThreadsUnavailable(early.failure));
    }
    const listening = Promise.withResolvers<number>();
    const stopped = Promise.withResolvers<void>();
    const send = (message: ToWorker) => worker.postMessage(message);
    worker.onmessage = ({ data }: MessageEvent<ToMain>) => {
      if (data.type === "rpm") {
        send({ type: "rpm", id: data.id, decision: limiter.check(data.key, data.limit) });
      } else if (data.type === "metrics") {
        gather().then((parts) => send({ type: "metrics", id: data.id, parts }));
      } else if (data.type === "snapshot") {
        const entry = gathering.get(data.id);
        if (entry) {
          entry.parts.push(data.samples);
          if (--entry.waiting === 0) finishGathering(data.id);
        }
      } else if (data.type === "spent") passNotes(data.notes);
      else if (data.type === "listening") listening.resolve(data.port);
      else if (data.type === "stopped") stopped.resolve();
    };
    let started = false;
    listening.promise.then(() => started = true, () => {});
    worker.onerror = (event) => {
      event.preventDefault();
      if (!started) {
        worker.terminate();
        listening.reject(new ThreadsUnavailable(event.message));
        return;
      }
      log("error", "a serving thread failed: stopping", { worker: index, error: event.message });
      flushLog();
      Deno.exit(1);
    };
    threads.push({ worker, stopped });
    send({
      type: "start",
      index,
      ...source,
      port,
      shared,
      routing: boardOf(services).buffer,
      metricBounds: services.metricBounds!,
      connections,
    });
    return listening.promise;
  };
  // The first thread binds the port (a free one when 0 is asked for); the others join it.
  let port: number;
  try {
    port = await start(0, config.port);
    await Promise.all(Array.from({ length: config.workers - 1 }, (_, i) => start(i + 1, port)));
  } catch (error) {
    for (const { worker } of threads) worker.terminate();
    throw error;
  }
  const background = startBackground(services);
  return {
    port,
    reload: (read) => {
      for (const { worker } of threads) {
        worker.postMessage({ type: "reload", read } satisfies ToWorker);
      }
    },
    stop: async () => {
      background.stop();
      for (const { worker } of threads) worker.postMessage({ type: "stop" } satisfies ToWorker);
      await Promise.all(threads.map(({ stopped }) => stopped.promise));
    },
  };
}
