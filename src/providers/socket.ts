/**
 * The Responses API over an upstream WebSocket (OpenAI's and xAI's WebSocket mode), for the turns
 * of a client's socket. One upstream socket per client connection and upstream (URL and key),
 * opened on the first turn sent there and kept for the next ones: the upstream keeps the
 * connection's last response in memory, so a `store: false` chain continues on its own socket only.
 *
 * A turn goes as one `response.create` message, and its events come back as the answer of an HTTP
 * attempt would, so the pipeline relays, meters and settles it as any other: an SSE body of the
 * events (each message one event, named for its `type`) that ends with the turn's terminal event —
 * or, when the first event is an `error`, an HTTP error answer with the event's status and error,
 * so a rate limit or a refused key counts as it does over HTTP. A socket that closes mid-turn ends
 * the body with an error (the relay cuts the stream there); an answer the client no longer reads
 * closes the socket (nothing else stops a turn upstream). A WebSocket reads every message as it
 * comes, so a turn cannot hold its upstream back as an HTTP stream does: an answer of which more
 * than `MAX_UNREAD_BYTES` waits unread (its client reads slower than the upstream writes) ends
 * there, as a socket that closes mid-turn does, and its socket is closed — and so does one of which
 * more than `PRESSED_UNREAD_BYTES` waits while the thread holds more than its budget for slow
 * WebSocket clients (`server.webSocketQueueBytes`, see `http/held_bytes.ts`). An upstream that does
 * not take the upgrade is sent that key's turns over HTTP for the rest of the connection (a
 * refused key or a missing route is then answered as HTTP answers it). A socket the upstream aged out
 * (`websocket_connection_limit_reached` before a turn began) is opened again, once.
 */
import { GatewayError } from "../http/errors.ts";
import { deadline } from "../http/deadlines.ts";
import { type HeldEntry, heldForSockets } from "../http/held_bytes.ts";
import { eventOfMessage, messageType } from "../http/websocket.ts";
import { log } from "../log.ts";
import type { Deadlines, SocketSender } from "./transport.ts";

/** The events that end a turn. */
const TERMINAL = new Set(["response.completed", "response.failed", "response.incomplete", "error"]);

/** The code of the error that says a socket is too old for another turn. */
const AGED_OUT = "websocket_connection_limit_reached";

const encoder = new TextEncoder();

/**
 * Bytes of a turn's answer that may wait unread (its client is slower than the upstream) before
 * the turn is ended and its socket closed: the bound on what a slow client makes the gateway hold.
 */
const MAX_UNREAD_BYTES = 8 << 20;

/**
 * Bytes of a turn's answer that may wait unread while the thread holds more than its budget for
 * slow WebSocket clients: the turns furthest behind are ended first.
 */
const PRESSED_UNREAD_BYTES = 1 << 20;

/** A turn's start: its answer, and the code of the error it began with, if it did. */
interface Began {
  answer: Response;
  errorCode?: string;
}

/** The HTTP error answer of a turn whose first event is an `error`. */
function errorAnswer(text: string): Began {
  let event: Record<string, unknown> = {};
  try {
    event = JSON.parse(text);
  } catch { /* typed `error` but unreadable: a bare 500 */ }
  const error = event.error !== null && typeof event.error === "object"
    ? event.error as Record<string, unknown>
    : { message: event.message, type: "server_error", code: event.code, param: event.param };
  const status = typeof event.status === "number" && event.status >= 400 && event.status <= 599
    ? event.status
    : 500;
  const headers: Record<string, string> = { "content-type": "application/json" };
  const own = error.headers !== null && typeof error.headers === "object"
    ? error.headers as Record<string, unknown>
    : {};
  const retry = own["retry-after"];
  if (typeof retry === "string" || typeof retry === "number") {
    headers["retry-after"] = String(retry);
  }
  const { headers: _, ...rest } = error;
  return {
    answer: new Response(JSON.stringify({ error: rest }), { status, headers }),
    errorCode: typeof error.code === "string" ? error.code : undefined,
  };
}

/** The message of a turn: the Responses body as `response.create` (the socket always streams). */
function createMessage(body: string): string {
  const { stream: _stream, ...fields } = JSON.parse(body) as Record<string, unknown>;
  return JSON.stringify({ type: "response.create", ...fields });
}

/** The turn a socket is carrying. */
interface Turn {
  message(text: string): void;
  closed(): void;
}

/** One upstream WebSocket, a turn at a time. */
class UpstreamSocket {
  readonly #ws: WebSocket;
  #turn: Turn | undefined;
  /** Settles once the socket opened (true) or failed to (false). */
  readonly opened: Promise<boolean>;
  closed = false;

  constructor(url: string, headers: Record<string, string>) {
    this.#ws = new WebSocket(url.replace(/^http/, "ws"), { headers });
    const opened = Promise.withResolvers<boolean>();
    this.opened = opened.promise;
    this.#ws.onopen = () => opened.resolve(true);
    this.#ws.onmessage = (event) => {
      if (typeof event.data === "string") this.#turn?.message(event.data);
      else this.#turn?.closed(); // the Responses API sends text only
    };
    this.#ws.onerror = () => {};
    this.#ws.onclose = () => {
      this.closed = true;
      opened.resolve(false);
      this.#turn?.closed();
    };
  }

  get busy(): boolean {
    return this.#turn !== undefined;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.#ws.close(1000);
    } catch { /* already closing */ }
  }

  /**
   * Sends one turn; resolves with its answer once its first event arrives (within `headersMs`),
   * rejects when the socket fails first or `abort` fires (the client went away). `budget` is the
   * thread's for slow WebSocket clients (see the module's doc).
   */
  turn(text: string, abort: AbortController, headersMs: number, budget: number): Promise<Began> {
    const first = Promise.withResolvers<Began>();
    let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
    let ended = false;
    /**
     * What of the answer waits unread, as the thread's tally counts it: until it has been read, a
     * finished answer too (an errored or cancelled stream has dropped its queue, its size is 0).
     */
    const unread: HeldEntry = heldForSockets.entry(() => lookUnread());
    /** Sets `unread` to the answer's queue now (−`desiredSize`), and answers it. */
    const lookUnread = () => {
      unread.set(-(controller?.desiredSize ?? 0));
      return unread.bytes;
    };
    const finish = () => {
      ended = true;
      this.#turn = undefined;
      stop();
      abort.signal.removeEventListener("abort", onAbort);
    };
    const fail = (error: unknown) => {
      if (ended) return;
      finish();
      this.close();
      if (controller) controller.error(error);
      else first.reject(error);
      unread.set(0);
    };
    const onAbort = () => fail(new DOMException("The call was aborted.", "AbortError"));
    const stop = headersMs > 0
      ? deadline(headersMs, () => {
        if (!controller) {
          fail(new GatewayError(504, `The upstream did not answer within ${headersMs} ms.`));
        }
      })
      : () => {};
    this.#turn = {
      message: (data) => {
        if (ended) return;
        const type = messageType(data);
        if (!controller) {
          stop();
          if (type === "error") {
            finish();
            first.resolve(errorAnswer(data));
            return;
          }
          const body = new ReadableStream<Uint8Array>({
            start: (c) => {
              controller = c;
            },
            cancel: () => {
              unread.set(0);
              if (ended) return;
              finish();
              this.close();
            },
          }, new ByteLengthQueuingStrategy({ highWaterMark: 0 })); // desiredSize: −unread bytes
          first.resolve({
            answer: new Response(body, { headers: { "content-type": "text/event-stream" } }),
          });
        }
        controller!.enqueue(encoder.encode(eventOfMessage(data, type)));
        if (TERMINAL.has(type)) {
          finish();
          controller!.close();
          lookUnread();
          return;
        }
        const bytes = lookUnread();
        const bound = bytes > MAX_UNREAD_BYTES
          ? "turn"
          : bytes > PRESSED_UNREAD_BYTES && heldForSockets.over(budget)
          ? "thread"
          : undefined;
        if (bound) {
          log("warn", "an upstream socket's turn ended: its client read slower than it answered", {
            unread_bytes: bytes,
            bound,
            held_bytes: heldForSockets.total,
          });
          fail(
            new GatewayError(502, "The client read the answer slower than the upstream wrote it."),
          );
        }
      },
      closed: () => fail(new GatewayError(502, "The upstream closed its WebSocket mid-turn.")),
    };
    if (abort.signal.aborted) onAbort();
    else {
      abort.signal.addEventListener("abort", onAbort, { once: true });
      this.#ws.send(text);
    }
    return first.promise;
  }
}

/** The upstream WebSockets of one client connection (see the module's doc). */
export class UpstreamSockets implements SocketSender {
  readonly #sockets = new Map<string, UpstreamSocket>();
  /** The thread's budget for slow WebSocket clients, in bytes (it may change on a reload). */
  readonly #budget: () => number;
  /** Upstreams (URL and headers) that did not take the upgrade: sent over HTTP. */
  readonly #refused = new Set<string>();
  #closed = false;

  constructor(budget: () => number) {
    this.#budget = budget;
  }

  async send(
    url: string,
    headers: Record<string, string>,
    body: string,
    abort: AbortController,
    deadlines: Deadlines,
  ): Promise<Response | null> {
    const id = `${url}\n${JSON.stringify(headers)}`;
    if (this.#closed || this.#refused.has(id)) return null;
    const text = createMessage(body);
    for (let fresh = false;; fresh = true) {
      const socket = await this.#socketFor(id, url, headers, abort, deadlines.headersMs);
      if (!socket) return null;
      const began = await socket.turn(text, abort, deadlines.headersMs, this.#budget());
      if (began.errorCode !== AGED_OUT || fresh) return began.answer;
      socket.close();
    }
  }

  /** Closes every socket (the client's connection ended). */
  close(): void {
    this.#closed = true;
    for (const socket of this.#sockets.values()) socket.close();
    this.#sockets.clear();
  }

  /** The open socket to `url` with `headers`, opened when there is none; null: refused. */
  async #socketFor(
    id: string,
    url: string,
    headers: Record<string, string>,
    abort: AbortController,
    headersMs: number,
  ): Promise<UpstreamSocket | null> {
    const open = this.#sockets.get(id);
    // A socket still carrying a turn (never, as turns come one at a time) is replaced below, and
    // closed: that turn ends with it.
    if (open && !open.closed && !open.busy) return open;
    const socket = new UpstreamSocket(url, headers);
    const late = Promise.withResolvers<never>();
    const onAbort = () => late.reject(new DOMException("The call was aborted.", "AbortError"));
    abort.signal.addEventListener("abort", onAbort, { once: true });
    const stop = headersMs > 0
      ? deadline(
        headersMs,
        () =>
          late.reject(new GatewayError(504, `The upstream did not answer within ${headersMs} ms.`)),
      )
      : () => {};
    late.promise.catch(() => {});
    try {
      if (!await Promise.race([socket.opened, late.promise])) {
        this.#refused.add(id);
        return null;
      }
    } catch (error) {
      socket.close();
      throw error;
    } finally {
      stop();
      abort.signal.removeEventListener("abort", onAbort);
    }
    if (this.#closed) {
      socket.close();
      return null;
    }
    open?.close();
    this.#sockets.set(id, socket);
    return socket;
  }
}
