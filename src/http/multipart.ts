/**
 * Multipart uploads streamed to an upstream. The gateway reads a `multipart/form-data` body only
 * until the text field it routes by (`model`) has passed, rewrites that field, and streams the
 * rest to the upstream as it arrives, within a size limit: a body is never held whole, let alone
 * twice. The scanner works on bytes and resumes where it stopped, so each byte is searched once.
 */
import { GatewayError } from "./errors.ts";

/** The boundary of a `multipart/form-data` content type, or null for any other type. */
export function boundaryOf(contentType: string): string | null {
  if (!/^multipart\/form-data\s*;/i.test(contentType)) return null;
  const match = /;\s*boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(contentType);
  return match ? match[1] ?? match[2] : null;
}

/** One complete part: its name, whether it is a file, and where its value lies in the buffer. */
export interface Part {
  name: string;
  filename: string | null;
  valueStart: number;
  valueEnd: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const CRLFCRLF = encoder.encode("\r\n\r\n");

function indexOf(hay: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0];
  const last = hay.length - needle.length;
  for (let i = hay.indexOf(first, from); i >= 0 && i <= last; i = hay.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

/** Finds complete parts in bytes pushed in arbitrary chunks. */
export class PartScanner {
  #buffer = new Uint8Array(64 * 1024);
  #length = 0;
  /** Where the next part's delimiter starts (-1 until the first delimiter is found). */
  #partAt = -1;
  /** How far the current part's value has been searched for its end. */
  #searchedTo = 0;
  #ended = false;
  readonly #delimiter: Uint8Array;
  readonly #closing: Uint8Array;
  readonly parts: Part[] = [];

  constructor(boundary: string) {
    this.#delimiter = encoder.encode(`--${boundary}`);
    this.#closing = encoder.encode(`\r\n--${boundary}`);
  }

  /** The bytes pushed so far. */
  get bytes(): Uint8Array {
    return this.#buffer.subarray(0, this.#length);
  }

  /** Appends a chunk and returns the parts it completed. */
  push(chunk: Uint8Array): Part[] {
    if (this.#length + chunk.length > this.#buffer.length) {
      const grown = new Uint8Array(Math.max(this.#buffer.length * 2, this.#length + chunk.length));
      grown.set(this.bytes);
      this.#buffer = grown;
    }
    this.#buffer.set(chunk, this.#length);
    this.#length += chunk.length;
    return this.#scan();
  }

  #scan(): Part[] {
    const bytes = this.bytes;
    const found: Part[] = [];
    if (this.#partAt < 0) {
      this.#partAt = indexOf(bytes, this.#delimiter, 0);
      if (this.#partAt < 0) return found;
    }
    while (!this.#ended) {
      const afterDelimiter = this.#partAt + this.#delimiter.length;
      if (bytes.length < afterDelimiter + 2) break;
      if (bytes[afterDelimiter] === 45 && bytes[afterDelimiter + 1] === 45) {
        this.#ended = true; // "--boundary--": the closing delimiter
        break;
      }
      const headersEnd = indexOf(bytes, CRLFCRLF, afterDelimiter);
      if (headersEnd < 0) break;
      const valueStart = headersEnd + 4;
      const from = Math.max(valueStart, this.#searchedTo);
      const valueEnd = indexOf(bytes, this.#closing, from);
      if (valueEnd < 0) {
        this.#searchedTo = Math.max(valueStart, bytes.length - this.#closing.length + 1);
        break;
      }
      const headers = decoder.decode(bytes.subarray(afterDelimiter, headersEnd));
      const part: Part = {
        name: /\bname="([^"]*)"/i.exec(headers)?.[1] ?? "",
        filename: /\bfilename="([^"]*)"/i.exec(headers)?.[1] ?? null,
        valueStart,
        valueEnd,
      };
      this.parts.push(part);
      found.push(part);
      this.#partAt = valueEnd + 2;
      this.#searchedTo = 0;
    }
    return found;
  }
}

/** The head of a multipart body: read up to the routing field, the rest still unread. */
export interface MultipartHead {
  /** Complete text fields read so far (file parts excluded). */
  fields: Record<string, string>;
  /** The bytes read so far, with the routing field rewritten by `withField`. */
  prefix: Uint8Array;
  /** The unread rest of the body; null when the body has ended. */
  rest: ReadableStreamDefaultReader<Uint8Array> | null;
  /** Bytes read so far. */
  size: number;
}

/**
 * Reads `body` until the text field `field` is complete (or the body ends), within `limit` bytes
 * (413 past it).
 */
export async function readMultipartHead(
  body: ReadableStream<Uint8Array>,
  boundary: string,
  field: string,
  limit: number,
): Promise<MultipartHead & { scanner: PartScanner }> {
  const scanner = new PartScanner(boundary);
  const reader = body.getReader();
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      return { fields: textFields(scanner), prefix: scanner.bytes, rest: null, size, scanner };
    }
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw uploadTooLarge(limit);
    }
    if (scanner.push(value).some((p) => p.name === field && p.filename === null)) {
      return { fields: textFields(scanner), prefix: scanner.bytes, rest: reader, size, scanner };
    }
  }
}

function textFields(scanner: PartScanner): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const part of scanner.parts) {
    if (part.filename !== null || part.valueEnd - part.valueStart > 4096) continue;
    fields[part.name] = decoder.decode(scanner.bytes.subarray(part.valueStart, part.valueEnd));
  }
  return fields;
}

/** `bytes` with the value of the text part `name` replaced (unchanged if there is none). */
export function withField(bytes: Uint8Array, parts: Part[], name: string, value: string) {
  const part = parts.find((p) => p.name === name && p.filename === null);
  if (!part) return bytes;
  const replacement = encoder.encode(value);
  const out = new Uint8Array(bytes.length - (part.valueEnd - part.valueStart) + replacement.length);
  out.set(bytes.subarray(0, part.valueStart));
  out.set(replacement, part.valueStart);
  out.set(bytes.subarray(part.valueEnd), part.valueStart + replacement.length);
  return out;
}

/** A body for the upstream: the prefix, then the rest as it arrives; `exceeded` past `limit`. */
export interface Upload {
  stream: ReadableStream<Uint8Array>;
  /** True once the body went past the limit (the stream was failed). */
  readonly exceeded: boolean;
}

/** Streams `head` (prefix first, then the unread rest) within `limit` bytes in total. */
export function continueUpload(head: MultipartHead, limit: number): Upload {
  let size = head.size;
  let prefixSent = false;
  let exceeded = false;
  const rest = head.rest;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!prefixSent) {
        prefixSent = true;
        controller.enqueue(head.prefix);
        if (!rest) controller.close();
        return;
      }
      const { done, value } = await rest!.read();
      if (done) return controller.close();
      size += value.byteLength;
      if (size > limit) {
        exceeded = true;
        await rest!.cancel().catch(() => {});
        controller.error(uploadTooLarge(limit));
        return;
      }
      controller.enqueue(value);
    },
    async cancel(reason) {
      await rest?.cancel(reason).catch(() => {});
    },
  });
  return {
    stream,
    get exceeded() {
      return exceeded;
    },
  };
}

/** The 413 for an upload past the limit. */
export function uploadTooLarge(limit: number): GatewayError {
  return new GatewayError(413, `The upload is larger than the limit of ${limit} bytes`);
}
