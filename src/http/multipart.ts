/**
 * Multipart uploads spooled to disk. The gateway reads a whole `multipart/form-data` body, writes
 * its raw bytes to a temporary file as they arrive and parses the part structure on the way: the
 * text fields are kept (name, value and where the value lies in the body), file parts are only
 * counted. Memory use is one chunk plus the text fields, never the body.
 *
 * The parser is a resumable state machine fed one chunk at a time. It never rescans a byte and
 * never carries a growing buffer: the delimiter `\r\n--boundary` is searched with the native
 * `Uint8Array.prototype.indexOf` for its CR, each candidate is verified byte by byte, and a
 * candidate cut by the end of a chunk is carried as "the first k bytes of the delimiter matched"
 * (at most delimiter length − 1 bytes, known without copying). The boundary holds no CR, so two
 * candidates never overlap and the search is linear on any input, pathological ones included.
 */
import { GatewayError } from "./errors.ts";

/** The boundary of a `multipart/form-data` content type, or null for any other type. */
export function boundaryOf(contentType: string): string | null {
  if (!/^multipart\/form-data\s*;/i.test(contentType)) return null;
  const match = /;\s*boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(contentType);
  return match ? match[1] ?? match[2] : null;
}

/** The 413 for an upload past the limit. */
export function uploadTooLarge(limit: number): GatewayError {
  return new GatewayError(413, `The upload is larger than the limit of ${limit} bytes`, {
    headers: { connection: "close" },
  });
}

/** One text field of a multipart body. */
export interface SpooledField {
  /** The field name from `Content-Disposition`. */
  name: string;
  /** The value decoded as UTF-8. */
  value: string;
  /** Where the raw value starts in the body (byte offset, inclusive). */
  start: number;
  /** Where the raw value ends in the body (byte offset, exclusive). */
  end: number;
}

/** A multipart body read whole into a spool file, with its text fields parsed. */
export interface SpooledForm {
  /** Text fields in order of appearance; file parts excluded. */
  fields: SpooledField[];
  /** File parts by field name → count. */
  files: Map<string, number>;
  /** Size of the raw body in bytes. */
  size: number;
  /**
   * The spooled raw body as a stream, with the values of the given text fields (by index into
   * `fields`) replaced; `length` is the resulting byte length (for content-length). Streams
   * straight from the file. Throws a `RangeError` for an index that names no field.
   */
  open(replace?: Map<number, string>): { body: ReadableStream<Uint8Array>; length: number };
  /** Deletes the spool file (idempotent). */
  remove(): Promise<void>;
}

/** Options of `spoolMultipart`. */
export interface SpoolOptions {
  /** Directory for the spool file (created if missing). */
  dir: string;
  /** Largest body in bytes (413 past it). */
  limit: number;
  /** Largest text field value in bytes (400 naming the field past it). */
  maxFieldBytes: number;
  /** Aborts the upload (the caller's deadline): 408, or the reason if it is a `GatewayError`. */
  signal?: AbortSignal;
}

/** The most bytes all text fields of a form may have together (they are kept in memory). */
export const MAX_TEXT_BYTES = 1024 * 1024;

/** Most text fields and distinct file field names a form may have (400 past it). */
export const MAX_PARTS = 1000;

/** Longest part header block (400 past it). */
export const MAX_PART_HEADER_BYTES = 16 * 1024;

const SPOOL_NAME = /^upload-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.part$/;
const READ_SIZE = 64 * 1024;
const CR = 13;
const LF = 10;
const DASH = 45;
const CRLFCRLF = [CR, LF, CR, LF];
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Reads `body` whole into a new spool file in `options.dir` while parsing its parts. On any error
 * (limits, malformed body, abort, I/O) the reader is cancelled and the file removed first.
 */
export async function spoolMultipart(
  body: ReadableStream<Uint8Array>,
  boundary: string,
  options: SpoolOptions,
): Promise<SpooledForm> {
  const { dir, limit, maxFieldBytes, signal } = options;
  if (boundary.length < 1 || boundary.length > 70 || /[\r\n]/.test(boundary)) {
    throw new GatewayError(400, "The multipart boundary must be 1 to 70 characters without CR/LF");
  }
  const path = join(dir, `upload-${crypto.randomUUID()}.part`);
  const reader = body.getReader();
  const onAbort = () => void reader.cancel(signal?.reason).catch(() => {});
  let file: Deno.FsFile | null = null;
  try {
    if (signal?.aborted) throw abortError(signal);
    signal?.addEventListener("abort", onAbort, { once: true });
    file = await createSpool(dir, path);
    const parser = new MultipartParser(boundary, maxFieldBytes);
    let size = 0;
    for (;;) {
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await reader.read();
      } catch (error) {
        if (signal?.aborted) throw abortError(signal);
        throw new GatewayError(400, `The upload could not be read: ${messageOf(error)}`);
      }
      if (signal?.aborted) throw abortError(signal);
      if (result.done) break;
      const chunk = result.value;
      if (size + chunk.byteLength > limit) throw uploadTooLarge(limit);
      writeAll(file, chunk);
      parser.push(chunk, size);
      size += chunk.byteLength;
      if (signal?.aborted) throw abortError(signal);
    }
    parser.finish();
    file.close();
    file = null;
    return spooledForm(path, parser.fields, parser.files, size);
  } catch (error) {
    await reader.cancel(error).catch(() => {});
    try {
      file?.close();
    } catch { /* already closed */ }
    await removeFile(path).catch(() => {});
    throw error instanceof GatewayError ? error : (signal?.aborted ? abortError(signal) : error);
  } finally {
    signal?.removeEventListener("abort", onAbort);
    reader.releaseLock();
  }
}

/** `name` in `dir` (node:path's `join` would load Deno's Node compatibility layer at start). */
function join(dir: string, name: string): string {
  return dir.endsWith("/") ? dir + name : `${dir}/${name}`;
}

/** Removes leftover spool files in `dir` (at startup after a crash); creates `dir` if missing. */
export async function clearSpool(dir: string): Promise<number> {
  await Deno.mkdir(dir, { recursive: true });
  let removed = 0;
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.isFile || !SPOOL_NAME.test(entry.name)) continue;
    await removeFile(join(dir, entry.name));
    removed++;
  }
  return removed;
}

function abortError(signal: AbortSignal): GatewayError {
  if (signal.reason instanceof GatewayError) return signal.reason;
  return new GatewayError(
    408,
    "The upload was not received in time: the request body did not arrive before the deadline",
    { headers: { connection: "close" } },
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function createSpool(dir: string, path: string): Promise<Deno.FsFile> {
  const options = { write: true, createNew: true, mode: 0o600 };
  try {
    return await Deno.open(path, options);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    await Deno.mkdir(dir, { recursive: true });
    return await Deno.open(path, options);
  }
}

/**
 * Writes a chunk to the spool file. Synchronously: a chunk to local disk takes microseconds, and
 * an awaited write per chunk inside a server handler costs milliseconds in scheduling (200 MB
 * spooled in 19 s instead of 0.5 s).
 */
function writeAll(file: Deno.FsFile, bytes: Uint8Array): void {
  for (let written = 0; written < bytes.length;) {
    written += file.writeSync(bytes.subarray(written));
  }
}

async function removeFile(path: string): Promise<void> {
  try {
    await Deno.remove(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/** A piece of the output of `open`: a range of the spool file or replacement bytes. */
type Piece = { from: number; to: number } | Uint8Array;

function spooledForm(
  path: string,
  fields: SpooledField[],
  files: Map<string, number>,
  size: number,
): SpooledForm {
  let removal: Promise<void> | null = null;
  return {
    fields,
    files,
    size,
    open(replace = new Map()) {
      if (removal) throw new Error("The spooled upload was removed");
      const edits = [...replace].map(([index, value]) => {
        const field = fields[index];
        if (!field) throw new RangeError(`No text field at index ${index}`);
        return { field, bytes: encoder.encode(value) };
      }).sort((a, b) => a.field.start - b.field.start);
      const pieces: Piece[] = [];
      let at = 0;
      let length = size;
      for (const { field, bytes } of edits) {
        if (field.start > at) pieces.push({ from: at, to: field.start });
        pieces.push(bytes);
        at = field.end;
        length += bytes.length - (field.end - field.start);
      }
      if (at < size) pieces.push({ from: at, to: size });
      return { body: spoolStream(path, pieces), length };
    },
    remove() {
      removal ??= removeFile(path);
      return removal;
    },
  };
}

/** Streams `pieces` in order, reading file ranges from `path` in chunks of `READ_SIZE`. */
function spoolStream(path: string, pieces: Piece[]): ReadableStream<Uint8Array> {
  let file: Deno.FsFile | null = null;
  let index = 0;
  let position = -1;
  const close = () => {
    try {
      file?.close();
    } catch { /* already closed */ }
    file = null;
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        for (; index < pieces.length; index++) {
          const piece = pieces[index];
          if (piece instanceof Uint8Array) {
            if (piece.length === 0) continue;
            index++;
            return controller.enqueue(piece);
          }
          file ??= await Deno.open(path);
          if (position < piece.from || position >= piece.to) {
            position = piece.from;
            await file.seek(position, Deno.SeekMode.Start);
          }
          const buffer = new Uint8Array(Math.min(READ_SIZE, piece.to - position));
          const read = await file.read(buffer);
          if (read === null || read === 0) {
            throw new Error("The spool file is shorter than the body");
          }
          position += read;
          if (position >= piece.to) {
            index++;
            position = -1;
          }
          return controller.enqueue(buffer.subarray(0, read));
        }
        close();
        controller.close();
      } catch (error) {
        close();
        controller.error(error);
      }
    },
    cancel() {
      close();
    },
  }, { highWaterMark: 0 });
}

/** Where the parser is in the body. */
enum State {
  /** Before the first delimiter (the preamble is skipped). */
  Preamble,
  /** Right after a delimiter: `--` (the end), padding, or the CRLF before the headers. */
  AfterDelimiter,
  /** Read one `-` after a delimiter; the next must be `-`. */
  Dash,
  /** Read transport padding (spaces, tabs) after a delimiter. */
  Padding,
  /** Read the CR ending the delimiter line; the next must be LF. */
  LineEnd,
  /** Reading a part's headers up to CRLFCRLF. */
  Headers,
  /** Reading a part's value up to the next delimiter. */
  Value,
  /** After the closing delimiter (the epilogue is skipped). */
  End,
}

/** The incremental parser: bytes in, text fields and file counts out. */
class MultipartParser {
  readonly fields: SpooledField[] = [];
  readonly files = new Map<string, number>();
  readonly #delimiter: Uint8Array;
  readonly #maxFieldBytes: number;
  /** Bytes of all text fields so far (they are kept in memory). */
  #textLength = 0;
  /** The body starts as if preceded by CRLF, so `--boundary` at offset 0 is a delimiter too. */
  #state = State.Preamble;
  /** Bytes of the delimiter matched at the end of the previous chunk (carried, not copied). */
  #matched = 2;
  /** Body offset where the carried partial delimiter starts. */
  #matchStart = -2;
  /** The header block, seeded with the delimiter line's CRLF so empty headers end at once. */
  #headers = new Uint8Array(MAX_PART_HEADER_BYTES + 6);
  #headersLength = 0;
  /** Bytes of CRLFCRLF matched at the end of the header block so far. */
  #terminator = 0;
  #padding = 0;
  #parts = 0;
  /** The current part. */
  #name = "";
  #isFile = false;
  #valueStart = 0;
  #valueChunks: Uint8Array[] = [];
  #valueLength = 0;

  constructor(boundary: string, maxFieldBytes: number) {
    this.#delimiter = encoder.encode(`\r\n--${boundary}`);
    this.#maxFieldBytes = maxFieldBytes;
  }

  /** Parses `chunk`, which starts at body offset `offset`. */
  push(chunk: Uint8Array, offset: number): void {
    let p = 0;
    while (p < chunk.length) {
      switch (this.#state) {
        case State.Preamble:
        case State.Value:
          p = this.#search(chunk, p, offset);
          break;
        case State.AfterDelimiter: {
          const byte = chunk[p++];
          if (byte === DASH) this.#state = State.Dash;
          else if (byte === CR) this.#state = State.LineEnd;
          else if (byte === 32 || byte === 9) {
            this.#state = State.Padding;
            this.#padding = 1;
          } else throw malformed("a delimiter is followed by other characters than CRLF or --");
          break;
        }
        case State.Dash:
          if (chunk[p++] !== DASH) throw malformed("a delimiter is followed by a single -");
          if (this.#parts === 0) throw new GatewayError(400, "The multipart body has no parts");
          this.#state = State.End;
          break;
        case State.Padding: {
          const byte = chunk[p++];
          if (byte === CR) this.#state = State.LineEnd;
          else if (byte !== 32 && byte !== 9) {
            throw malformed("a delimiter is followed by other characters than CRLF or --");
          } else if (++this.#padding > MAX_PART_HEADER_BYTES) throw headersTooLong();
          break;
        }
        case State.LineEnd:
          if (chunk[p++] !== LF) throw malformed("a delimiter line does not end with CRLF");
          this.#headers[0] = CR;
          this.#headers[1] = LF;
          this.#headersLength = 2;
          this.#terminator = 2;
          this.#state = State.Headers;
          break;
        case State.Headers:
          p = this.#readHeaders(chunk, p, offset);
          break;
        case State.End:
          return; // the epilogue is spooled, not parsed
      }
    }
  }

  /** Checks that the body ended after its closing delimiter. */
  finish(): void {
    if (this.#state === State.End) return;
    if (this.#state === State.Preamble) {
      throw malformed("no delimiter (--boundary) was found");
    }
    throw malformed("the body ended before the closing delimiter (--boundary--)");
  }

  /**
   * Searches `chunk` from `p` for the delimiter, handing the bytes before it to the current part;
   * returns where parsing goes on (the chunk's length if no delimiter ended in it).
   */
  #search(chunk: Uint8Array, p: number, offset: number): number {
    const delimiter = this.#delimiter;
    const n = chunk.length;
    if (this.#matched > 0) {
      let j = this.#matched;
      let i = p;
      while (j < delimiter.length && i < n && chunk[i] === delimiter[j]) {
        i++;
        j++;
      }
      if (j === delimiter.length) {
        this.#matched = 0;
        this.#delimiterFound(this.#matchStart);
        return i;
      }
      if (i === n) {
        this.#matched = j;
        return n;
      }
      // Not a delimiter: the carried bytes were data. They hold no CR past their first byte,
      // and neither do chunk[p, i), so the search goes on from i.
      if (this.#matchStart >= 0) this.#data(delimiter.subarray(0, this.#matched));
      this.#matched = 0;
      const from = p;
      p = i;
      return this.#scan(chunk, from, p, offset);
    }
    return this.#scan(chunk, p, p, offset);
  }

  /** Scans for candidates from `p`; `dataFrom` is where the current part's unhanded data starts. */
  #scan(chunk: Uint8Array, dataFrom: number, p: number, offset: number): number {
    const delimiter = this.#delimiter;
    const n = chunk.length;
    for (;;) {
      // A failed candidate often ends on the next CR (a run of CRs): take it without a native call.
      const c = chunk[p] === CR ? p : chunk.indexOf(CR, p);
      if (c < 0) {
        this.#data(chunk.subarray(dataFrom, n));
        return n;
      }
      let j = 1;
      let i = c + 1;
      while (j < delimiter.length && i < n && chunk[i] === delimiter[j]) {
        i++;
        j++;
      }
      if (j === delimiter.length) {
        this.#data(chunk.subarray(dataFrom, c));
        this.#delimiterFound(offset + c);
        return i;
      }
      if (i === n) {
        this.#data(chunk.subarray(dataFrom, c));
        this.#matched = j;
        this.#matchStart = offset + c;
        return n;
      }
      p = i; // chunk[c + 1, i) matched delimiter bytes, none of them a CR
    }
  }

  /** Bytes of the current part's value (or of the preamble). */
  #data(bytes: Uint8Array): void {
    if (this.#state !== State.Value || this.#isFile || bytes.length === 0) return;
    this.#valueLength += bytes.length;
    this.#textLength += bytes.length;
    if (this.#textLength > MAX_TEXT_BYTES) {
      throw new GatewayError(400, `The form's text fields are larger than ${MAX_TEXT_BYTES} bytes`);
    }
    if (this.#valueLength > this.#maxFieldBytes) {
      throw new GatewayError(
        400,
        `The text field '${this.#name}' is larger than ${this.#maxFieldBytes} bytes`,
        { param: this.#name },
      );
    }
    this.#valueChunks.push(bytes.slice());
  }

  /** A delimiter starts at body offset `at`: the current part (if any) ends there. */
  #delimiterFound(at: number): void {
    if (this.#state === State.Value) {
      if (this.fields.length + this.files.size >= MAX_PARTS) {
        throw new GatewayError(400, `The form has more than ${MAX_PARTS} parts`);
      }
      if (this.#isFile) {
        this.files.set(this.#name, (this.files.get(this.#name) ?? 0) + 1);
      } else {
        const value = new Uint8Array(this.#valueLength);
        let o = 0;
        for (const piece of this.#valueChunks) {
          value.set(piece, o);
          o += piece.length;
        }
        this.fields.push({
          name: this.#name,
          value: decoder.decode(value),
          start: this.#valueStart,
          end: at,
        });
      }
      this.#valueChunks = [];
      this.#valueLength = 0;
    }
    this.#state = State.AfterDelimiter;
  }

  /**
   * Appends header bytes up to CRLFCRLF, matched byte by byte (each byte once); returns where the
   * value starts in `chunk`, or the chunk's length if the headers go on.
   */
  #readHeaders(chunk: Uint8Array, p: number, offset: number): number {
    const buffer = this.#headers;
    const room = buffer.length - this.#headersLength;
    const stop = Math.min(chunk.length, p + room + 1);
    let k = this.#terminator;
    let i = p;
    while (i < stop && k < 4) {
      const byte = chunk[i++];
      k = byte === CRLFCRLF[k] ? k + 1 : byte === CR ? 1 : 0;
    }
    // Past the room, the headers are longer than the limit even if the terminator came next.
    if (i - p > room) throw headersTooLong();
    buffer.set(chunk.subarray(p, i), this.#headersLength);
    this.#headersLength += i - p;
    this.#terminator = k;
    if (k < 4) return i;
    const end = this.#headersLength - 4;
    this.#startPart(decoder.decode(buffer.subarray(2, Math.max(2, end))), offset + i);
    return i;
  }

  #startPart(headers: string, valueStart: number): void {
    const disposition = headers.split("\r\n")
      .find((line) => /^content-disposition\s*:/i.test(line)) ?? "";
    const params = new Map<string, string>();
    for (const m of disposition.matchAll(/;\s*([^\s=;]+)\s*=\s*(?:"([^"]*)"|([^\s;]*))/g)) {
      const key = m[1].toLowerCase();
      if (!params.has(key)) params.set(key, m[2] ?? m[3]);
    }
    this.#parts++;
    this.#name = params.get("name") ?? "";
    this.#isFile = params.has("filename") || params.has("filename*");
    this.#valueStart = valueStart;
    this.#state = State.Value;
  }
}

function malformed(why: string): GatewayError {
  return new GatewayError(400, `The multipart body is malformed: ${why}`);
}

function headersTooLong(): GatewayError {
  return new GatewayError(
    400,
    `A multipart part has headers longer than ${MAX_PART_HEADER_BYTES} bytes`,
  );
}
