/**
 * The HTTP transport every provider module uses: one `fetch` with an abort controller and a
 * deadline for the response headers. Network failures become 502, the deadline 504.
 */
import { fetchBody, TextParts } from "../http/utf8.ts";
import type { ProtocolId } from "../translate/ir.ts";
import { GatewayError } from "../http/errors.ts";
import { deadline } from "../http/deadlines.ts";

/** A request already in the upstream's protocol, addressed relative to the provider's base URL. */
export interface UpstreamCall {
  method?: "GET" | "POST" | "DELETE";
  /** Path after the provider's base URL, e.g. `/responses`; may carry a query string. */
  path: string;
  /** A long text body may come as its parts (see `TextParts`). */
  body?: BodyInit | TextParts | null;
  headers?: Record<string, string>;
  /** The surface (wire protocol) of the provider it goes to; default its first. */
  protocol?: ProtocolId;
  /**
   * The deployment it calls (`Target.name`), which scopes a key's rest after a rate limit and its
   * refusal for one model (see `send`).
   */
  model?: string;
  /**
   * The id of the one key to use (an object made with it, e.g. a video job, is polled with it);
   * absent: the provider's keys in turn.
   */
  key?: string;
  /**
   * Send it over the client connection's upstream WebSockets (a Responses turn on a socket, see
   * `socket.ts`) where the upstream takes them; absent: over HTTP.
   */
  socket?: SocketSender;
}

/**
 * Sends a call over an upstream WebSocket instead of HTTP (see `socket.ts`): resolves with its
 * answer as an HTTP one would be, or null when the upstream cannot be reached that way (the call
 * then goes over HTTP).
 */
export interface SocketSender {
  send(
    url: string,
    headers: Record<string, string>,
    body: string,
    abort: AbortController,
    deadlines: Deadlines,
  ): Promise<Response | null>;
}

/**
 * A streamed request body that reports when it has been read to its end (sent), so the deadline
 * for the response headers counts from there and not from the first byte of a slow upload.
 */
function trackSent(body: ReadableStream<Uint8Array>): {
  body: ReadableStream<Uint8Array>;
  sent: Promise<void>;
} {
  const { promise: sent, resolve } = Promise.withResolvers<void>();
  const reader = body.getReader();
  return {
    sent,
    body: new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) {
          resolve();
          controller.close();
        } else controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    }),
  };
}

/** Deadlines of one upstream request, in milliseconds. */
export interface Deadlines {
  /** For the response headers, once the request body has been sent. */
  headersMs: number;
  /** For sending a streamed request body. */
  sendMs?: number;
}

/** The deadlines of the gateway's settings (`server.upstreamTimeoutMs`, `uploadTimeoutMs`). */
export function upstreamDeadlines(
  settings: { upstreamTimeoutMs: number; uploadTimeoutMs: number },
): Deadlines {
  return { headersMs: settings.upstreamTimeoutMs, sendMs: settings.uploadTimeoutMs };
}

/**
 * Sends the request and resolves when the upstream's headers arrive. `abort` cancels the request
 * (the client went away); it is also what the deadlines fire: sending a streamed body within
 * `sendMs`, then the headers within `headersMs`.
 */
async function fetchUpstream(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: UpstreamCall["body"],
  abort: AbortController,
  deadlines: Deadlines,
): Promise<Response> {
  let expired: string | null = null;
  let settled = false;
  let stop = () => {};
  const expire = (why: string, ms: number) => {
    if (settled) return; // the headers came first: no deadline may fire on the answer
    stop();
    stop = deadline(ms, () => {
      expired = why;
      abort.abort();
    });
  };
  if (body instanceof ReadableStream) {
    const tracked = trackSent(body);
    body = tracked.body;
    expire(`did not take the request body within ${deadlines.sendMs} ms`, deadlines.sendMs ?? 0);
    tracked.sent.then(() => {
      if (!expired) expire(`did not answer within ${deadlines.headersMs} ms`, deadlines.headersMs);
    });
  } else {
    expire(`did not answer within ${deadlines.headersMs} ms`, deadlines.headersMs);
  }
  try {
    // Long text encoded into a buffer `fetch` copies at once (see `fetchBody`): nothing may come
    // between the two. `fetch` would encode a long string far slower itself.
    if (typeof body === "string" || body instanceof TextParts) body = fetchBody(body);
    const signal = abort.signal;
    // Streamed uploads (multipart image edits) need a half-duplex request.
    return await fetch(
      url,
      body instanceof ReadableStream
        ? { method, headers, body, signal, duplex: "half" } as RequestInit
        : { method, headers, body, signal },
    );
  } catch (error) {
    if (expired) throw new GatewayError(504, `The upstream ${expired}.`);
    if (abort.signal.aborted) throw error;
    throw new GatewayError(
      502,
      `Could not reach the upstream provider (${(error as Error).name}).`,
    );
  } finally {
    settled = true;
    stop();
  }
}

/**
 * Sends a request to `url` with `headers` (JSON bodies get their content type unless set), a
 * streamed body half-duplex; resolves when the upstream's headers arrive.
 */
export function sendRequest(
  url: string,
  call: UpstreamCall,
  headers: Record<string, string>,
  abort: AbortController,
  deadlines: Deadlines,
): Promise<Response> {
  const sent = call.body ? withContentType(headers) : headers;
  return fetchUpstream(url, call.method ?? "POST", sent, call.body, abort, deadlines);
}

/** `headers` with a JSON body's content type, unless they name one (then `headers` as they are). */
export function withContentType(headers: Record<string, string>): Record<string, string> {
  return headers["content-type"] ? headers : { "content-type": "application/json", ...headers };
}
