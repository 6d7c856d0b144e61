/**
 * `src/sha256.ts` against `node:crypto` and the published test vectors: every length across the
 * block and padding edges, UTF-8 text, HMAC keys shorter and longer than a block, and a long text
 * hashed before and after the native hash has loaded.
 */
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { hmacSha256, NATIVE_FROM, sha256 } from "../../src/sha256.ts";

const nodeHex = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

Deno.test("sha256: the FIPS 180-4 examples", () => {
  assert.equal(
    sha256("abc").toHex(),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  assert.equal(
    sha256("").toHex(),
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  );
  assert.equal(
    sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq").toHex(),
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
});

Deno.test("sha256: every length from 0 to 300 bytes, as text and as bytes, as node:crypto", () => {
  for (let n = 0; n <= 300; n++) {
    const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 31 + n) & 0xff);
    assert.equal(sha256(bytes).toHex(), nodeHex(bytes), `${n} bytes`);
    const text = "ab€😀".repeat(n).slice(0, n);
    assert.equal(sha256(text).toHex(), nodeHex(text), `${n} characters`);
  }
});

Deno.test("hmacSha256: RFC 4231's case 2, and keys shorter and longer than a block", () => {
  assert.equal(
    hmacSha256("Jefe", "what do ya want for nothing?").toHex(),
    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
  );
  for (const length of [0, 1, 63, 64, 65, 200]) {
    const key = "k".repeat(length);
    const message = `${length}.{"event":"budget"}`;
    assert.equal(
      hmacSha256(key, message).toHex(),
      createHmac("sha256", key).update(message).digest("hex"),
      `a key of ${length} bytes`,
    );
  }
});

Deno.test("sha256: a long text hashes the same before and after the native hash loads", async () => {
  const text = "a conversation's prefix, ".repeat(NATIVE_FROM / 8);
  const want = nodeHex(text);
  assert.equal(sha256(text).toHex(), want, "the first long text, in JavaScript");
  // The first long text started loading node:crypto; once it has, the same digest comes from it.
  await import("node:crypto");
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(sha256(text).toHex(), want, "natively");
  assert.equal(sha256(new TextEncoder().encode(text)).toHex(), want, "as bytes");
});
