/** What a route handler receives: the request, who is calling, and the shared services. */
import type { Principal } from "./auth/authenticate.ts";
import type { Config } from "./config/load.ts";
import type { Store } from "./store/store.ts";
import type { LiveStream } from "./http/relay_stream.ts";
import type { LiveList } from "./http/live_list.ts";
import type { Samples } from "./metrics/registry.ts";
import type { CallSpan } from "./metrics/trace.ts";
import { Board } from "./routing/board.ts";
import { CallRoute } from "./routing/attempts.ts";
import type { StoredResponse, UpstreamObject } from "./store/store.ts";
import type { SocketSender } from "./providers/transport.ts";
import type { Message } from "./translate/ir.ts";

/** The stored state a request names, as the store holds it (see `pipeline/resolve.ts`). */
export interface NamedState {
  /** The upstream objects found, by id. */
  objects: Map<string, UpstreamObject>;
  /** The kept answers of the conversation `previous_response_id` continues, by id. */
  steps: Map<string, StoredResponse>;
}

/** Long-lived services shared by every request. */
export interface Services {
  config: Config;
  store: Store;
  /** Streams in flight, which a draining server cuts once its drain time is over. */
  live?: LiveList<LiveStream>;
  /** This serving thread's number when there are several (named in the access log). */
  worker?: number;
  /** Every thread's metrics (see `metrics/gateway.ts`); absent: this thread's alone. */
  collectMetrics?: () => Promise<Record<string, Samples>[]>;
  /** The routing state the process's threads share (see `routing/board.ts`). */
  board?: Board;
  /** The metrics' bounds the process's threads share (see `shareMetricBounds`). */
  metricBounds?: SharedArrayBuffer;
  /**
   * Whether this thread's server keeps upgraded connections, so WebSockets can be served (see
   * `serve/connections.ts`); absent: it does not.
   */
  upgrades?: boolean;
}

/** The services' routing board, made on first use when none was given. */
export function boardOf(services: Services): Board {
  return services.board ??= new Board();
}

/** The routing of a request's model call (attempts, what served it), made on first use. */
export function callRoute(ctx: RequestContext): CallRoute {
  return ctx.route ??= new CallRoute(ctx.services.config.routing, boardOf(ctx.services));
}

/** What a request opened that must end with it (see `pipeline/hold.ts`). */
export interface RequestScope {
  /** Ends it; `failed`: the client is told the request failed. Never throws. */
  close(failed: boolean): Promise<void>;
}

/**
 * What the turns of one client WebSocket share (see `pipeline/responses_socket.ts`): the
 * connection-local state a `previous_response_id` may name besides the store's.
 */
export interface SocketState {
  /** The connection's upstream WebSockets (OpenAI's and xAI's WebSocket mode). */
  upstream: SocketSender;
  /**
   * Upstream responses made on this connection that the store does not record (`store: false`:
   * the upstream keeps the last one on its socket), by id: the caller's, as recorded ones are.
   */
  objects: Map<string, UpstreamObject>;
  /**
   * The last answer of a translated turn, kept on the connection whatever `store` says: its id,
   * and its whole conversation (the messages before it, its request's and its answer).
   */
  last?: { id: string; messages: Message[]; bytes: number };
}

/** One request as its handler sees it: what was asked, by whom, and what it has opened. */
export interface RequestContext {
  req: Request;
  url: URL;
  params: Record<string, string>;
  requestId: string;
  /** Null only on routes with `auth: "none"`. */
  principal: Principal | null;
  services: Services;
  /** Extra fields for this request's access-log line (model, provider…). */
  log: Record<string, unknown>;
  /** The model call's trace span when tracing is on (see `metrics/trace.ts`). */
  trace?: CallSpan | null;
  /** The model call's attempts at its upstreams (see `callRoute`). */
  route?: CallRoute;
  /** Now, ms since the epoch: the request's clock (a test may set it, see `test_hooks.ts`). */
  now(): number;
  /** Headers its response carries besides the server's own (the key's token limits). */
  headers?: Record<string, string>;
  /** Its holds and upstream requests, made on first use (see `pipeline/hold.ts`). */
  scope?: RequestScope;
  /** The stored state the request names (see `pipeline/resolve.ts`). */
  named?: NamedState;
  /** A turn of a client WebSocket: the connection's state (see `SocketState`). */
  socket?: SocketState;
  /**
   * The server's own handler, for the requests a handler makes of it: a WebSocket's turns, each
   * handled as the `POST` it stands for (authenticated, counted, routed, held and settled as one),
   * with the connection's state.
   */
  serve?: (req: Request, socket: SocketState) => Promise<Response>;
}

/** A route's handler. Throws `GatewayError` for anything the client should see as an error. */
export type Handler = (ctx: RequestContext) => Response | Promise<Response>;
