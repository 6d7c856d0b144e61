/**
 * What the gateway and the emulator share of the Responses API over WebSocket: whether a request
 * asks to upgrade, and a Responses stream as messages — each SSE event's data is one text message,
 * and a message is the SSE event named for its JSON's `type` — so a turn on a socket and a streamed
 * `POST /v1/responses` carry the same events.
 */
import { encodeSse, SseScanner } from "./sse.ts";

/** Whether `req` asks for a WebSocket (`GET` with `Upgrade: websocket`). */
export function wantsWebSocket(req: Request): boolean {
  return req.method === "GET" &&
    /(^|[\s,])websocket($|[\s,])/i.test(req.headers.get("upgrade") ?? "");
}

/** The SSE event carrying one message (named for `type`, the message's own). */
export function eventOfMessage(text: string, type: string): string {
  return encodeSse(text, type || undefined);
}

/** A message whose object begins with its `type` (as the Responses API writes every event). */
const LEADING_TYPE = /^\{\s*"type"\s*:\s*"([^"\\]*)"/;

/**
 * The `type` of a message's JSON object, or "" when it has none (or is not an object): read from
 * its beginning when it is the first member, without parsing the whole event a second time.
 */
export function messageType(text: string): string {
  const leading = LEADING_TYPE.exec(text);
  if (leading) return leading[1];
  try {
    const value = JSON.parse(text);
    return value !== null && typeof value === "object" && typeof value.type === "string"
      ? value.type
      : "";
  } catch {
    return "";
  }
}

/** A stream's events being read as messages (see `readMessages`). */
export interface MessageReading {
  /** Settles once the stream has ended (rejects when it failed). */
  done: Promise<void>;
  /** Stops reading: the stream is cancelled. */
  cancel(): void;
}

/**
 * Reads an SSE body and hands on each event's data as one message, in order; `onMessage` may
 * wait (the next chunk is read once it has settled).
 */
export function readMessages(
  body: ReadableStream<Uint8Array>,
  onMessage: (text: string) => void | Promise<void>,
): MessageReading {
  const reader = body.getReader();
  let pending: string[] = [];
  const scanner = new SseScanner((event) => pending.push(event.data()));
  let cancelled = false;
  const flush = async () => {
    const texts = pending;
    pending = [];
    for (const text of texts) {
      if (cancelled) return;
      await onMessage(text);
    }
  };
  const done = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        scanner.push(value);
        await flush();
        if (cancelled) return;
      }
      scanner.end();
      await flush();
    } finally {
      reader.releaseLock();
    }
  })();
  return {
    done,
    cancel() {
      if (cancelled) return;
      cancelled = true;
      reader.cancel().catch(() => {});
    },
  };
}
