/**
 * Streams relayed as they arrive, through named stages. Each stage is a standard `Transformer` —
 * what `new TransformStream(stage)` takes, as Deno std's `TextLineStream` is one — named for its
 * one job:
 *
 * - `UnitFramer`: the upstream's bytes into whole units (SSE events, or the elements of a JSON
 *   array), each handed on as it completes, then the chunk it came in;
 * - `ReadUnits`: reads every unit as it passes (a meter, a trace) and refuses to end a stream its
 *   reader did not see finish;
 * - `PassUnits`: the units' bytes as they are, whole units only (a few may be shown differently:
 *   a usage the gateway decided, what the gateway's own change to the request caused taken out), or
 * - `RewriteUnits`: each unit re-encoded (a translation: decode ∘ encode, see
 *   `translate/transcode.ts`).
 *
 * `relayStream` (`relay_stream.ts`) runs them in step, one chunk through every stage before the next
 * is read. Only whole units are sent, so a stream that is cut mid-unit never hands the client half an
 * event before its error; units around an upstream error are redacted before they are sent.
 */
import { JsonArrayScanner } from "./json_array.ts";
import { type Framer, type SseEvent, SseScanner } from "./sse.ts";

/**
 * What `UnitFramer` hands on: each unit as it completes — with `end`, the offset in the chunk
 * being framed just past it (-1: it ends with the stream; undefined: the framing cannot tell) —
 * then the chunk itself, with `boundary`, the offset just past its last whole unit (-1: none).
 */
export type UnitPart =
  | { kind: "unit"; event: SseEvent; end: number | undefined }
  | { kind: "chunk"; bytes: Uint8Array; boundary: number };

/** A stream that ended before it finished (see `UnitFramer` and `ReadUnits`). */
export class Unfinished extends Error {
  constructor() {
    super("the stream ended before its end");
  }
}

const EMPTY = new Uint8Array(0);

/** The upstream's bytes into whole units: SSE events, or a JSON array's elements. */
export class UnitFramer implements Transformer<Uint8Array, UnitPart> {
  readonly #framer: Framer;
  #controller!: TransformStreamDefaultController<UnitPart>;

  constructor(framing: "sse" | "json-array") {
    const onUnit = (event: SseEvent) =>
      this.#controller.enqueue({ kind: "unit", event, end: this.#framer.unitEnd?.() });
    this.#framer = framing === "sse" ? new SseScanner(onUnit) : new JsonArrayScanner(onUnit);
  }

  transform(bytes: Uint8Array, controller: TransformStreamDefaultController<UnitPart>): void {
    this.#controller = controller;
    const boundary = this.#framer.push(bytes);
    controller.enqueue({ kind: "chunk", bytes, boundary });
  }

  /** Hands on a last unit the stream did not terminate; an array never closed is unfinished. */
  flush(controller: TransformStreamDefaultController<UnitPart>): void {
    this.#controller = controller;
    this.#framer.end();
    controller.enqueue({ kind: "chunk", bytes: EMPTY, boundary: -1 });
    if (this.#framer.closed?.() === false) controller.error(new Unfinished());
  }
}

/** What reads the units of a stream as they pass (a meter, a trace). */
export interface UnitReader {
  /** One unit. */
  onEvent(event: SseEvent): void;
  /** The stream's end-of-stream marker has passed. */
  finished(): boolean;
}

/** Reads every unit as it passes; a stream whose reader did not see it finish is unfinished. */
export class ReadUnits implements Transformer<UnitPart, UnitPart> {
  constructor(private readonly reader: UnitReader) {}

  transform(part: UnitPart, controller: TransformStreamDefaultController<UnitPart>): void {
    if (part.kind === "unit") this.reader.onEvent(part.event);
    controller.enqueue(part);
  }

  flush(controller: TransformStreamDefaultController<UnitPart>): void {
    if (!this.reader.finished()) controller.error(new Unfinished());
  }
}

/** The last stage of a relay: the client's bytes, and what ends a stream that was cut. */
export interface UnitOutput extends Transformer<UnitPart, Uint8Array> {
  /** The stream was cut: what was not sent yet is dropped, the error tail sent (`started`: bytes were). */
  cut(started: boolean, controller: TransformStreamDefaultController<Uint8Array>): void;
  /** The stream finished, but what was sent ends in the protocol's error (a failed translation). */
  failed?(): boolean;
}

/** How `PassUnits` passes the units on. */
export interface PassOptions {
  /**
   * The text to send instead of one unit ("" for nothing), or null to pass it on as it is — for
   * the units that must change (a usage the gateway decided, what the gateway's own change to the
   * request caused); the others keep their bytes. Asked only where the framing can place a unit
   * in its chunk (SSE).
   */
  show?: (event: SseEvent) => string | null;
  /** Rewrites the text of units around an upstream error unit before they are sent. */
  redact?: (text: string) => string;
  /**
   * Bytes that end a cut stream in the client's protocol; `started` when units were sent. Not
   * asked when the last unit was the upstream's own error (where the framing places units: SSE).
   */
  tail?: (started: boolean) => Uint8Array | undefined;
}

/** A unit `show` changed: its text, and where it was in the chunk (-1: it began before). */
interface Replacement {
  text: string;
  start: number;
  end: number;
}

/** The units' bytes as they are: whole units only, an unfinished one held until it completes. */
export class PassUnits implements UnitOutput {
  /** Bytes of an unfinished unit, held until it completes. */
  #held: Uint8Array[] = [];
  /** Units of the chunk being framed that `show` changed. */
  #replaced: Replacement[] = [];
  /** Where the next unit of the chunk being framed begins (-1: in the held bytes). */
  #unitStart = 0;
  /** An upstream error unit is among those about to be sent. */
  #errorSeen = false;
  /**
   * The last unit was the upstream's own error: `pending` in the chunk being framed, `sent` with
   * it, `held` (it ended with the stream, unterminated) — null when it was not, or the framing
   * cannot place units (a JSON array).
   */
  #errorEnd: "pending" | "sent" | "held" | null = null;

  constructor(private readonly options: PassOptions = {}) {}

  transform(part: UnitPart, controller: TransformStreamDefaultController<Uint8Array>): void {
    if (part.kind === "unit") {
      const error = isErrorUnit(part.event);
      if (this.options.redact && error) this.#errorSeen = true;
      if (part.end !== undefined) {
        this.#errorEnd = !error ? null : part.end < 0 ? "held" : "pending";
      }
      const show = this.options.show;
      if (show && part.end !== undefined) {
        const text = show(part.event);
        if (text !== null && part.end >= 0) {
          this.#replaced.push({ text, start: this.#unitStart, end: part.end });
        }
        this.#unitStart = part.end;
      }
      return;
    }
    const { bytes, boundary } = part;
    if (boundary < 0) {
      if (bytes.length) this.#held.push(bytes);
    } else {
      const units = this.#replaced.length
        ? spliceUnits(this.#held, bytes, boundary, this.#replaced)
        : [...this.#held, boundary === bytes.length ? bytes : bytes.subarray(0, boundary)];
      this.#replaced = [];
      this.#held = boundary < bytes.length ? [bytes.subarray(boundary)] : [];
      this.#send(units, controller);
      if (this.#errorEnd === "pending") this.#errorEnd = "sent";
    }
    this.#unitStart = this.#held.length ? -1 : 0;
  }

  /** The stream finished: what is held (a last unit it did not terminate) is sent. */
  flush(controller: TransformStreamDefaultController<Uint8Array>): void {
    const held = this.#held;
    this.#held = [];
    this.#send(held, controller);
  }

  /**
   * What was not sent is dropped and the error tail sent — but a stream whose last unit was the
   * upstream's own error ends with that error (sent now if it was held), not a second one.
   */
  cut(started: boolean, controller: TransformStreamDefaultController<Uint8Array>): void {
    const held = this.#held;
    this.#held = [];
    if (this.#errorEnd === "held") return this.#send(held, controller);
    if (this.#errorEnd === "sent") return;
    const tail = this.options.tail?.(started);
    if (tail) controller.enqueue(tail);
  }

  /** Sends units; those around an upstream error pass through `redact` first. */
  #send(parts: Uint8Array[], controller: TransformStreamDefaultController<Uint8Array>): void {
    const redact = this.options.redact;
    if (!this.#errorSeen || !redact) {
      for (const part of parts) if (part.length) controller.enqueue(part);
      return;
    }
    this.#errorSeen = false;
    const decoder = new TextDecoder();
    const text = parts.map((part) => decoder.decode(part, { stream: true })).join("") +
      decoder.decode();
    if (text) controller.enqueue(encoder.encode(redact(text)));
  }
}

/** How `RewriteUnits` re-encodes a stream (a translation: see `translate/transcode.ts`). */
export interface UnitRewriter {
  /** One unit: the text to send for it, or null to drop it. */
  unit(event: SseEvent): string | null;
  /** The stream finished: what its framing leaves implicit (the translation's end). */
  end?(): string;
  /** The stream was cut: its error tail (`started`: units were sent). */
  cut(started: boolean): Uint8Array | undefined;
  /** Whether what was written ends in the protocol's error (the stream made no answer). */
  failed?(): boolean;
}

/** Each unit re-encoded; the text of a chunk's units sent at once. */
export class RewriteUnits implements UnitOutput {
  #text = "";
  /** An upstream error unit is among those about to be sent. */
  #errorSeen = false;

  constructor(
    private readonly rewriter: UnitRewriter,
    /** Rewrites the text around an upstream error unit before it is sent. */
    private readonly redact?: (text: string) => string,
  ) {}

  transform(part: UnitPart, controller: TransformStreamDefaultController<Uint8Array>): void {
    if (part.kind === "unit") {
      if (this.redact && isErrorUnit(part.event)) this.#errorSeen = true;
      this.#text += this.rewriter.unit(part.event) ?? "";
      return;
    }
    if (!this.#text) return; // dropped, or an unfinished unit
    const text = this.#errorSeen && this.redact ? this.redact(this.#text) : this.#text;
    this.#errorSeen = false;
    this.#text = "";
    controller.enqueue(encoder.encode(text));
  }

  flush(controller: TransformStreamDefaultController<Uint8Array>): void {
    const tail = this.rewriter.end?.();
    if (tail) controller.enqueue(encoder.encode(tail));
  }

  cut(started: boolean, controller: TransformStreamDefaultController<Uint8Array>): void {
    this.#text = "";
    const tail = this.rewriter.cut(started);
    if (tail) controller.enqueue(tail);
  }

  failed(): boolean {
    return this.rewriter.failed?.() ?? false;
  }
}

const encoder = new TextEncoder();

/**
 * The bytes to send for `held` and `chunk` up to `boundary`, with the replaced units' text in
 * place of their bytes (a unit that began in `held` takes the held bytes with it).
 */
function spliceUnits(
  held: Uint8Array[],
  chunk: Uint8Array,
  boundary: number,
  replaced: Replacement[],
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

const ERROR_MEMBER = encoder.encode('"error"');

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

/** The stages of a relay: the framer, any stages that read the units, and the client's bytes. */
export type RelayStages = [UnitFramer, ...Transformer<UnitPart, UnitPart>[], UnitOutput];
