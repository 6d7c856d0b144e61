/**
 * A JSON array delivered in pieces — Gemini's `streamGenerateContent` without `alt=sse`:
 * `[{…}\n,\r\n{…}\n]` — split into its top-level elements as they complete. Linear in the bytes:
 * inside strings it jumps to the next quote or backslash with native `indexOf`.
 */
import { concatBytes } from "./bytes.ts";
import type { Framer, SseEvent } from "./sse.ts";

const QUOTE = 34;
const BACKSLASH = 92;
const decoder = new TextDecoder();

/** Hands each complete top-level element to `onElement` (as an unnamed event). */
export class JsonArrayScanner implements Framer {
  #depth = 0;
  #opened = false;
  #inString = false;
  #escaped = false;
  /** The current element's bytes from earlier chunks. */
  #pending: Uint8Array[] = [];

  constructor(private readonly onElement: (element: SseEvent) => void) {}

  push(chunk: Uint8Array): number {
    const n = chunk.length;
    let boundary = -1;
    let start = this.#depth >= 2 ? 0 : -1;
    let quote = -1;
    let backslash = -1;
    let i = 0;
    if (this.#escaped) {
      this.#escaped = false;
      i = 1;
    }
    while (i < n) {
      if (this.#inString) {
        if (quote < i) quote = indexOrEnd(chunk, QUOTE, i);
        if (backslash < i) backslash = indexOrEnd(chunk, BACKSLASH, i);
        const next = Math.min(quote, backslash);
        if (next === n) break;
        if (next === backslash) {
          if (next + 1 >= n) this.#escaped = true;
          i = next + 2;
          continue;
        }
        this.#inString = false;
        i = next + 1;
        continue;
      }
      const b = chunk[i];
      if (b === QUOTE) {
        this.#inString = true;
      } else if (b === 123 || b === 91) { // { [
        this.#depth++;
        this.#opened = true;
        if (this.#depth === 2) start = i;
      } else if (b === 125 || b === 93) { // } ]
        this.#depth--;
        if (this.#depth === 1 && start >= 0) {
          this.#emit(chunk.subarray(start, i + 1));
          start = -1;
          boundary = i + 1;
        }
      }
      i++;
    }
    if (start >= 0) this.#pending.push(chunk.subarray(start));
    return boundary;
  }

  end(): void {
    this.#pending = [];
  }

  /** Whether the array's closing `]` has been seen. */
  closed(): boolean {
    return this.#opened && this.#depth === 0;
  }

  #emit(tail: Uint8Array): void {
    const bytes = this.#pending.length ? concatBytes([...this.#pending, tail]) : tail;
    this.#pending = [];
    this.onElement({ event: "", data: () => decoder.decode(bytes), raw: () => bytes });
  }
}

function indexOrEnd(bytes: Uint8Array, byte: number, from: number): number {
  const at = bytes.indexOf(byte, from);
  return at < 0 ? bytes.length : at;
}
