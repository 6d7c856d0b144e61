/**
 * `deno bench --allow-read=tests/fixtures --lock=tests/deno.lock bench/sse_scan_bench.ts`: what
 * the SSE scanner costs a relay per upstream stream, on the recorded Messages and Responses streams
 * (named events), each pushed an event a chunk as upstreams send them, every event's name read
 * (what a meter looks at first) and its data left undecoded (a relay decodes only what it reads).
 */
import { SseScanner } from "../src/http/sse.ts";
import { perEvent } from "./sse_chunks.ts";

const transcripts = new URL("../tests/fixtures/transcripts/", import.meta.url);

/** A recorded stream's body, an event a chunk. */
function chunks(file: string): Uint8Array[] {
  const recorded = JSON.parse(Deno.readTextFileSync(new URL(file, transcripts)));
  return perEvent(new TextEncoder().encode(recorded.response.body_text));
}

let names = 0;
function scan(stream: Uint8Array[]): void {
  const scanner = new SseScanner((event) => void (names += event.event.length));
  for (const chunk of stream) scanner.push(chunk);
  scanner.end();
}

for (
  const [name, file] of [
    ["Messages, named events", "anthropic/messages-text-stream.json"],
    ["Responses, named events", "openai/responses-text-stream.json"],
  ]
) {
  const stream = chunks(file);
  Deno.bench(`${name} (${stream.length} events)`, () => scan(stream));
}
