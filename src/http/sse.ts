/**
 * Server-sent events: a byte-level scanner (for reading upstream streams on the way through) and
 * an encoder. The one SSE implementation of the project; the emulator uses the encoder too.
 *
 * The scanner works on the bytes as they arrive: it finds line ends with native `indexOf`,
 * decodes only `event:` names, and decodes an event's data only when asked (`data()`), so a relay
 * pays for the few events that carry usage, not for every token. Lines end with LF or CRLF.
 */

/** One event; `data()` decodes its data lines (joined with "\n") on demand. */
export interface SseEvent {
  /** The `event:` name, or "" when the stream sends data-only events. */
  event: string;
  data(): string;
}

const LF = 10;
const CR = 13;
const decoder = new TextDecoder();

type Range = [Uint8Array, number, number];

function decodeRanges(ranges: Range[]): string {
  if (ranges.length === 1) {
    const [bytes, start, end] = ranges[0];
    return decoder.decode(bytes.subarray(start, end));
  }
  return ranges.map(([bytes, start, end]) => decoder.decode(bytes.subarray(start, end))).join("\n");
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
export class SseScanner {
  #carry: Uint8Array | null = null;
  #event = "";
  #data: Range[] = [];

  constructor(private readonly onEvent: (event: SseEvent) => void) {}

  push(chunk: Uint8Array): void {
    let bytes = chunk;
    if (this.#carry) {
      bytes = new Uint8Array(this.#carry.length + chunk.length);
      bytes.set(this.#carry);
      bytes.set(chunk, this.#carry.length);
      this.#carry = null;
    }
    let start = 0;
    for (;;) {
      const lf = bytes.indexOf(LF, start);
      if (lf < 0) break;
      this.#line(bytes, start, lf > start && bytes[lf - 1] === CR ? lf - 1 : lf);
      start = lf + 1;
    }
    if (start < bytes.length) this.#carry = bytes.slice(start);
  }

  /** Flushes a last line and event that were not followed by a blank line. */
  end(): void {
    if (this.#carry) {
      const rest = this.#carry;
      this.#carry = null;
      this.#line(rest, 0, rest[rest.length - 1] === CR ? rest.length - 1 : rest.length);
    }
    this.#dispatch();
  }

  #line(bytes: Uint8Array, start: number, end: number): void {
    if (start === end) return this.#dispatch();
    if (bytes[start] === 58) return; // ":" comment
    let value = fieldValue(bytes, start, end, "data");
    if (value >= 0) {
      this.#data.push([bytes, value, end]);
      return;
    }
    value = fieldValue(bytes, start, end, "event");
    if (value >= 0) this.#event = decoder.decode(bytes.subarray(value, end));
  }

  #dispatch(): void {
    if (this.#data.length) {
      const ranges = this.#data;
      this.onEvent({ event: this.#event, data: () => decodeRanges(ranges) });
    }
    this.#event = "";
    this.#data = [];
  }
}

/** Encodes one event; `event` omitted for data-only streams. `eol` is the line ending to use. */
export function encodeSse(data: string, event?: string, eol = "\n"): string {
  const lines = data.split(/\r\n|\r|\n/).map((line) => `data: ${line}${eol}`).join("");
  return `${event ? `event: ${event}${eol}` : ""}${lines}${eol}`;
}
