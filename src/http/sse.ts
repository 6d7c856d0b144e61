/**
 * Server-sent events: an incremental decoder (for reading upstream streams on the way through)
 * and an encoder. The one SSE implementation of the project; the emulator uses it too.
 */
import { LineSplitter } from "./lines.ts";

export interface SseEvent {
  /** The `event:` name, or "" when the stream sends data-only events. */
  event: string;
  data: string;
}

/** Decodes SSE text pushed in arbitrary chunks; `onEvent` fires per complete event. */
export class SseDecoder {
  #event = "";
  /** The data lines of the event being read, joined with \n; null before the first. */
  #data: string | null = null;
  readonly #lines: LineSplitter;

  constructor(onEvent: (event: SseEvent) => void) {
    this.#lines = new LineSplitter((line) => {
      if (line === "") {
        if (this.#data !== null) onEvent({ event: this.#event, data: this.#data });
        this.#event = "";
        this.#data = null;
        return;
      }
      if (line.charCodeAt(0) === 58) return; // ":" comment
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.charCodeAt(0) === 32) value = value.slice(1);
      if (field === "data") this.#data = this.#data === null ? value : `${this.#data}\n${value}`;
      else if (field === "event") this.#event = value;
    });
  }

  push(text: string): void {
    this.#lines.push(text);
  }

  /** Flushes a last event that was not followed by a blank line. */
  end(): void {
    this.#lines.end();
    this.#lines.push("\n");
  }
}

/** Encodes one event; `event` omitted for data-only streams. `eol` is the line ending to use. */
export function encodeSse(data: string, event?: string, eol = "\n"): string {
  const lines = data.split(/\r\n|\r|\n/).map((line) => `data: ${line}${eol}`).join("");
  return `${event ? `event: ${event}${eol}` : ""}${lines}${eol}`;
}
