/** Incremental line splitting for text streams: `\n`, `\r\n` and `\r` all end a line. */

/** Feeds text in arbitrary chunks, calls `onLine` for every complete line (without its ending). */
export class LineSplitter {
  #rest = "";
  #pendingCR = false;

  constructor(private readonly onLine: (line: string) => void) {}

  push(text: string): void {
    let start = 0;
    if (this.#pendingCR && text.charCodeAt(0) === 10) start = 1; // a \r\n split across chunks
    this.#pendingCR = false;
    const hasCR = text.includes("\r");
    const length = text.length;
    while (start < length) {
      // Native searches: the next \n, and the next \r only when the text has any.
      let end = text.indexOf("\n", start);
      if (hasCR) {
        const cr = text.indexOf("\r", start);
        if (cr >= 0 && (end < 0 || cr < end)) end = cr;
      }
      if (end < 0) break;
      this.onLine(this.#rest ? this.#rest + text.slice(start, end) : text.slice(start, end));
      this.#rest = "";
      if (text.charCodeAt(end) === 13) {
        if (end + 1 === length) this.#pendingCR = true;
        else if (text.charCodeAt(end + 1) === 10) end++;
      }
      start = end + 1;
    }
    if (start < length) this.#rest += text.slice(start);
  }

  /** Emits what is left as a last line, if anything. */
  end(): void {
    if (this.#rest) this.onLine(this.#rest);
    this.#rest = "";
  }
}
