/**
 * Streams relayed as they arrive. The upstream's bytes are split into units (SSE events, or the
 * elements of a JSON array) by a framer that also feeds the meter; only whole units are passed on,
 * byte for byte (or re-encoded by `rewrite`), so a stream that is cut mid-unit never hands the
 * client half an event before its error.
 *
 * A stream ends one of three ways, and `onEnd` runs exactly once, before the client sees the end:
 * - `done`: the upstream ended after its end-of-stream marker (`finished()`);
 * - `cut`: the upstream failed, ended before that marker, went quiet for `idleMs`, ran past
 *   `maxMs`, or the server is draining — the client gets `errorTail` (the protocol's error event).
 *   A cut is settled at once, even while the client is not reading;
 * - `cancel`: the client went away; the upstream request is aborted.
 */
import { chunkReader } from "./bytes.ts";
import { deadline } from "./deadlines.ts";
import { GatewayError } from "./errors.ts";
import { JsonArrayScanner } from "./json_array.ts";
import { type Framer, type SseEvent, SseScanner } from "./sse.ts";
import { log } from "../log.ts";

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
  /** With `rewrite`: what ends a stream that finished (what its framing leaves implicit). */
  flush?: () => string;
  /**
   * Without `rewrite`: the text to send instead of one unit (an SSE event), or null to pass it on
   * as it is — for the rare unit that must change (a usage the gateway decided); the others keep
   * their bytes. Framings that cannot place a unit in their chunk (see `Framer.unitEnd`) ignore it.
   */
  replace?: (event: SseEvent) => string | null;
  /**
   * Rewrites the text of units around an upstream error event (an `error` or `response.failed`
   * event, an `{"error":…}` chunk or fragment) before they are sent: the rest passes unchanged.
   */
  redact?: (text: string) => string;
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
  const reader = chunkReader(upstream);
  const { rewrite, live, redact } = options;
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  let rewritten = "";
  /** An upstream error unit is among those about to be sent (see `redact`). */
  let errorSeen = false;
  /** Units of the chunk being pushed that `replace` changed (see `spliceUnits`). */
  let replaced: Replacement[] = [];
  /** Where the next unit of the chunk being pushed begins (-1: in bytes held from before). */
  let unitStart = -1;
  const onEvent = (event: SseEvent) => {
    options.onEvent(event);
    if (redact && isErrorUnit(event)) errorSeen = true;
    if (rewrite) rewritten += rewrite(event) ?? "";
    else if (replace) {
      const end = framer.unitEnd!();
      const text = replace(event);
      if (text !== null && end >= 0) replaced.push({ text, start: unitStart, end });
      unitStart = end;
    }
  };
  const framer: Framer = options.framing === "sse"
    ? new SseScanner(onEvent)
    : new JsonArrayScanner(onEvent);
  const replace = framer.unitEnd ? options.replace : undefined;
  /** Bytes of an unfinished unit, held until it completes. */
  let held: Uint8Array[] = [];
  let started = false;
  let cutReason: CutReason | null = null;
  /** When the pending upstream read began (null while none is pending: the client is slow). */
  let waitingSince: number | null = null;
  let stopIdle = () => {};
  let stopMax = () => {};
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  /** The client's stream is closed (or being closed): nothing more is sent. */
  let closed = false;
  /** A pull is in progress: the client is reading. */
  let reading = false;

  let ended = false;
  const end = async (how: StreamEnd, why?: CutReason) => {
    if (ended) return;
    ended = true;
    stopIdle();
    stopMax();
    live?.delete(handle);
    try {
      await options.onEnd(how, why);
    } catch (error) {
      log("error", "ending a stream failed", { error: String(error) });
    }
  };
  const send = (bytes: Uint8Array) => {
    started = true;
    controller.enqueue(bytes);
  };
  /** Sends units; those around an upstream error pass through `redact` first. */
  const sendUnits = (parts: Uint8Array[]) => {
    if (!errorSeen || !redact) {
      for (const part of parts) send(part);
      return;
    }
    errorSeen = false;
    const text = parts.map((part) => decoder.decode(part, { stream: true })).join("") +
      decoder.decode();
    send(encoder.encode(redact(text)));
  };
  const sendRewritten = () => {
    const text = errorSeen && redact ? redact(rewritten) : rewritten;
    errorSeen = false;
    rewritten = "";
    send(encoder.encode(text));
  };
  /** Settles a cut stream and ends it with the error tail (once). */
  const finishCut = async (why: CutReason) => {
    if (closed) return;
    closed = true;
    await end("cut", why);
    const tail = options.errorTail?.(started);
    if (tail) controller.enqueue(tail);
    controller.close();
  };
  const cut = (why: CutReason) => {
    if (cutReason || ended) return;
    cutReason = why;
    options.abort();
    reader.cancel().catch(() => {});
    // A client that is not reading would otherwise leave the call unsettled until it reads again.
    if (!reading) {
      finishCut(why).catch((error) =>
        log("error", "settling a cut stream failed", { error: String(error) })
      );
    }
  };
  const handle: LiveStream = { cut };
  live?.add(handle);
  // Both limits are checked by the shared deadline sweep (no timer per stream).
  if (options.maxMs > 0) stopMax = deadline(options.maxMs, () => cut("max_duration"));
  if (options.idleMs > 0) {
    // One deadline per idle period, not one per chunk: it looks at how long the current read waits.
    const check = () => {
      const waited = waitingSince === null ? 0 : Date.now() - waitingSince;
      if (waited >= options.idleMs) cut("idle_timeout");
      else stopIdle = deadline(options.idleMs - waited, check);
    };
    stopIdle = deadline(options.idleMs, check);
  }

  /** Reads until a whole unit can be passed on, or the stream ends. */
  const readOn = async (): Promise<void> => {
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
        if (rewrite && rewritten) sendRewritten();
        if (!options.finished() || framer.closed?.() === false) {
          return await finishCut("upstream_ended");
        }
        if (!rewrite) sendUnits(held);
        held = [];
        const tail = options.flush?.();
        if (tail) send(encoder.encode(tail));
        closed = true;
        await end("done");
        controller.close();
        return;
      }
      const chunk = result.value;
      unitStart = held.length ? -1 : 0;
      let boundary: number;
      try {
        boundary = framer.push(chunk);
      } catch (error) {
        // A unit the meter or the translation cannot take: the stream is cut there.
        log("warn", "an upstream stream unit could not be read", { error: String(error) });
        cutReason = "upstream_error";
        options.abort();
        reader.cancel().catch(() => {});
        return await finishCut(cutReason);
      }
      if (rewrite) {
        if (!rewritten) continue; // dropped, or an unfinished event: read on
        sendRewritten();
        return;
      }
      if (boundary < 0) {
        held.push(chunk);
        continue;
      }
      const units = replaced.length
        ? spliceUnits(held, chunk, boundary, replaced, encoder)
        : [...held, boundary === chunk.length ? chunk : chunk.subarray(0, boundary)];
      replaced = [];
      held = boundary < chunk.length ? [chunk.subarray(boundary)] : [];
      sendUnits(units);
      return;
    }
  };

  return new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    async pull() {
      if (closed) return;
      reading = true;
      try {
        await readOn();
      } finally {
        reading = false;
      }
    },
    async cancel(reason) {
      closed = true;
      options.abort();
      await Promise.all([end("cancel"), reader.cancel(reason).catch(() => {})]);
    },
  }, { highWaterMark: 1 }); // read one chunk ahead of the client
}

/** A unit `replace` changed: its text, and where it was in the chunk (-1: it began before). */
interface Replacement {
  text: string;
  start: number;
  end: number;
}

/**
 * The bytes to send for `held` and `chunk` up to `boundary`, with the replaced units' text in
 * place of their bytes (a unit that began in `held` takes the held bytes with it).
 */
function spliceUnits(
  held: Uint8Array[],
  chunk: Uint8Array,
  boundary: number,
  replaced: Replacement[],
  encoder: TextEncoder,
): Uint8Array[] {
  const parts: Uint8Array[] = [];
  let heldPending = true;
  let cursor = 0;
  for (const unit of replaced) {
    if (unit.start < 0) heldPending = false;
    else {
      if (heldPending) parts.push(...held);
      heldPending = false;
      parts.push(chunk.subarray(cursor, unit.start));
    }
    parts.push(encoder.encode(unit.text));
    cursor = unit.end;
  }
  if (heldPending) parts.push(...held);
  parts.push(chunk.subarray(cursor, boundary));
  return parts;
}

const ERROR_MEMBER = new TextEncoder().encode('"error"');

/** Whether a unit is an upstream error: by its event name, or a JSON object whose first member is `error`. */
function isErrorUnit(event: SseEvent): boolean {
  if (event.event === "error" || event.event === "response.failed") return true;
  if (event.event !== "") return false;
  const raw = event.raw();
  let i = 0;
  while (raw[i] === 32 || raw[i] === 10 || raw[i] === 13 || raw[i] === 9) i++;
  if (raw[i++] !== 123) return false; // {
  while (raw[i] === 32 || raw[i] === 10 || raw[i] === 13 || raw[i] === 9) i++;
  for (let j = 0; j < ERROR_MEMBER.length; j++) if (raw[i + j] !== ERROR_MEMBER[j]) return false;
  return true;
}

/**
 * Reads a whole upstream answer (JSON) natively, within `ms` of its headers: past that the
 * upstream request is aborted and a 504 thrown. An answer arrives in one go after its headers, so
 * one deadline (the stream idle limit) stands for both the idle and the total limit of streams.
 */
export async function readWhole(
  answer: Response,
  limits: { abort(): void; ms: number },
): Promise<string> {
  if (limits.ms <= 0) return await answer.text();
  const late = Promise.withResolvers<never>();
  const stop = deadline(limits.ms, () => {
    limits.abort();
    late.reject(new GatewayError(504, "The upstream stopped sending its answer."));
  });
  const text = answer.text();
  text.catch(() => {}); // abandoned when the deadline wins
  try {
    return await Promise.race([text, late.promise]);
  } finally {
    stop();
  }
}
