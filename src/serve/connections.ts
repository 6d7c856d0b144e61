/**
 * Serving HTTP connection by connection, so that each can be bounded: a connection whose request
 * line and headers do not arrive within `headerTimeoutMs` is closed — a new one, and a kept-alive
 * one once no request is in flight on it (Deno's HTTP server has no such deadline: a connection
 * that never sends its headers would stay open forever) — and no more than `maxConnections` are
 * open in the process at once, across its serving threads (a shared count); past it new ones are
 * closed at once, counted and logged (at most one line per `LOG_EVERY_MS`).
 *
 * The listener accepts connections itself and gives each to Deno's HTTP server
 * (`serveHttpOnConnection`, the internal function `Deno.serve` is built on, which takes an
 * `AbortSignal` that closes the connection). A Deno without it serves with `Deno.serve` instead,
 * with neither bound, and says so in one warning. So does a server asked to keep upgraded
 * connections (WebSockets, `keepUpgrades`): Deno's per-connection server closes a connection's
 * upgraded socket as soon as its HTTP exchange ends, while `Deno.serve`'s listener keeps it.
 */
import { log } from "../log.ts";
import { metrics, OPEN_CONNECTIONS, REFUSED_CONNECTIONS } from "../metrics/gateway.ts";

/** How often connections are checked against the header deadline. */
const SWEEP_MS = 250;
/** At most one log line about refused connections this often, in the whole process. */
const LOG_EVERY_MS = 5_000;
/** After an accept error other than the listener's closing (e.g. out of descriptors), a pause. */
const ACCEPT_PAUSE_MS = 100;

/** The one warning of a Deno without a per-connection server (see `serveOnConnection`). */
const NO_BOUNDS =
  "this Deno cannot serve connection by connection: the header deadline and the connection cap are off";
/** The one warning of a server that keeps upgraded connections (see `ListenOptions`). */
const UPGRADES =
  "serving WebSockets (server.webSockets): the header deadline and the connection cap are off";

/** Int32 fields of the shared counts. */
const OPEN = 0;
const REFUSED_UNLOGGED = 1;
const WARNED = 2;
/** The BigInt64 field (at byte 16) of the last refusal line's time. */
const LAST_LOG = 0;
/** The bytes of a process's shared counts (see `connectionCounts`). */
const COUNTS_BYTES = 24;

/**
 * The counts a process's serving threads share (open connections, refusals not yet logged, when
 * the last refusal line was written): make it once per process, hand it to every thread.
 */
export function connectionCounts(): SharedArrayBuffer {
  return new SharedArrayBuffer(COUNTS_BYTES);
}

/** The bounds, read afresh as they are needed (a config reload may change them). */
export interface ConnectionLimits {
  /** Longest wait for a request's line and headers, in milliseconds (0: none). */
  headerTimeoutMs: number;
  /** Open connections in the process at most (0: no cap). */
  maxConnections: number;
}

/** Where and how to listen. */
export interface ListenOptions {
  hostname: string;
  port: number;
  /** Another serving thread listens on the same port (`SO_REUSEPORT`). */
  reusePort?: boolean;
  limits: () => ConnectionLimits;
  /** The process's shared counts (see `connectionCounts`). */
  counts: SharedArrayBuffer;
  /** The answer to a request whose handler threw. */
  onError: (error: unknown) => Response | Promise<Response>;
  /**
   * Keep upgraded connections (WebSockets): served by `Deno.serve`'s listener, without the
   * header deadline and the connection cap (see the module's doc).
   */
  keepUpgrades?: boolean;
}

/** A listening server: as `Deno.HttpServer`, what the gateway uses of it. */
export interface Listening {
  /** The bound address (the real port when 0 was asked for). */
  addr: Deno.NetAddr;
  /** Settles once the server has stopped and every connection has closed. */
  finished: Promise<void>;
  /** Stops accepting, lets requests in flight finish, closes idle connections. */
  shutdown(): Promise<void>;
  /** Whether an upgraded connection (a WebSocket) outlives its HTTP exchange on this server. */
  upgrades: boolean;
}

/** One connection's HTTP server, as `serveHttpOnConnection` returns it. */
interface ConnectionServer {
  finished: Promise<void>;
  shutdown(): Promise<void>;
}

type ServeOnConnection = (
  conn: Deno.Conn,
  signal: AbortSignal,
  handler: (req: Request, info: Deno.ServeHandlerInfo) => Response | Promise<Response>,
  onError: (error: unknown) => Response | Promise<Response>,
  onListen: (scheme: string) => void,
) => ConnectionServer;

/** Deno's per-connection HTTP server, or undefined when this Deno has none. */
function serveOnConnection(): ServeOnConnection | undefined {
  const deno = Deno as unknown as Record<symbol, Record<string, unknown> | undefined> & {
    internal?: symbol;
  };
  const internal = deno.internal === undefined ? undefined : deno[deno.internal];
  const serve = internal?.serveHttpOnConnection;
  return typeof serve === "function" ? serve as ServeOnConnection : undefined;
}

/** A connection being served. */
interface Tracked {
  server: ConnectionServer;
  abort: AbortController;
  /** Requests whose handler has been called and whose response is not fully sent. */
  inFlight: number;
  /** Since when no request has been in flight (`Date.now()`). */
  idleSince: number;
}

/**
 * Listens and serves `handler` on every connection, within the bounds of `options.limits`;
 * falls back to `Deno.serve` (no bounds, one warning) where Deno has no per-connection server.
 */
export function serveConnections(
  options: ListenOptions,
  handler: (req: Request, info: Deno.ServeHandlerInfo) => Response | Promise<Response>,
): Listening {
  const counts = new Int32Array(options.counts, 0, 4);
  const serveOn = options.keepUpgrades ? undefined : serveOnConnection();
  if (!serveOn) {
    if (Atomics.compareExchange(counts, WARNED, 0, 1) === 0) {
      log("warn", options.keepUpgrades ? UPGRADES : NO_BOUNDS, { deno: Deno.version.deno });
    }
    const server = Deno.serve({
      hostname: options.hostname,
      port: options.port,
      reusePort: options.reusePort,
      onListen: () => {},
      onError: options.onError,
    }, handler);
    return {
      addr: server.addr,
      finished: server.finished,
      shutdown: () => server.shutdown(),
      upgrades: true,
    };
  }
  const listener = Deno.listen({
    hostname: options.hostname,
    port: options.port,
    reusePort: options.reusePort,
  });
  const refusals = new RefusalLog(options.counts);
  const open = new Set<Tracked>();
  metrics.add(OPEN_CONNECTIONS, [], 0);
  metrics.add(REFUSED_CONNECTIONS, [], 0);
  let closing = false;
  let acceptErrorLogged = 0;

  const serve = (conn: Deno.Conn) => {
    const tracked: Tracked = {
      server: undefined as unknown as ConnectionServer,
      abort: new AbortController(),
      inFlight: 0,
      idleSince: Date.now(),
    };
    const settled = () => {
      if (--tracked.inFlight === 0) tracked.idleSince = Date.now();
    };
    tracked.server = serveOn(
      conn,
      tracked.abort.signal,
      (req, info) => {
        tracked.inFlight++;
        // Without `completed` (another Deno), the request is taken to stay in flight: never cut.
        info.completed?.then(settled, settled);
        return handler(req, info);
      },
      options.onError,
      () => {},
    );
    open.add(tracked);
    metrics.add(OPEN_CONNECTIONS, [], 1);
    const closed = () => {
      open.delete(tracked);
      Atomics.sub(counts, OPEN, 1);
      metrics.add(OPEN_CONNECTIONS, [], -1);
    };
    tracked.server.finished.then(closed, closed);
  };

  const accepting = (async () => {
    while (true) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch (error) {
        if (closing || error instanceof Deno.errors.BadResource) return;
        if (error instanceof Deno.errors.Interrupted) return;
        if (Date.now() - acceptErrorLogged >= LOG_EVERY_MS) {
          acceptErrorLogged = Date.now();
          log("error", "accepting a connection failed", { error: String(error) });
        }
        await new Promise((resolve) => setTimeout(resolve, ACCEPT_PAUSE_MS));
        continue;
      }
      // Counted whether capped or not, so that a reload that sets a cap finds the count right.
      const max = options.limits().maxConnections;
      const before = Atomics.add(counts, OPEN, 1);
      if (max > 0 && before >= max) {
        Atomics.sub(counts, OPEN, 1);
        conn.close();
        metrics.add(REFUSED_CONNECTIONS, []);
        refusals.refused(max);
        continue;
      }
      try {
        serve(conn);
      } catch (error) {
        Atomics.sub(counts, OPEN, 1);
        log("error", "serving a connection failed", { error: String(error) });
        try {
          conn.close();
        } catch { /* already closed */ }
      }
    }
  })();

  const sweep = setInterval(() => {
    const timeout = options.limits().headerTimeoutMs;
    if (timeout <= 0) return;
    const before = Date.now() - timeout;
    for (const tracked of open) {
      if (tracked.inFlight === 0 && tracked.idleSince < before) tracked.abort.abort();
    }
  }, SWEEP_MS);
  Deno.unrefTimer(sweep);

  const finished = accepting.then(async () => {
    await Promise.allSettled([...open].map((tracked) => tracked.server.finished));
  }).finally(() => {
    clearInterval(sweep);
    refusals.stop();
  });

  return {
    addr: listener.addr as Deno.NetAddr,
    upgrades: false,
    finished,
    shutdown: async () => {
      closing = true;
      try {
        listener.close();
      } catch { /* already closed */ }
      await accepting;
      await Promise.allSettled([...open].map((tracked) => tracked.server.shutdown()));
      await finished;
    },
  };
}

/**
 * The log of refused connections: at most one line per `LOG_EVERY_MS` in the whole process (the
 * threads share when the last was written), with how many were refused since the last one; a
 * refusal that comes too soon after a line is told in the next, at the latest `LOG_EVERY_MS` later.
 */
class RefusalLog {
  readonly #ints: Int32Array;
  readonly #times: BigInt64Array;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #max = 0;

  constructor(buffer: SharedArrayBuffer) {
    this.#ints = new Int32Array(buffer, 0, 4);
    this.#times = new BigInt64Array(buffer, 16, 1);
  }

  /** Counts one refused connection (the cap was `max`) and logs if it is time. */
  refused(max: number): void {
    this.#max = max;
    Atomics.add(this.#ints, REFUSED_UNLOGGED, 1);
    this.#flush();
  }

  #flush(): void {
    if (Atomics.load(this.#ints, REFUSED_UNLOGGED) === 0) return;
    const now = Date.now();
    const last = Atomics.load(this.#times, LAST_LOG);
    const wait = Number(last) + LOG_EVERY_MS - now;
    if (wait > 0) {
      // Too soon: this thread tells them later, unless another thread does first.
      if (this.#timer === undefined) {
        this.#timer = setTimeout(() => {
          this.#timer = undefined;
          this.#flush();
        }, wait);
        Deno.unrefTimer(this.#timer);
      }
      return;
    }
    if (Atomics.compareExchange(this.#times, LAST_LOG, last, BigInt(now)) !== last) return;
    const refused = Atomics.exchange(this.#ints, REFUSED_UNLOGGED, 0);
    if (refused > 0) {
      log("warn", "connection limit reached: new connections are closed", {
        refused,
        max_connections: this.#max,
      });
    }
  }

  /** Drops the pending line's timer (the server has stopped). */
  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
