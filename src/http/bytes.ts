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

/** The buffer a `ChunkReader` reads into (one per stream, reused). */
export const READ_BUFFER_BYTES = 16 * 1024;

/** Reads a byte stream a chunk at a time (see `chunkReader`). */
export interface ChunkReader {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  cancel(reason?: unknown): Promise<void>;
}

/**
 * A reader of `stream` that reads into one buffer of `size` bytes, reused for every read, and
 * hands out an exact copy of each chunk. A default reader of a fetch or request body allocates a
 * fresh 64 KiB buffer per read, which made every relayed SSE event cost 64 KiB of zeroed memory
 * and kept one such buffer per open stream. Streams that are not byte streams are read as they are.
 */
export function chunkReader(
  stream: ReadableStream<Uint8Array>,
  size = READ_BUFFER_BYTES,
): ChunkReader {
  let byob: ReadableStreamBYOBReader;
  try {
    byob = stream.getReader({ mode: "byob" });
  } catch {
    return stream.getReader();
  }
  let buffer = new ArrayBuffer(size);
  return {
    async read() {
      const result = await byob.read(new Uint8Array(buffer));
      if (result.value) buffer = result.value.buffer as ArrayBuffer; // handed back, to reuse
      if (result.done) return { done: true, value: undefined };
      return { done: false, value: result.value.slice() };
    },
    cancel: (reason) => byob.cancel(reason),
  };
}
