/** Incremental line splitting for text streams: `\n`, `\r\n` and `\r` all end a line. */

/** Feeds text in arbitrary chunks, calls `onLine` for every complete line (without its ending). */
export class LineSplitter {
  #rest = "";
  #pendingCR = false;

  constructor(private readonly onLine: (line: string) => void) {}

  push(text: string): void {
    let start = 0;
    if (this.#pendingCR && text.startsWith("\n")) start = 1; // the \n of a \r\n split across chunks
    this.#pendingCR = false;
    const length = text.length;
    for (let i = start; i < length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.onLine(this.#rest + text.slice(start, i));
      this.#rest = "";
      if (c === 13) {
        if (i + 1 < length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else {
          this.#pendingCR = true;
        }
      }
      start = i + 1;
    }
    if (start < length) this.#rest += text.slice(start);
  }

  /** Emits what is left as a last line, if anything. */
  end(): void {
    if (this.#rest) this.onLine(this.#rest);
    this.#rest = "";
  }
}
