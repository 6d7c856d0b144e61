/**
 * Streams relayed as they arrive. The upstream's bytes are split into units (SSE events, or the
 * elements of a JSON array) by a framer that also feeds the meter; only whole units are passed on,
 * byte for byte (or re-encoded by `rewrite`), so a stream that is cut mid-unit never hands the
 * client half an event before its error.
 *
 * A stream ends one of three ways, and `onEnd` runs exactly once, before the client sees the end:
 * - `done`: the upstream ended after its end-of-stream marker (`finished()`);
 * - `cut`: the upstream failed, ended before that marker, went quiet for `idleMs`, ran past
 *   `maxMs`, or the server is draining — the client gets `errorTail` (the protocol's error event);
 * - `cancel`: the client went away; the upstream request is aborted.
 */
import { JsonArrayScanner } from "./json_array.ts";
import { type Framer, type SseEvent, SseScanner } from "./sse.ts";

export type StreamEnd = "done" | "cut" | "cancel";

/** Why a stream was cut, for the log. */
export type CutReason =
  | "upstream_error"
  | "upstream_ended"
  | "idle_timeout"
  | "max_duration"
  | "drain";

export interface RelayOptions {
  /** How the upstream's bytes are framed. */
  framing: "sse" | "json-array";
  /** Receives every unit (event, or array element as an unnamed event). */
  onEvent(event: SseEvent): void;
  /** True once the stream's end-of-stream marker has passed. */
  finished(): boolean;
  /** Awaited before the client sees the end of the stream (so settlement is committed first). */
  onEnd(how: StreamEnd, why?: CutReason): void | Promise<void>;
  /** Bytes that end a cut stream in the client's protocol; `started` when units were sent. */
  errorTail?: (started: boolean) => Uint8Array | undefined;
  /** Re-frames an SSE stream event by event: the encoded event to send, or null to drop it. */
  rewrite?: (event: SseEvent) => string | null;
  /** Aborts the upstream request (the client went away, or the stream was cut). */
  abort(): void;
  /** Longest silence between upstream chunks, ms (0: none). */
  idleMs: number;
  /** Longest a stream may run, ms (0: none). */
  maxMs: number;
  /** Live streams, so a draining server can cut them; the relay adds and removes itself. */
  live?: Set<LiveStream>;
}

/** A stream in flight that the server can cut (on drain). */
export interface LiveStream {
  cut(why: CutReason): void;
}

/** Wraps an upstream streamed body into the body we send to the client. */
export function relayStream(
  upstream: ReadableStream<Uint8Array>,
  options: RelayOptions,
): ReadableStream<Uint8Array> {
  const reader = upstream.getReader();
  const { rewrite, live } = options;
  const encoder = new TextEncoder();
  let rewritten = "";
  const onEvent = rewrite
    ? (event: SseEvent) => {
      options.onEvent(event);
      rewritten += rewrite(event) ?? "";
    }
    : options.onEvent;
  const framer: Framer = options.framing === "sse"
    ? new SseScanner(onEvent)
    : new JsonArrayScanner(onEvent);
  /** Bytes of an unfinished unit, held until it completes. */
  let held: Uint8Array[] = [];
  let started = false;
  let cutReason: CutReason | null = null;
  /** When the pending upstream read began (null while none is pending: the client is slow). */
  let waitingSince: number | null = null;
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  let maxTimer: ReturnType<typeof setTimeout> | undefined;

  let ended = false;
  const end = async (how: StreamEnd, why?: CutReason) => {
    if (ended) return;
    ended = true;
    clearTimeout(idleTimer);
    clearTimeout(maxTimer);
    live?.delete(handle);
    await options.onEnd(how, why);
  };
  const cut = (why: CutReason) => {
    if (cutReason || ended) return;
    cutReason = why;
    options.abort();
    reader.cancel().catch(() => {});
  };
  const handle: LiveStream = { cut };
  live?.add(handle);
  if (options.maxMs > 0) maxTimer = setTimeout(() => cut("max_duration"), options.maxMs);
  if (options.idleMs > 0) {
    // One timer per idle period, not one per chunk: it looks at how long the current read waits.
    const check = () => {
      const waited = waitingSince === null ? 0 : Date.now() - waitingSince;
      if (waited >= options.idleMs) cut("idle_timeout");
      else idleTimer = setTimeout(check, options.idleMs - waited);
    };
    idleTimer = setTimeout(check, options.idleMs);
  }

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const send = (bytes: Uint8Array) => {
        started = true;
        controller.enqueue(bytes);
      };
      const finishCut = async (why: CutReason) => {
        await end("cut", why);
        const tail = options.errorTail?.(started);
        if (tail) controller.enqueue(tail);
        controller.close();
      };
      for (;;) {
        let result: ReadableStreamReadResult<Uint8Array>;
        waitingSince = Date.now();
        try {
          result = await reader.read();
        } catch {
          return await finishCut(cutReason ?? "upstream_error");
        } finally {
          waitingSince = null;
        }
        if (cutReason) return await finishCut(cutReason);
        if (result.done) {
          framer.end();
          if (rewrite && rewritten) send(encoder.encode(rewritten));
          rewritten = "";
          if (!options.finished() || framer.closed?.() === false) {
            return await finishCut("upstream_ended");
          }
          if (!rewrite) { for (const bytes of held) send(bytes); }
          held = [];
          await end("done");
          controller.close();
          return;
        }
        const chunk = result.value;
        const boundary = framer.push(chunk);
        if (rewrite) {
          if (!rewritten) continue; // dropped, or an unfinished event: read on
          send(encoder.encode(rewritten));
          rewritten = "";
          return;
        }
        if (boundary < 0) {
          held.push(chunk);
          continue;
        }
        for (const bytes of held) send(bytes);
        held = boundary < chunk.length ? [chunk.subarray(boundary)] : [];
        send(boundary === chunk.length ? chunk : chunk.subarray(0, boundary));
        return;
      }
    },
    async cancel(reason) {
      options.abort();
      await Promise.all([end("cancel"), reader.cancel(reason).catch(() => {})]);
    },
  }, { highWaterMark: 1 }); // read one chunk ahead of the client
}
