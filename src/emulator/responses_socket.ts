/**
 * Emulated WebSocket mode of the OpenAI / xAI Responses API: `GET /v1/responses` upgraded, then
 * `response.create` messages, each answered with the events a streamed `POST /v1/responses` sends
 * (`responses.ts`), one JSON event a message. As the real services do: turns run one at a time, in
 * order; `stream` may be sent (it is implied), `background` is refused; the connection keeps its
 * last response in memory, so a `previous_response_id` naming it continues even with
 * `store: false` — until a turn naming it fails, which drops it; `generate: false` makes a response
 * without output to continue from. An error is the `error` event with the HTTP status the same
 * request would get (`{type, status, error}`); a stream the emulator cuts (`[[emulate cut=N]]`)
 * drops the connection. A connection is served for 60 minutes; a turn sent later gets
 * `websocket_connection_limit_reached`.
 */
import { readMessages } from "../http/websocket.ts";
import type { ConnectionCache } from "./responses.ts";

type Json = Record<string, unknown>;

/** How long a connection is served (OpenAI's limit). */
const CONNECTION_MS = 60 * 60 * 1000;

/** The `error` event of an answer with an error status. */
async function errorEvent(answer: Response): Promise<Json> {
  const text = await answer.text();
  let error: unknown;
  try {
    error = JSON.parse(text).error;
  } catch { /* not JSON */ }
  if (error === null || typeof error !== "object") {
    error = { type: "server_error", code: null, message: String(error ?? text), param: null };
  }
  const retry = answer.headers.get("retry-after");
  return {
    type: "error",
    status: answer.status,
    error: { ...error as Json, ...(retry ? { headers: { "retry-after": retry } } : {}) },
  };
}

function refusal(code: string, message: string, param: string | null = null): Json {
  return {
    type: "error",
    status: 400,
    error: { type: "invalid_request_error", code, message, param },
  };
}

/**
 * Serves one upgraded connection; `turn` answers a turn's Responses body as the HTTP route would
 * (with the connection's cache).
 */
export function serveResponsesSocket(
  req: Request,
  turn: (body: Json, connection: ConnectionCache) => Promise<Response>,
): Response {
  const { socket, response } = Deno.upgradeWebSocket(req);
  const opened = Date.now();
  const connection: ConnectionCache = {};
  const queue: string[] = [];
  let busy = false;
  /** The turn being streamed: a connection that closes stops it (its stream is cancelled). */
  let streaming: { cancel(): void } | undefined;
  const send = (event: Json | string) => {
    if (socket.readyState !== WebSocket.OPEN) return;
    socket.send(typeof event === "string" ? event : JSON.stringify(event));
  };

  const run = async (text: string) => {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return send(refusal("invalid_json", "The message is not valid JSON."));
    }
    const { type, ...body } = (message ?? {}) as Json;
    if (type !== "response.create") {
      return send(refusal("invalid_type", `Unknown event type '${String(type)}'.`, "type"));
    }
    if (Date.now() - opened >= CONNECTION_MS) {
      send(refusal(
        "websocket_connection_limit_reached",
        "Responses websocket connection limit reached (60 minutes). Create a new websocket connection to continue.",
      ));
      return socket.close(1000);
    }
    if (body.background === true) {
      return send(refusal(
        "invalid_value",
        "Background responses are not supported over WebSocket.",
        "background",
      ));
    }
    const answer = await turn({ ...body, stream: true }, connection);
    if (!answer.ok || !answer.body) {
      // A continuation that failed drops the state it named.
      if (body.previous_response_id === connection.last?.id) connection.last = undefined;
      return send(await errorEvent(answer));
    }
    const reading = readMessages(answer.body, (event) => send(event));
    streaming = reading;
    try {
      await reading.done;
    } catch {
      socket.close(1011, "stream cut"); // an emulated cut: the connection drops
    } finally {
      streaming = undefined;
    }
  };

  const next = async () => {
    if (busy) return;
    busy = true;
    try {
      for (let text = queue.shift(); text !== undefined; text = queue.shift()) {
        if (socket.readyState !== WebSocket.OPEN) return;
        await run(text);
      }
    } finally {
      busy = false;
    }
  };
  socket.onmessage = (event) => {
    queue.push(typeof event.data === "string" ? event.data : "");
    next();
  };
  socket.onerror = () => {};
  socket.onclose = () => {
    queue.length = 0;
    streaming?.cancel();
  };
  return response;
}
