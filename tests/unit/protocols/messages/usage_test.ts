import assert from "node:assert/strict";
import { type SseEvent, SseScanner } from "../../../../src/http/sse.ts";
import { messagesUsageView } from "../../../../src/protocols/messages/usage.ts";

Deno.test("the usage view writes the shown usage without changing the event its other readers share", () => {
  const events: SseEvent[] = [];
  const scanner = new SseScanner((e) => events.push(e));
  scanner.push(new TextEncoder().encode(
    'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":3}}\n\n',
  ));
  const [event] = events;
  const before = structuredClone(event.json!());
  const view = messagesUsageView.event!();
  assert.ok(view.carries(event));
  const text = view.write(event, {
    input: 1,
    output: 2,
    cacheRead: 0,
    cacheWrite: 0,
    reasoning: 0,
  });
  assert.match(
    text,
    /^event: message_delta\ndata: \{"type":"message_delta","usage":\{"output_tokens":2,/,
  );
  assert.deepEqual(event.json!(), before);
});
