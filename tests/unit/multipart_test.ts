import assert from "node:assert/strict";
import { boundaryOf, PartScanner, withField } from "../../src/http/multipart.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const BODY = "--b0\r\n" +
  'Content-Disposition: form-data; name="image[]"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n' +
  "\x89PNG--b\r\n--b" +
  "\r\n--b0\r\n" +
  'Content-Disposition: form-data; name="model"\r\n\r\nimage-test' +
  "\r\n--b0\r\n" +
  'Content-Disposition: form-data; name="prompt"\r\n\r\nmake it blue' +
  "\r\n--b0--\r\n";

Deno.test("the boundary is read from the content type, quoted or not", () => {
  assert.equal(boundaryOf("multipart/form-data; boundary=abc"), "abc");
  assert.equal(boundaryOf('multipart/form-data; charset=utf-8; boundary="a b"'), "a b");
  assert.equal(boundaryOf("application/json"), null);
  assert.equal(boundaryOf("multipart/form-data"), null);
});

Deno.test("parts are found whatever the chunking, file contents that look like delimiters included", () => {
  const bytes = enc.encode(BODY);
  for (const size of [1, 2, 7, 64, bytes.length]) {
    const scanner = new PartScanner("b0");
    for (let i = 0; i < bytes.length; i += size) scanner.push(bytes.slice(i, i + size));
    const parts = scanner.parts.map((p) => ({
      name: p.name,
      filename: p.filename,
      value: dec.decode(scanner.bytes.subarray(p.valueStart, p.valueEnd)),
    }));
    assert.deepEqual(parts, [
      { name: "image[]", filename: "a.png", value: "\x89PNG--b\r\n--b" },
      { name: "model", filename: null, value: "image-test" },
      { name: "prompt", filename: null, value: "make it blue" },
    ], `chunks of ${size}`);
  }
});

Deno.test("withField rewrites one text field and leaves every other byte alone", () => {
  const scanner = new PartScanner("b0");
  scanner.push(enc.encode(BODY));
  const out = dec.decode(withField(scanner.bytes, scanner.parts, "model", "gpt-image-1"));
  assert.equal(out, BODY.replace("\r\n\r\nimage-test", "\r\n\r\ngpt-image-1"));
  assert.deepEqual(withField(scanner.bytes, scanner.parts, "absent", "x"), scanner.bytes);
});
