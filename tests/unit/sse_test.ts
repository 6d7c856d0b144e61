import assert from "node:assert/strict";
import { encodeSse, SseDecoder, type SseEvent } from "../../src/http/sse.ts";
import { LineSplitter } from "../../src/http/lines.ts";

Deno.test("LineSplitter handles LF, CRLF and CR, split anywhere", () => {
  const text = "a\r\nb\nc\rd\r\n\r\ne";
  for (let cut = 0; cut <= text.length; cut++) {
    const lines: string[] = [];
    const splitter = new LineSplitter((l) => lines.push(l));
    splitter.push(text.slice(0, cut));
    splitter.push(text.slice(cut));
    splitter.end();
    assert.deepEqual(lines, ["a", "b", "c", "d", "", "e"], `cut at ${cut}`);
  }
});

Deno.test("SseDecoder reads named and data-only events, comments and multi-line data", () => {
  const text = 'event: ping\ndata: {"type": "ping"}\n\n: comment\n\r\n' +
    'data: {"a":1}\r\n\r\ndata: one\ndata: two\n\nevent: x\ndata:no-space\n\ndata: last';
  for (let cut = 0; cut <= text.length; cut += 7) {
    const events: SseEvent[] = [];
    const decoder = new SseDecoder((e) => events.push(e));
    decoder.push(text.slice(0, cut));
    decoder.push(text.slice(cut));
    decoder.end();
    assert.deepEqual(events, [
      { event: "ping", data: '{"type": "ping"}' },
      { event: "", data: '{"a":1}' },
      { event: "", data: "one\ntwo" },
      { event: "x", data: "no-space" },
      { event: "", data: "last" },
    ]);
  }
});

Deno.test("encodeSse writes event and data lines", () => {
  assert.equal(encodeSse('{"a":1}', "message_start"), 'event: message_start\ndata: {"a":1}\n\n');
  assert.equal(encodeSse("x", undefined, "\r\n"), "data: x\r\n\r\n");
});
