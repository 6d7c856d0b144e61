/**
 * A JSON body as read from a client: strict UTF-8 (a replacement character the client sent is
 * text like any other; bytes that are not UTF-8 are refused), and a parsed value that can be let
 * go and is parsed again when read.
 */
import assert from "node:assert/strict";
import { readJsonObject } from "../../../src/http/body.ts";
import { GatewayError } from "../../../src/http/errors.ts";

const LIMITS = { maxBodyBytes: 1 << 20, uploadTimeoutMs: 5_000 };
const post = (body: Uint8Array<ArrayBuffer> | string) =>
  new Request("http://gateway/v1/messages", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });

Deno.test("a body of valid UTF-8 is read whole, replacement characters the client sent included", async () => {
  const text = JSON.stringify({ text: "a\uFFFDb é 中 😀", long: "x".repeat(70_000) });
  const body = await readJsonObject(post(text), LIMITS);
  assert.equal(body.text, text);
  assert.equal(body.value.text, "a\uFFFDb é 中 😀");
  // A byte order mark is not part of the text.
  const marked = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('{"a":1}')]);
  assert.equal((await readJsonObject(post(marked), LIMITS)).text, '{"a":1}');
});

Deno.test("bytes that are not UTF-8 are refused, anywhere in the body", async () => {
  for (const bad of [[0xc3, 0x28], [0xff], [0xed, 0xa0, 0x80], [0xf0, 0x9f, 0x98]]) {
    const bytes = new TextEncoder().encode(`{"text":"ok ${"y".repeat(20_000)} "}`);
    const broken = new Uint8Array([...bytes.subarray(0, 10), ...bad, ...bytes.subarray(10)]);
    await assert.rejects(readJsonObject(post(broken), LIMITS), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.status, 400);
      assert.match(error.message, /not valid JSON/);
      return true;
    });
  }
});

Deno.test("a released body is parsed again from its text when read", async () => {
  const body = await readJsonObject(post('{"model":"m","n":[1,2]}'), LIMITS);
  const first = body.value;
  body.release();
  const again = body.value;
  assert.notEqual(again, first);
  assert.deepEqual(again, first);
  assert.equal(body.value, again, "parsed once, then kept until released again");
});
