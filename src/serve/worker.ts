/**
 * One serving thread of `serve --workers N` (see `workers.ts`): the process's config, its own
 * connection to the store, and `Deno.serve` on the port the threads share. Requests per minute
 * are counted by the main thread, so a key's limit holds for the process as a whole.
 */
import { type RateDecision, UNLIMITED } from "../auth/ratelimit.ts";
import { loadConfig } from "../config/load.ts";
import { flushLog } from "../log.ts";
import type { Limiter } from "../server.ts";
import { type RunningServer, startHttp } from "./http.ts";
import { openStore } from "../store/open.ts";
import { drainServer } from "./drain.ts";
import type { ToMain, ToWorker } from "./messages.ts";
import type { LiveStream } from "../http/relay_stream.ts";
import { LiveList } from "../http/live_list.ts";
import { observeCommit, shareMetricBounds, snapshot } from "../metrics/gateway.ts";
import type { Services } from "../context.ts";
import { Board } from "../routing/board.ts";
import { reloadConfig } from "./reload.ts";
import type { ConfigSource } from "./workers.ts";
import type { Samples } from "../metrics/registry.ts";
import { listenForSpending } from "../billing/spend_notes.ts";

const scope = self as unknown as {
  postMessage(message: ToMain): void;
  onmessage: ((event: MessageEvent<ToWorker>) => void) | null;
  close(): void;
};

/** This thread's streams in flight. */
const live = new LiveList<LiveStream>();
/**
 * The rate decisions awaited from the main thread, by slot (the message's id): an array and its
 * free slots, not a `Map` — one that gains and loses an entry with every request keeps requests'
 * objects alive past their end (see `http/live_list.ts`).
 */
const decisions: (((decision: RateDecision) => void) | undefined)[] = [];
const freeSlots: number[] = [];

/** Asks the main thread; an unlimited key needs no question. */
const limiter: Limiter = {
  check(key, limit) {
    if (limit <= 0) return UNLIMITED;
    return new Promise((resolve) => {
      const id = freeSlots.pop() ?? decisions.length;
      decisions[id] = resolve;
      scope.postMessage({ type: "rpm", id, key, limit });
    });
  },
};

const gathered = new Map<number, (parts: Record<string, Samples>[]) => void>();
let gathers = 0;

/** Every thread's metrics, gathered by the main thread. */
function collectMetrics(): Promise<Record<string, Samples>[]> {
  return new Promise((resolve) => {
    const id = ++gathers;
    gathered.set(id, resolve);
    scope.postMessage({ type: "metrics", id });
  });
}

let server: RunningServer | undefined;
let services: Services | undefined;
let source: ConfigSource | undefined;

scope.onmessage = async ({ data }) => {
  if (data.type === "rpm") {
    const resolve = decisions[data.id];
    if (!resolve) return;
    decisions[data.id] = undefined;
    freeSlots.push(data.id);
    resolve(data.decision);
  } else if (data.type === "reload") {
    if (!source || !services) return;
    const next = await reloadConfig(services.config, source, data.read);
    // The main thread put refused keys back in (see `restoreKeys`) before telling the threads.
    if (next) services.config = next.config;
  } else if (data.type === "snapshot") {
    scope.postMessage({ type: "snapshot", id: data.id, samples: snapshot(live.size) });
  } else if (data.type === "metrics") {
    gathered.get(data.id)?.(data.parts);
    gathered.delete(data.id);
  } else if (data.type === "start") {
    const config = await loadConfig(
      data.configFile,
      (name) => Deno.env.get(name),
      data.overrides,
    );
    const store = await openStore(config, {
      owner: true,
      writeLock: data.shared,
      thread: data.index,
      onCommit: observeCommit,
    });
    source = { configFile: data.configFile, overrides: data.overrides };
    services = {
      config,
      store,
      worker: data.index,
      live,
      collectMetrics,
      board: new Board(data.routing),
      metricBounds: data.metricBounds,
    };
    shareMetricBounds(services);
    // The main thread runs the alerts: it hears who spent here.
    listenForSpending((notes) => scope.postMessage({ type: "spent", notes }));
    server = startHttp(services, {
      reusePort: true,
      port: data.port,
      limiter,
      connections: data.connections,
    });
    scope.postMessage({ type: "listening", port: server.addr.port });
  } else if (data.type === "stop") {
    if (server && services) await drainServer(server, services.config);
    flushLog();
    await services?.store.close();
    scope.postMessage({ type: "stopped" });
    scope.close();
  }
};
