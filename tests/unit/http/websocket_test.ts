/** A WebSocket message's `type`: read from its beginning when it leads, else from the parse. */
import assert from "node:assert/strict";
import { messageType } from "../../../src/http/websocket.ts";

Deno.test("a message's type: leading, later in the object, escaped, or none", () => {
  assert.equal(
    messageType('{"type":"response.output_text.delta","delta":"hi"}'),
    "response.output_text.delta",
  );
  assert.equal(messageType('{ "type" : "error", "error": {} }'), "error");
  assert.equal(
    messageType('{"sequence_number":3,"type":"response.completed"}'),
    "response.completed",
  );
  assert.equal(messageType('{"type":"a\\"b"}'), 'a"b', "an escaped type is parsed");
  assert.equal(messageType('{"type":7}'), "");
  assert.equal(messageType("[1]"), "");
  assert.equal(messageType("null"), "");
  assert.equal(messageType("not json"), "");
});
