/**
 * Serving HTTP on the configured host and port: the gateway's handler (`server.ts`) behind the
 * process's connection cap (see `connections.ts`), and a shutdown that drains.
 */
import type { Services } from "../context.ts";
import { errorResponse, GatewayError } from "../http/errors.ts";
import { BodyAborted } from "../http/relay_stream.ts";
import { LiveList } from "../http/live_list.ts";
import { log } from "../log.ts";
import { createHandler, type Limiter } from "../server.ts";
import { routes as defaultRoutes } from "../routes.ts";
import { connectionCounts, serveConnections } from "./connections.ts";
import { startMemoryReport } from "./memory_report.ts";

/** A running server. */
export interface RunningServer {
  /** The bound address (the real port when 0 was asked for). */
  addr: Deno.NetAddr;
  finished: Promise<void>;
  shutdown(): Promise<void>;
}

/** How the HTTP server is started. */
export interface HttpOptions {
  /** Another serving thread listens on the same port (`SO_REUSEPORT`). */
  reusePort?: boolean;
  /** The port to bind instead of the configured one (the one the first thread got). */
  port?: number;
  limiter?: Limiter;
  /** The process's connection counts its threads share (see `serve/connections.ts`). */
  connections?: SharedArrayBuffer;
}

/**
 * Serves on the configured host and port, each connection within the header deadline and the
 * process's connection cap (see `serve/connections.ts`). Shutdown drains: no new connections,
 * calls in flight finish, and streams still open after `drainTimeoutMs` are cut (ended with the
 * protocol's error event, billed for what was relayed).
 */
export function startHttp(services: Services, options: HttpOptions = {}): RunningServer {
  services.live ??= new LiveList();
  const live = services.live;
  const handler = createHandler(services, defaultRoutes, options.limiter);
  const server = serveConnections({
    hostname: services.config.host,
    port: options.port ?? services.config.port,
    reusePort: options.reusePort,
    limits: () => services.config,
    counts: options.connections ?? connectionCounts(),
    keepUpgrades: services.config.webSockets,
    onError: (error) => {
      // A stream aborted on purpose after its error (logged as the stream's end): no fault here.
      if (error instanceof BodyAborted) return new Response(null, { status: 500 });
      log("error", "unhandled error", { error: String(error) });
      return errorResponse("openai", new GatewayError(500, "Internal error"));
    },
  }, handler);
  services.upgrades = server.upgrades;
  const stopReport = startMemoryReport((name) => Deno.env.get(name), services.worker ?? 0);
  return {
    addr: server.addr,
    finished: server.finished,
    shutdown: async () => {
      stopReport();
      const drained = server.shutdown();
      const timer = setTimeout(() => {
        for (const stream of live.values()) stream.cut("drain");
      }, services.config.drainTimeoutMs);
      try {
        await drained;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
