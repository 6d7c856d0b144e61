/** Byte helpers shared by the readers of bodies and streams. */

/** Joins chunks into one array (one copy). */
export function concatBytes(parts: Uint8Array[], length?: number): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(length ?? parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** The smallest buffer a `ChunkReader` reads into: a slow stream's pending read holds this much. */
export const READ_BUFFER_MIN = 1024;
/** The largest: a stream whose reads fill the buffer has it doubled up to this. */
export const READ_BUFFER_MAX = 64 * 1024;
/** Reads in a row that use at most a quarter of the buffer before it is made smaller. */
const SHRINK_AFTER = 8;

/** Reads a byte stream a chunk at a time (see `chunkReader`). */
export interface ChunkReader {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  cancel(reason?: unknown): Promise<void>;
  /** Rejects once the stream errors (whether or not a read is pending); resolves when it ends. */
  closed: Promise<void>;
}

/**
 * A reader of `stream` that reads into one buffer, reused from read to read, and hands out an
 * exact copy of each chunk. A default reader of a fetch or request body allocates a fresh 64 KiB
 * buffer per read, which made every relayed SSE event cost 64 KiB of zeroed memory and kept one
 * such buffer per open stream. The buffer is sized to the traffic: it starts at `READ_BUFFER_MIN`
 * (a slow stream, waiting for its next event, holds no more), doubles whenever a read fills it (up
 * to `READ_BUFFER_MAX`), and after `SHRINK_AFTER` reads in a row that used at most a quarter of it
 * comes down to twice the longest of them. `size` fixes it instead. Streams that are not byte streams are read as they are.
 */
export function chunkReader(stream: ReadableStream<Uint8Array>, size?: number): ChunkReader {
  let byob: ReadableStreamBYOBReader;
  try {
    byob = stream.getReader({ mode: "byob" });
  } catch {
    return stream.getReader();
  }
  const min = size ?? READ_BUFFER_MIN;
  const max = size ?? READ_BUFFER_MAX;
  let buffer = new ArrayBuffer(min);
  /** Reads in a row that used at most a quarter of the buffer, and the longest of them. */
  let small = 0;
  let longest = 0;
  return {
    async read() {
      const result = await byob.read(new Uint8Array(buffer));
      if (!result.value) return { done: true, value: undefined };
      const length = result.value.length;
      buffer = result.value.buffer as ArrayBuffer; // handed back, to reuse
      const have = buffer.byteLength;
      if (length === have && have < max) {
        buffer = new ArrayBuffer(Math.min(max, 2 * have)); // a full read: more is coming
        small = 0;
      } else if (length <= have / 4 && have > min) {
        longest = small++ ? Math.max(longest, length) : length;
        if (small >= SHRINK_AFTER) {
          // Down to twice the longest of those reads (a power of two), at least `min`.
          let next = min;
          while (next < 2 * longest) next *= 2;
          buffer = new ArrayBuffer(next);
          small = 0;
        }
      } else small = 0;
      if (result.done) return { done: true, value: undefined };
      return { done: false, value: result.value.slice() };
    },
    cancel: (reason) => byob.cancel(reason),
    closed: byob.closed,
  };
}
