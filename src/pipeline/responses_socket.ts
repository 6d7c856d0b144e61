/**
 * The Responses API over WebSocket (OpenAI's "WebSocket mode"): `GET /v1/responses` upgraded,
 * then `response.create` messages from the client — a `POST /v1/responses` body with `type`, and
 * without `stream` (it is implied) — and each turn's stream events sent back as messages, one JSON
 * event a message, in order; the next turn waits for the one before (one turn at a time).
 *
 * Every turn is handled as the streamed `POST /v1/responses` it stands for, by the server's own
 * handler (`ctx.serve`): authenticated with the upgrade's credentials (a key revoked since is
 * refused at the next turn), counted against the key's requests per minute, routed, held and
 * settled as one call — one ledger entry, one access-log line (request id: the upgrade's, then
 * `.1`, `.2`…). A turn whose client goes away mid-stream is billed for what was relayed, as a
 * hang-up is. Its upstream is the pipeline's choice: on OpenAI and xAI deployments the turn goes
 * over the connection's own upstream WebSocket (see `providers/socket.ts`), on every other family
 * it is translated as the HTTP route translates it. What a turn's `previous_response_id` may name
 * besides the store's is the connection's (see `SocketState`): the upstream responses made on it,
 * `store: false` ones too (the upstream keeps the last on its socket), and the last translated
 * answer, kept on the connection whatever `store` says.
 *
 * A turn the gateway refuses is answered with the protocol's `error` event (its HTTP status,
 * `error`, and the headers a client acts on); a stream the upstream cuts ends as it does over
 * SSE. The connection closes after `server.streamIdleTimeoutMs` without a turn, and at
 * `server.streamMaxMs` (a turn in flight first finishes; one sent later is refused with
 * `websocket_connection_limit_reached`); a server that stops closes its sockets (a turn in flight
 * is billed for what was relayed). A client that reads slower than its turn's upstream answers
 * holds the turn back: with more than `HIGH_WATER_BYTES` queued on the socket the turn stops
 * reading its upstream until the client has caught up. So does one with more than
 * `PRESSED_HIGH_WATER_BYTES` queued while the thread holds more than `server.webSocketQueueBytes`
 * for its slow clients together (see `http/held_bytes.ts`): a client that reads goes on, and the
 * clients that do not hold little more than that budget together. A client that reads nothing of
 * its queue for `server.streamIdleTimeoutMs`, or is still behind at `server.streamMaxMs`, is closed
 * (1008), its turn billed for what was relayed. Where the server cannot keep an upgraded
 * connection, or `server.webSockets` is off, the upgrade is answered 426, so clients fall back to
 * HTTP.
 */
import type { Handler, RequestContext, SocketState } from "../context.ts";
import { GatewayError } from "../http/errors.ts";
import { deadline } from "../http/deadlines.ts";
import { heldForSockets } from "../http/held_bytes.ts";
import type { LiveEntry } from "../http/live_list.ts";
import { readMessages, wantsWebSocket } from "../http/websocket.ts";
import { log } from "../log.ts";
import { UpstreamSockets } from "../providers/socket.ts";

/** Turns a connection may have waiting behind the one in flight. */
const MAX_QUEUED = 16;

/** Upstream objects (responses, their items) a connection keeps, the oldest forgotten first. */
const MAX_OBJECTS = 1_000;

/**
 * Bytes a socket may have queued for its client (Deno's `bufferedAmount`: sent, not yet taken by
 * the connection) before a turn stops reading its answer. Past it the turn waits until the client
 * has read the queue back under the mark, so the upstream is not read meanwhile and its connection
 * holds the rest back, as a slow reader holds back an SSE stream.
 */
const HIGH_WATER_BYTES = 1 << 20;

/**
 * The mark instead of `HIGH_WATER_BYTES` while the thread holds more than its budget for slow
 * WebSocket clients (`server.webSocketQueueBytes`): a client that reads still gets this much per
 * look at its queue, and 10,000 that do not hold 640 MiB more than the budget at most.
 */
const PRESSED_HIGH_WATER_BYTES = 64 << 10;

/**
 * How often a turn waiting for its client looks at the socket's queue (there is no `drain` event),
 * on the shared deadline sweep (at most every 100 ms): the mark leaves the client 1 MiB to read
 * meanwhile.
 */
const DRAIN_POLL_MS = 50;

/**
 * This thread's open sockets. The listener that serves WebSockets has no connection cap (see
 * `serve/connections.ts`): its sockets at least are held to `server.maxConnections`. A socket the
 * gateway closed counts until it has really closed — one whose client reads nothing keeps what
 * was queued for it until then — or for `CLOSING_COUNTS_MS` at most (a client that left before
 * the upgrade's answer leaves a socket that never says it closed).
 */
let openSockets = 0;

/** How long a socket the gateway closed still counts against the cap, at most. */
const CLOSING_COUNTS_MS = 60_000;

/** Headers of the upgrade that are its own, not the turns'. */
const UPGRADE_HEADERS =
  /^(connection|upgrade|host|content-length|content-type|transfer-encoding|x-request-id|sec-websocket-.*)$/i;

/** Headers of a refused turn a client acts on, carried in its error event. */
const ERROR_HEADERS = /^(retry-after|x-request-id|x-ratelimit-.*)$/i;

/** The 426 of an upgrade the gateway cannot serve (clients fall back to HTTP). */
function upgradeRequired(message: string, code: string): GatewayError {
  return new GatewayError(426, message, {
    code,
    headers: { upgrade: "websocket", connection: "Upgrade" },
  });
}

/** `GET /v1/responses`: the upgrade to the Responses API over WebSocket (see the module's doc). */
export const responsesSocket: Handler = (ctx) => {
  if (!wantsWebSocket(ctx.req)) {
    throw upgradeRequired(
      "GET /v1/responses is the Responses API over WebSocket: upgrade the connection, or POST /v1/responses.",
      "upgrade_required",
    );
  }
  const { services } = ctx;
  if (!services.config.webSockets || !services.upgrades || !ctx.serve) {
    throw upgradeRequired(
      "This gateway does not serve the Responses API over WebSocket; use POST /v1/responses.",
      "websocket_unsupported",
    );
  }
  const max = services.config.maxConnections;
  if (max > 0 && openSockets >= max) {
    throw new GatewayError(
      503,
      `This gateway has ${max} WebSocket connections open; retry shortly, or use POST /v1/responses.`,
      { code: "websocket_connection_limit_reached", headers: { "retry-after": "1" } },
    );
  }
  // The turns' headers, read before the upgrade closes its request.
  const headers = new Headers();
  for (const [name, value] of ctx.req.headers) {
    if (!UPGRADE_HEADERS.test(name)) headers.set(name, value);
  }
  headers.set("content-type", "application/json");
  const { socket, response } = Deno.upgradeWebSocket(ctx.req);
  new Session(ctx, socket, headers);
  return response;
};

/** An `error` event (the protocol's own) for a message the gateway refuses before any turn. */
function refusal(status: number, code: string, message: string, param: string | null = null) {
  const type = status >= 500 ? "server_error" : "invalid_request_error";
  return { type: "error", status, error: { type, code, message, param } };
}

/** One client connection: its turns, one at a time, and its limits. */
class Session {
  readonly #state: SocketState;
  readonly #upstream: UpstreamSockets;
  /** The socket's queue for its client, in the thread's tally (see `look`). */
  readonly #held = heldForSockets.entry(() => this.look());
  readonly #queue: Record<string, unknown>[] = [];
  /** The turn in flight: how to stop it (the client went away). */
  #turn: { stop(): void } | undefined;
  #turns = 0;
  readonly #opened = Date.now();
  #closed = false;
  /** It counts in `openSockets`. */
  #counted = true;
  /** Stops the deadline after which a closed socket no longer counts. */
  #stopCounting = () => {};
  /** Past the connection's total time: no turn is taken any more. */
  #aged = false;
  #stopIdle = () => {};
  readonly #stopMax: () => void;
  readonly #live: LiveEntry | undefined;

  constructor(
    private readonly ctx: RequestContext,
    private readonly ws: WebSocket,
    /** The upgrade's headers the turns carry (its credentials first). */
    private readonly headers: Headers,
  ) {
    this.#upstream = new UpstreamSockets(() => ctx.services.config.webSocketQueueBytes);
    this.#state = { upstream: this.#upstream, objects: new BoundedMap(MAX_OBJECTS) };
    openSockets++;
    const config = ctx.services.config;
    this.#stopMax = config.streamMaxMs > 0
      ? deadline(config.streamMaxMs, () => {
        this.#aged = true;
        if (!this.#turn) this.#close(1000, "connection limit reached");
      })
      : () => {};
    this.#idle();
    // A stopping server: Deno's listener closes upgraded sockets as it stops; should a Deno not,
    // they are closed once the drain time is over, with the streams.
    this.#live = ctx.services.live?.add({ cut: () => this.#close(1001, "server shutting down") });
    ws.onmessage = (event) => this.#message(event.data);
    ws.onerror = () => {};
    ws.onclose = () => {
      this.#ended();
      this.#uncount();
    };
  }

  /** Stops counting the socket in `openSockets` (once). */
  #uncount(): void {
    if (!this.#counted) return;
    this.#counted = false;
    this.#stopCounting();
    openSockets--;
    this.#held.set(0);
  }

  /**
   * The bytes queued for the client now, set in the thread's tally. A socket that is closing
   * reports none (Deno's `bufferedAmount` is 0 once it is not open) though it still holds its
   * queue until the client reads it or leaves: it keeps what it was last seen holding until it no
   * longer counts (`#uncount` sets it to 0).
   */
  look(): number {
    if (!this.#closed && this.ws.readyState === WebSocket.OPEN) {
      this.#held.set(this.ws.bufferedAmount);
    }
    return this.#held.bytes;
  }

  /** Restarts the idle limit (no turn and no message for `streamIdleTimeoutMs`: closed). */
  #idle(): void {
    this.#stopIdle();
    const ms = this.ctx.services.config.streamIdleTimeoutMs;
    this.#stopIdle = ms > 0 ? deadline(ms, () => this.#close(1000, "idle timeout")) : () => {};
  }

  #send(event: unknown): void {
    if (this.#closed || this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(typeof event === "string" ? event : JSON.stringify(event));
    this.look();
  }

  #message(data: unknown): void {
    if (this.#closed) return;
    // Idle is time without a turn: one in flight has its stream's own limits.
    if (!this.#turn) this.#idle();
    if (typeof data !== "string") {
      return this.#send(refusal(400, "invalid_message", "Messages must be JSON text."));
    }
    let message: unknown;
    try {
      message = JSON.parse(data);
    } catch {
      return this.#send(refusal(400, "invalid_json", "The message is not valid JSON."));
    }
    if (message === null || typeof message !== "object" || Array.isArray(message)) {
      return this.#send(refusal(400, "invalid_json", "The message must be a JSON object."));
    }
    const event = message as Record<string, unknown>;
    if (event.type !== "response.create") {
      return this.#send(refusal(
        400,
        "unsupported_event",
        `Unsupported client event \`${
          String(event.type).slice(0, 64)
        }\`: this gateway takes \`response.create\` only.`,
        "type",
      ));
    }
    if (this.#queue.length >= MAX_QUEUED) {
      return this.#send(refusal(
        429,
        "too_many_turns",
        `At most ${MAX_QUEUED} turns may wait behind the one in flight on a connection.`,
      ));
    }
    this.#queue.push(event);
    if (!this.#turn) this.#next();
  }

  /** Runs the queued turns, one after the other. */
  #next(): void {
    const event = this.#queue.shift();
    if (!event || this.#closed) return;
    this.#stopIdle();
    const stop = new AbortController();
    let reading: { cancel(): void } | undefined;
    this.#turn = {
      stop: () => {
        stop.abort();
        reading?.cancel();
      },
    };
    this.#run(event, stop, (r) => reading = r)
      .catch((error) => {
        log("error", "a WebSocket turn failed", {
          request_id: this.ctx.requestId,
          error: String(error),
        });
        this.#send(refusal(500, "internal_error", "The gateway had an internal error."));
      })
      .finally(() => {
        this.#turn = undefined;
        if (this.#closed) return;
        if (this.#aged && !this.#queue.length) return this.#close(1000, "connection limit reached");
        this.#idle();
        this.#next();
      });
  }

  /** One turn: the `POST /v1/responses` it stands for, its answer written on the socket. */
  async #run(
    event: Record<string, unknown>,
    stop: AbortController,
    reading: (r: { cancel(): void }) => void,
  ): Promise<void> {
    const { type: _, stream_id: lane, ...body } = event;
    const echo = typeof lane === "string" ? lane : undefined;
    if (this.#aged) {
      return this.#send(withLane(
        refusal(
          400,
          "websocket_connection_limit_reached",
          "This connection has reached its time limit; open a new one.",
        ),
        echo,
      ));
    }
    const n = ++this.#turns;
    const answer = await this.ctx.serve!(this.#request(body, n, stop.signal), this.#state);
    if (!answer.ok || !answer.body) {
      return this.#send(withLane(await errorEvent(answer), echo));
    }
    const messages = readMessages(answer.body, (text) => {
      this.#send(echo === undefined ? text : withLaneText(text, echo));
      return this.#drained(stop.signal);
    });
    reading(messages);
    if (stop.signal.aborted) messages.cancel();
    // A stream that failed was ended with its error event (as SSE ends it): nothing more to say.
    await messages.done.catch(() => {});
  }

  /**
   * Waits while the socket has more than `HIGH_WATER_BYTES` queued for the client, or more than
   * `PRESSED_HIGH_WATER_BYTES` while the thread is over its budget for slow clients (undefined at
   * once when neither). The wait ends when the client has read enough of the queue, the connection
   * ends or `signal` stops the turn — or when the client is given up (see `#stalled`), which closes
   * the connection: the turn then ends as one whose client went away.
   */
  #drained(signal: AbortSignal): Promise<void> | undefined {
    const budget = this.ctx.services.config.webSocketQueueBytes;
    const behind = (queued: number) =>
      queued > HIGH_WATER_BYTES ||
      (queued > PRESSED_HIGH_WATER_BYTES && heldForSockets.over(budget));
    // The queue as `#send` just looked at it.
    if (!behind(this.#held.bytes)) return undefined;
    return new Promise((resolve) => {
      let queued = this.#held.bytes;
      let movedAt = Date.now();
      const poll = () => {
        if (this.#closed || signal.aborted || this.ws.readyState !== WebSocket.OPEN) {
          return resolve();
        }
        const now = this.look();
        if (!behind(now)) return resolve();
        if (now < queued) {
          queued = now;
          movedAt = Date.now();
        }
        const stalled = this.#stalled(Date.now() - movedAt);
        if (!stalled) return void deadline(DRAIN_POLL_MS, poll);
        this.#close(...stalled);
        resolve();
      };
      deadline(DRAIN_POLL_MS, poll);
    });
  }

  /**
   * Why a turn whose client has not read any of the socket's queue for `ms` is given up, as the
   * close code and reason of its connection, or undefined while it waits on: the queue has not
   * shrunk for `server.streamIdleTimeoutMs` (0: no limit), or the connection has reached
   * `server.streamMaxMs` (a turn that is behind by more than the mark is not waited for there).
   */
  #stalled(ms: number): [code: number, reason: string] | undefined {
    const idle = this.ctx.services.config.streamIdleTimeoutMs;
    if (idle > 0 && ms >= idle) return [1008, "client not reading"];
    if (this.#aged) return [1008, "connection limit reached"];
    return undefined;
  }

  /** The request a turn stands for: the upgrade's credentials, the turn's body (streamed). */
  #request(body: Record<string, unknown>, n: number, signal: AbortSignal): Request {
    const headers = new Headers(this.headers);
    const id = `${this.ctx.requestId}.${n}`;
    if (id.length <= 128) headers.set("x-request-id", id);
    return new Request(this.ctx.url.href, {
      method: "POST",
      headers,
      body: JSON.stringify({ ...body, stream: true }),
      signal,
    });
  }

  #close(code: number, reason: string): void {
    if (this.#closed) return;
    try {
      this.ws.close(code, reason);
    } catch { /* already closing */ }
    this.#ended();
    // It counts until it has closed (see `openSockets`).
    this.#stopCounting = deadline(CLOSING_COUNTS_MS, () => this.#uncount());
  }

  /** The connection ended: the turn in flight is stopped (billed for what was relayed). */
  #ended(): void {
    if (this.#closed) return;
    this.#closed = true;
    // The access log's line of the connection's end (the upgrade's was written at its 101).
    if (this.ctx.services.config.accessLog) {
      log("info", "websocket closed", {
        request_id: this.ctx.requestId,
        turns: this.#turns,
        in_flight: this.#turn !== undefined,
        ms: Date.now() - this.#opened,
      });
    }
    this.#queue.length = 0;
    this.#stopIdle();
    this.#stopMax();
    this.#live?.remove();
    this.#turn?.stop();
    this.#upstream.close();
  }
}

/** The `error` event of a turn the gateway answered with an HTTP error. */
async function errorEvent(answer: Response): Promise<Record<string, unknown>> {
  const text = await answer.text().catch(() => "");
  let error: Record<string, unknown> | undefined;
  try {
    const body = JSON.parse(text);
    if (body?.error !== null && typeof body?.error === "object") error = body.error;
  } catch { /* not the gateway's JSON: described below */ }
  error ??= {
    type: answer.status >= 500 ? "server_error" : "invalid_request_error",
    code: null,
    message: text.slice(0, 500) || `The turn failed with HTTP ${answer.status}.`,
    param: null,
  };
  // OpenAI's word for a previous response the connection cannot continue (clients act on it).
  if (answer.status === 404 && error.param === "previous_response_id") {
    error.code = "previous_response_not_found";
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of answer.headers) if (ERROR_HEADERS.test(name)) headers[name] = value;
  return { type: "error", status: answer.status, error: { ...error, headers } };
}

/** The event as sent on a lane (`stream_id`, echoed on every event of its turn). */
function withLane(event: Record<string, unknown>, lane: string | undefined) {
  return lane === undefined ? event : { ...event, stream_id: lane };
}

function withLaneText(text: string, lane: string): string {
  try {
    return JSON.stringify({ ...JSON.parse(text), stream_id: lane });
  } catch {
    return text;
  }
}

/** A map that forgets its oldest entries past `max`. */
class BoundedMap<K, V> extends Map<K, V> {
  constructor(private readonly max: number) {
    super();
  }

  override set(key: K, value: V): this {
    this.delete(key);
    super.set(key, value);
    if (this.size > this.max) this.delete(this.keys().next().value as K);
    return this;
  }
}
