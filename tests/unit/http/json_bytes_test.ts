import assert from "node:assert/strict";
import { memberKey, stringBytes } from "../../../src/http/json_bytes.ts";
import { utf8Length } from "../../../src/http/utf8.ts";

const enc = new TextEncoder();

Deno.test("stringBytes gives the UTF-8 length of a string member, as JSON.parse would read it", () => {
  const values = [
    "",
    "Hi",
    'quote " and backslash \\ and / slash',
    "tab\tnewline\nreturn\r",
    "é, 中文, 😀 and \u0001",
    "x".repeat(1000),
  ];
  for (const value of values) {
    for (const json of [JSON.stringify({ type: "x.delta", delta: value })]) {
      assert.equal(stringBytes(enc.encode(json), memberKey("delta")), utf8Length(value), json);
    }
    // Non-ASCII written as \u escapes (as ensure_ascii encoders do) counts the same.
    const escaped = JSON.stringify({ delta: value }).replace(
      /[\u0080-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
    );
    assert.equal(stringBytes(enc.encode(escaped), memberKey("delta")), utf8Length(value), escaped);
  }
});

Deno.test("stringBytes finds the member by name, not inside other names or values", () => {
  const json = '{"type":"response.output_text.delta","text_delta":1,"delta":"abc"}';
  assert.equal(stringBytes(enc.encode(json), memberKey("delta")), 3);
  assert.equal(stringBytes(enc.encode('{"type":"text_delta"}'), memberKey("text")), -1);
  assert.equal(stringBytes(enc.encode('{"delta": "spaced"}'), memberKey("delta")), 6);
  assert.equal(stringBytes(enc.encode('{"delta":{"text":"x"}}'), memberKey("delta")), -1);
  assert.equal(stringBytes(enc.encode('{"delta":"unterminated'), memberKey("delta")), -1);
});
