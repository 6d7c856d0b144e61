/** `chunkReader`: one reused buffer per stream, sized to the traffic; exact, independent chunks. */
import assert from "node:assert/strict";
import {
  chunkReader,
  concatBytes as concat,
  READ_BUFFER_MAX,
  READ_BUFFER_MIN,
} from "../../../src/http/bytes.ts";

const text = new TextEncoder();

/** A byte stream (like a fetch body) that delivers `parts` one per pull. */
function byteStream(parts: Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      if (i < parts.length) controller.enqueue(parts[i++]);
      else {
        controller.close();
        controller.byobRequest?.respond(0); // a pending BYOB read learns of the end
      }
    },
  });
}

async function readAll(stream: ReadableStream<Uint8Array>, size?: number) {
  const reader = chunkReader(stream, size);
  const chunks: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push(value);
  }
}

Deno.test("a byte stream is read into one buffer, and every chunk handed out stays intact", async () => {
  const parts = ["data: one\n\n", "data: two\n\n", "x".repeat(40_000)].map((s) => text.encode(s));
  const chunks = await readAll(byteStream(parts), 16 * 1024);
  // Earlier chunks are copies: later reads into the reused buffer leave them as they were.
  assert.equal(new TextDecoder().decode(chunks[0]), "data: one\n\n");
  assert.equal(new TextDecoder().decode(chunks[1]), "data: two\n\n");
  assert.equal(chunks.slice(2).reduce((n, c) => n + c.length, 0), 40_000, "a long part in pieces");
  assert.ok(chunks.slice(2).every((c) => c.length <= 16 * 1024));
  assert.ok(chunks.every((c) => c.buffer.byteLength === c.length), "exact copies, no 64 KiB views");
});

Deno.test("a fetch body is read the same way; a stream that is not a byte stream as it is", async () => {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response("abc".repeat(10_000)),
  );
  const answer = await fetch(`http://127.0.0.1:${server.addr.port}/`);
  const fromFetch = await readAll(answer.body!, 4096);
  await server.shutdown();
  assert.equal(new TextDecoder().decode(concat(fromFetch)), "abc".repeat(10_000));
  assert.ok(fromFetch.every((c) => c.length <= 4096));
  const plain = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(text.encode("whole"));
      controller.close();
    },
  });
  assert.deepEqual(await readAll(plain), [text.encode("whole")]);
});

Deno.test("cancelling the reader cancels the stream", async () => {
  let reason: unknown;
  const stream = new ReadableStream<Uint8Array>({
    type: "bytes",
    pull(controller) {
      controller.enqueue(text.encode("more"));
    },
    cancel(why) {
      reason = why;
    },
  });
  const reader = chunkReader(stream);
  await reader.read();
  await reader.cancel("client gone");
  assert.equal(reason, "client gone");
});

/**
 * A byte stream that hands `chunk` bytes per pull and records the size of each read's buffer
 * (what a pending read holds).
 */
function recordingStream(chunks: number[]) {
  const buffers: number[] = [];
  let i = 0;
  const stream = new ReadableStream({
    type: "bytes",
    pull(controller: ReadableByteStreamController) {
      const view = controller.byobRequest!.view!;
      buffers.push(view.byteLength);
      if (i >= chunks.length) {
        controller.close();
        controller.byobRequest!.respond(0);
        return;
      }
      const n = Math.min(chunks[i++], view.byteLength);
      new Uint8Array(view.buffer, view.byteOffset, n).fill(120);
      controller.byobRequest!.respond(n);
    },
  });
  return { stream, buffers };
}

Deno.test("the read buffer starts small, doubles while reads fill it, and halves once they are small", async () => {
  // Bursts of 64 KiB, then small events.
  const { stream, buffers } = recordingStream([
    ...Array(7).fill(64 * 1024),
    ...Array(10).fill(100),
  ]);
  const chunks = await readAll(stream);
  assert.equal(buffers[0], READ_BUFFER_MIN, "a stream starts with the smallest buffer");
  assert.deepEqual(buffers.slice(0, 7), [1, 2, 4, 8, 16, 32, 64].map((k) => k * 1024));
  assert.equal(Math.max(...buffers), READ_BUFFER_MAX);
  assert.equal(buffers.at(-1), READ_BUFFER_MIN, "back to the smallest once the reads are small");
  assert.ok(chunks.every((c) => c.buffer.byteLength === c.length), "exact copies");
});

Deno.test("a fixed size is kept whatever the reads", async () => {
  const { stream, buffers } = recordingStream([4096, 4096, 10, 10, 10, 10, 10, 10, 10, 10, 10]);
  await readAll(stream, 4096);
  assert.ok(buffers.every((b) => b === 4096), buffers.join());
});
