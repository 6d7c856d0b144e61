import assert from "node:assert/strict";
import { encodeSse, type SseEvent, SseScanner } from "../../src/http/sse.ts";

function scan(chunks: Uint8Array[]): { event: string; data: string }[] {
  const events: SseEvent[] = [];
  const scanner = new SseScanner((e) => events.push(e));
  for (const chunk of chunks) scanner.push(chunk);
  scanner.end();
  return events.map((e) => ({ event: e.event, data: e.data() }));
}

Deno.test("SseScanner reads named and data-only events, comments, CRLF and multi-line data, split anywhere", () => {
  const text = 'event: ping\ndata: {"type": "ping"}\n\n: comment\n\r\n' +
    'data: {"a":"é"}\r\n\r\ndata: one\ndata: two\n\nevent: x\ndata:no-space\n\ndata: last';
  const bytes = new TextEncoder().encode(text);
  const expected = [
    { event: "ping", data: '{"type": "ping"}' },
    { event: "", data: '{"a":"é"}' },
    { event: "", data: "one\ntwo" },
    { event: "x", data: "no-space" },
    { event: "", data: "last" },
  ];
  for (let cut = 0; cut <= bytes.length; cut++) {
    assert.deepEqual(scan([bytes.subarray(0, cut), bytes.subarray(cut)]), expected, `cut ${cut}`);
  }
  assert.deepEqual(scan(Array.from(bytes, (b) => new Uint8Array([b]))), expected, "byte by byte");
});

Deno.test("the scanner reads the recorded upstream streams event by event", async () => {
  const transcripts = new URL("../../../shared/transcripts/", import.meta.url);
  const names = async (file: string) => {
    const recorded = JSON.parse(await Deno.readTextFile(new URL(file, transcripts)));
    return scan([new TextEncoder().encode(recorded.response.body_text)]);
  };
  const responses = await names("openai/responses-text-stream.json");
  assert.equal(responses[0].event, "response.created");
  assert.equal(responses.at(-1)!.event, "response.completed");
  assert.equal(JSON.parse(responses.at(-1)!.data).response.usage.output_tokens, 10);
  const anthropic = await names("anthropic/messages-text-stream.json");
  assert.deepEqual(
    anthropic.map((e) => e.event).filter((e) => e !== "ping" && e !== "content_block_delta"),
    [
      "message_start",
      "content_block_start",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ],
  );
  const gemini = await names("gemini/stream-text.json");
  assert.ok(gemini.length >= 3 && gemini.every((e) => e.event === ""));
  assert.equal(JSON.parse(gemini.at(-1)!.data).usageMetadata.candidatesTokenCount, 8);
});

Deno.test("encodeSse writes event and data lines", () => {
  assert.equal(encodeSse('{"a":1}', "message_start"), 'event: message_start\ndata: {"a":1}\n\n');
  assert.equal(encodeSse("x", undefined, "\r\n"), "data: x\r\n\r\n");
});
