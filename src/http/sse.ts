/**
 * Server-sent events: a byte-level scanner (for reading upstream streams on the way through) and
 * an encoder. The one SSE implementation of the project; the emulator uses the encoder too.
 *
 * The scanner works on the bytes as they arrive: it finds line ends with native `indexOf`,
 * decodes only `event:` names (each once while it is among the few dozen kept: a stream repeats a
 * handful), and decodes an event's data only when asked (`data()`), so a relay pays for the few
 * events that carry usage, not for every token. Lines end with LF or CRLF. A line
 * split over chunks is kept as the chunks it arrived in and joined once, when its end arrives, so
 * the work is linear in the bytes whatever their shape (one 8 MB `data:` line included).
 */
import { concatBytes } from "./bytes.ts";

/** One event; `data()` decodes its data lines (joined with "\n") on demand. */
export interface SseEvent {
  /** The `event:` name, or "" when the stream sends data-only events. */
  event: string;
  data(): string;
  /** The data's bytes, undecoded (lines joined with LF). */
  raw(): Uint8Array;
  /**
   * The data parsed as JSON, parsed once for every reader of the event (a meter and a decoder),
   * who must not change the value; throws what `JSON.parse` throws. Where absent, readers parse
   * `data()` themselves.
   */
  json?(): unknown;
}

/**
 * Splits a stream's bytes into units (SSE events, JSON array elements) for a meter. `push` returns
 * the offset in `chunk` just past the last unit it completed (-1 when it completed none), so a
 * relay can pass on whole units only.
 */
export interface Framer {
  push(chunk: Uint8Array): number;
  /** The stream ended: flushes a last unit that was not terminated. */
  end(): void;
  /** For framings with an end of their own (a JSON array's `]`): whether it was seen. */
  closed?(): boolean;
  /**
   * While a unit is handed on (inside the callback): the offset in the chunk being pushed just
   * past it, or -1 when it ends with the stream. Framings that cannot tell have no such method.
   */
  unitEnd?(): number;
}

const LF = 10;
const CR = 13;
const decoder = new TextDecoder();

type Range = [Uint8Array, number, number];

/** An event's data: its first line (`bytes[start, end)`), and the lines after it, if any. */
function decodeData(bytes: Uint8Array, start: number, end: number, more: Range[] | null): string {
  const first = decoder.decode(bytes.subarray(start, end));
  if (!more) return first;
  return [first, ...more.map(([b, s, e]) => decoder.decode(b.subarray(s, e)))].join("\n");
}

function rawData(bytes: Uint8Array, start: number, end: number, more: Range[] | null): Uint8Array {
  if (!more) return bytes.subarray(start, end);
  const parts: Uint8Array[] = [bytes.subarray(start, end)];
  for (const [b, s, e] of more) parts.push(NEWLINE, b.subarray(s, e));
  return concatBytes(parts);
}

const NEWLINE = new Uint8Array([LF]);

/** Event names decoded lately, most recent first: a stream names a handful, again and again. */
const names: { bytes: Uint8Array; name: string }[] = [];
/** How many names are kept, and the longest kept (a longer one is decoded each time). */
const NAMES_KEPT = 32;
const NAME_MAX_BYTES = 64;

/** The event name in bytes[start, end): decoded once while it is among the names kept. */
function eventName(bytes: Uint8Array, start: number, end: number): string {
  const length = end - start;
  seek: for (let k = 0; k < names.length; k++) {
    const known = names[k].bytes;
    if (known.length !== length) continue;
    for (let i = 0; i < length; i++) if (known[i] !== bytes[start + i]) continue seek;
    return names[k].name;
  }
  const name = decoder.decode(bytes.subarray(start, end));
  if (length <= NAME_MAX_BYTES) {
    if (names.length >= NAMES_KEPT) names.pop();
    names.unshift({ bytes: bytes.slice(start, end), name });
  }
  return name;
}

/** `line` (bytes[start, end)) starts with `field:`? Returns where the value starts, or -1. */
function fieldValue(bytes: Uint8Array, start: number, end: number, field: string): number {
  const n = field.length;
  if (end - start < n + 1 || bytes[start + n] !== 58) return -1; // ":"
  for (let i = 0; i < n; i++) if (bytes[start + i] !== field.charCodeAt(i)) return -1;
  const value = start + n + 1;
  return value < end && bytes[value] === 32 ? value + 1 : value;
}

/** Scans SSE bytes pushed in arbitrary chunks; `onEvent` fires per complete event. */
export class SseScanner implements Framer {
  /** The unfinished line, as the chunks (or chunk tails) it arrived in. */
  #pending: Uint8Array[] = [];
  #pendingLength = 0;
  #event = "";
  /** The event's first data line (`#first[#firstStart, #firstEnd)`), and any after it. */
  #first: Uint8Array | null = null;
  #firstStart = 0;
  #firstEnd = 0;
  #more: Range[] | null = null;
  #boundary = -1;
  #unitEnd = -1;

  constructor(private readonly onEvent: (event: SseEvent) => void) {}

  push(chunk: Uint8Array): number {
    this.#boundary = -1;
    let start = 0;
    let lf = chunk.indexOf(LF);
    if (lf >= 0 && this.#pending.length) {
      // The carried line ends in this chunk: join it once.
      this.#pending.push(chunk.subarray(0, lf + 1));
      const line = concatBytes(this.#pending, this.#pendingLength + lf + 1);
      this.#pending = [];
      this.#pendingLength = 0;
      const end = line.length - 1;
      this.#line(line, 0, end > 0 && line[end - 1] === CR ? end - 1 : end, lf + 1);
      start = lf + 1;
      lf = chunk.indexOf(LF, start);
    }
    while (lf >= 0) {
      this.#line(chunk, start, lf > start && chunk[lf - 1] === CR ? lf - 1 : lf, lf + 1);
      start = lf + 1;
      lf = chunk.indexOf(LF, start);
    }
    if (start < chunk.length) {
      this.#pending.push(chunk.subarray(start));
      this.#pendingLength += chunk.length - start;
    }
    return this.#boundary;
  }

  unitEnd(): number {
    return this.#unitEnd;
  }

  /** Flushes a last line and event that were not followed by a blank line. */
  end(): void {
    this.#unitEnd = -1;
    if (this.#pending.length) {
      const rest = concatBytes(this.#pending, this.#pendingLength);
      this.#pending = [];
      this.#pendingLength = 0;
      this.#line(rest, 0, rest[rest.length - 1] === CR ? rest.length - 1 : rest.length, -1);
    }
    this.#dispatch();
  }

  /** One line; `after` is the offset in the current chunk just past its line end. */
  #line(bytes: Uint8Array, start: number, end: number, after: number): void {
    if (start === end) {
      this.#unitEnd = after;
      this.#dispatch();
      this.#boundary = after;
      return;
    }
    if (bytes[start] === 58) return; // ":" comment
    let value = fieldValue(bytes, start, end, "data");
    if (value >= 0) {
      if (!this.#first) {
        this.#first = bytes;
        this.#firstStart = value;
        this.#firstEnd = end;
      } else (this.#more ??= []).push([bytes, value, end]);
      return;
    }
    value = fieldValue(bytes, start, end, "event");
    if (value >= 0) this.#event = eventName(bytes, value, end);
  }

  #dispatch(): void {
    const first = this.#first;
    if (first) {
      this.onEvent(
        new ScannedEvent(this.#event, first, this.#firstStart, this.#firstEnd, this.#more),
      );
    }
    this.#event = "";
    this.#first = null;
    this.#more = null;
  }
}

/**
 * An event as scanned: its data decoded, joined (when it came in lines) and parsed once each,
 * when first asked — a meter and a decoder both read it.
 */
class ScannedEvent implements SseEvent {
  #text: string | undefined;
  #raw: Uint8Array | undefined;
  /** 0: not parsed yet; 1: `#value` is the parsed data; 2: `#value` is what parsing threw. */
  #parsed = 0;
  #value: unknown;

  constructor(
    readonly event: string,
    private readonly bytes: Uint8Array,
    private readonly start: number,
    private readonly end: number,
    private readonly more: Range[] | null,
  ) {}

  data(): string {
    return this.#text ??= decodeData(this.bytes, this.start, this.end, this.more);
  }

  raw(): Uint8Array {
    return this.#raw ??= rawData(this.bytes, this.start, this.end, this.more);
  }

  json(): unknown {
    if (this.#parsed === 0) {
      try {
        this.#value = JSON.parse(this.data());
        this.#parsed = 1;
      } catch (error) {
        this.#value = error;
        this.#parsed = 2;
      }
    }
    if (this.#parsed === 2) throw this.#value;
    return this.#value;
  }
}

const LINE_BREAK = /[\r\n]/;

/** Encodes one event; `event` omitted for data-only streams. `eol` is the line ending to use. */
export function encodeSse(data: string, event?: string, eol = "\n"): string {
  if (!LINE_BREAK.test(data)) return sseLine(data, event, eol);
  const lines = data.split(/\r\n|\r|\n/).map((line) => `data: ${line}${eol}`).join("");
  return `${event ? `event: ${event}${eol}` : ""}${lines}${eol}`;
}

/**
 * Encodes one event whose data is one line (no CR or LF in it: JSON as `JSON.stringify` writes
 * it, whose line breaks are escaped) — what `encodeSse` writes for it, without looking.
 */
export function sseLine(data: string, event?: string, eol = "\n"): string {
  return event
    ? "event: " + event + eol + "data: " + data + eol + eol
    : "data: " + data + eol + eol;
}
