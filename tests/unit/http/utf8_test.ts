import assert from "node:assert/strict";
import { fetchBody, TextParts, utf8Bytes, utf8Length, utf8View } from "../../../src/http/utf8.ts";
import { int, pick, random } from "../../helpers/random.ts";

const encoder = new TextEncoder();
const encoded = (text: string) => encoder.encode(text).length;

/** Pieces of text of every UTF-8 width, and the halves of a pair alone. */
const PIECES = ["a", " ", "é", "ß", "€", "中", "😀", "𝄞", "\ud83d", "\ude00", "\u0000", "\u07ff"];

Deno.test("utf8Length counts as TextEncoder writes, short text and long, lone surrogates included", () => {
  const rand = random(32);
  for (let n = 0; n < 300; n++) {
    const length = pick(rand, [1, 10, 255, 256, 257, 2_000, 16_383, 16_384, 16_385, 40_000]);
    let text = "";
    while (text.length < length) text += pick(rand, PIECES);
    assert.equal(utf8Length(text), encoded(text), `case ${n}, ${text.length} units`);
  }
});

Deno.test("utf8Length keeps a surrogate pair whole where long text is measured in chunks", () => {
  for (const at of [16_383, 16_384, 16_385, 32_767, 32_768]) {
    const text = "a".repeat(at - 1) + "😀" + "b".repeat(int(random(at), 0, 3));
    assert.equal(utf8Length(text), encoded(text), `a pair at ${at}`);
  }
  // A lone high surrogate just before a pair that straddles the chunk's end.
  for (const at of [16_382, 16_383, 16_384]) {
    const text = "a".repeat(at - 1) + "\ud83d😀" + "b";
    assert.equal(utf8Length(text), encoded(text), `a lone half then a pair at ${at}`);
  }
  assert.equal(utf8Length("x".repeat(100_000)), 100_000);
  assert.equal(utf8Length(""), 0);
});

Deno.test("utf8Bytes writes what TextEncoder does: ASCII, every width, lone surrogates, any length", () => {
  const rand = random(64);
  for (let n = 0; n < 200; n++) {
    const length = pick(rand, [0, 5, 16_383, 16_384, 16_385, 40_000]);
    const ascii = rand() < 0.5;
    let text = "";
    while (text.length < length) text += ascii ? 'ab {}"\n' : pick(rand, PIECES);
    // Non-ASCII text first at a random place: the bytes before it are kept, the rest measured.
    if (!ascii && rand() < 0.5) text = "x".repeat(int(rand, 0, length)) + text;
    assert.deepEqual(utf8Bytes(text), encoder.encode(text), `case ${n}, ${text.length} units`);
  }
  // A pair that does not fit where the ASCII buffer ends.
  const pair = "a".repeat(20_000) + "😀";
  assert.deepEqual(utf8Bytes(pair), encoder.encode(pair));
});

Deno.test("utf8View writes what TextEncoder does, in one reused buffer for long text", () => {
  const rand = random(96);
  let last: Uint8Array | undefined;
  let longest = 0;
  for (let n = 0; n < 60; n++) {
    const length = pick(rand, [10, 16_384, 30_000, 200_000]);
    let text = "";
    while (text.length < length) text += pick(rand, PIECES);
    const bytes = utf8View(text);
    assert.deepEqual(bytes, encoder.encode(text), `case ${n}, ${text.length} units`);
    if (length < 16_384) continue;
    // Grown only for text longer than any before.
    if (last && text.length <= longest) assert.equal(bytes.buffer, last.buffer, "the same buffer");
    longest = Math.max(longest, text.length);
    last = bytes;
  }
  // Text past the buffer's limit gets a buffer of its own.
  const huge = "z".repeat(2_000_000);
  assert.notEqual(utf8View(huge).buffer, last?.buffer);
  assert.equal(utf8View(huge).length, 2_000_000);
});

Deno.test("fetchBody leaves short text to fetch and encodes long text itself", () => {
  assert.equal(fetchBody('{"a":"é"}'), '{"a":"é"}');
  const long = '{"a":"' + "é中😀x".repeat(10_000) + '"}';
  const body = fetchBody(long);
  assert.ok(body instanceof Uint8Array);
  assert.deepEqual(body, encoder.encode(long));
});

Deno.test("fetchBody encodes text in parts as its parts joined, each part of any width", () => {
  const rand = random(50);
  for (let i = 0; i < 50; i++) {
    const parts = Array.from(
      { length: int(rand, 1, 4) },
      () =>
        Array.from(
          { length: int(rand, 0, 12_000) },
          () => pick(rand, ["a", "é", "中", "😀", "\ud800", '"']),
        )
          .join(""),
    );
    const text = new TextParts(parts);
    assert.equal(text.length, parts.join("").length);
    assert.equal(String(text), parts.join(""));
    assert.deepEqual(fetchBody(text), encoder.encode(parts.join("")), `parts ${parts.length}`);
  }
});
