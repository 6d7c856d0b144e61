/**
 * Streams relayed as they arrive: every upstream chunk is passed on unchanged and also scanned (as
 * SSE bytes, or decoded as plain text) for the meter. `onEnd` runs exactly once — when the
 * upstream ends, fails, or the client goes away (then the upstream body is cancelled, which aborts
 * the upstream request) — and is awaited before the client sees the end of the stream.
 */
import { type SseEvent, SseScanner } from "./sse.ts";

export type StreamEnd = "done" | "error" | "cancel";

export interface RelayOptions {
  /** Receives decoded SSE events; when absent, `onText` receives the raw text instead. */
  onEvent?: (event: SseEvent) => void;
  onText?: (text: string) => void;
  /** Awaited before the client sees the end of the stream (so settlement is committed first). */
  onEnd: (how: StreamEnd) => void | Promise<void>;
  /** Bytes to send the client when the upstream fails mid-stream (a protocol error event). */
  errorTail?: () => Uint8Array | undefined;
  /**
   * Re-frames an SSE stream event by event: returns the encoded event to send, or null to drop
   * it. Without it, upstream chunks pass through byte for byte.
   */
  rewrite?: (event: SseEvent) => string | null;
}

/** Wraps an upstream streamed body into the body we send to the client. */
export function relayStream(
  upstream: ReadableStream<Uint8Array>,
  options: RelayOptions,
): ReadableStream<Uint8Array> {
  const reader = upstream.getReader();
  const decoder = new TextDecoder();
  const { onText, rewrite } = options;
  const encoder = new TextEncoder();
  let rewritten = "";
  const onEvent = rewrite
    ? (event: SseEvent) => {
      options.onEvent?.(event);
      rewritten += rewrite(event) ?? "";
    }
    : options.onEvent;
  const sse = onEvent ? new SseScanner(onEvent) : undefined;
  const feed = (chunk: Uint8Array) => {
    if (sse) sse.push(chunk);
    else onText?.(decoder.decode(chunk, { stream: true }));
  };
  let ended = false;
  const end = async (how: StreamEnd) => {
    if (ended) return;
    ended = true;
    await options.onEnd(how);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const flush = () => {
        if (!rewritten) return;
        controller.enqueue(encoder.encode(rewritten));
        rewritten = "";
      };
      for (;;) {
        let result: ReadableStreamReadResult<Uint8Array>;
        try {
          result = await reader.read();
        } catch {
          flush();
          await end("error");
          const tail = options.errorTail?.();
          if (tail) controller.enqueue(tail);
          controller.close();
          return;
        }
        if (result.done) {
          if (sse) sse.end();
          else onText?.(decoder.decode());
          flush();
          await end("done");
          controller.close();
          return;
        }
        feed(result.value);
        if (!rewrite) return controller.enqueue(result.value);
        if (rewritten) return flush();
        // Everything read so far was dropped or is an unfinished event: read on.
      }
    },
    async cancel(reason) {
      await Promise.all([end("cancel"), reader.cancel(reason)]);
    },
  }, { highWaterMark: 1 }); // read one chunk ahead of the client
}
