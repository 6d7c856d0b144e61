/**
 * The client's body as it goes upstream: its own text, unless a member the bill depends on
 * repeats (or may, written with escapes) — then as the gateway read it.
 */
import assert from "node:assert/strict";
import { forwardedBody } from "../../../src/http/forwarded_body.ts";

const body = (text: string) => ({ text, value: JSON.parse(text) });

Deno.test("a body goes as it was sent unless a decisive member repeats, call after call", () => {
  const plain = '{"model":"m","max_tokens":16,"messages":[],"stream":false}';
  const repeated = '{"model":"m","max_tokens":16,"messages":[],"max_tokens":4000}';
  const escaped = '{"model":"m","max_tokens":16,"max\\u005ftokens":4000}';
  // In turn and again: each call reads its body from the start, whatever the last one read.
  for (let round = 0; round < 2; round++) {
    assert.equal(forwardedBody(body(plain)), plain);
    assert.equal(forwardedBody(body(repeated)), JSON.stringify(JSON.parse(repeated)));
    assert.equal(forwardedBody(body(plain)), plain);
    assert.equal(forwardedBody(body(escaped)), JSON.stringify(JSON.parse(escaped)));
  }
  // Members that are not decisive may repeat: the text goes as it is.
  const other = '{"model":"m","metadata":{"a":1},"metadata":{"a":2}}';
  assert.equal(forwardedBody(body(other)), other);
});
