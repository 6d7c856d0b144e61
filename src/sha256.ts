/**
 * SHA-256 and HMAC-SHA-256 (FIPS 180-4, RFC 2104), synchronous, without `node:crypto`: importing
 * that makes Deno load its Node compatibility layer, about 35 ms of every thread's start. Short
 * inputs (a key, a config secret, an alert's body) are hashed here in JavaScript, as fast as the
 * native call. A long text (`NATIVE_FROM` characters or more: an agent's conversation prefix) is
 * hashed natively once `node:crypto` is loaded, which the first such text starts, in the
 * background; until then, here. The digest is the same either way.
 */

/** The round constants. */
const K = new Int32Array([
  0x428a2f98,
  0x71374491,
  0xb5c0fbcf,
  0xe9b5dba5,
  0x3956c25b,
  0x59f111f1,
  0x923f82a4,
  0xab1c5ed5,
  0xd807aa98,
  0x12835b01,
  0x243185be,
  0x550c7dc3,
  0x72be5d74,
  0x80deb1fe,
  0x9bdc06a7,
  0xc19bf174,
  0xe49b69c1,
  0xefbe4786,
  0x0fc19dc6,
  0x240ca1cc,
  0x2de92c6f,
  0x4a7484aa,
  0x5cb0a9dc,
  0x76f988da,
  0x983e5152,
  0xa831c66d,
  0xb00327c8,
  0xbf597fc7,
  0xc6e00bf3,
  0xd5a79147,
  0x06ca6351,
  0x14292967,
  0x27b70a85,
  0x2e1b2138,
  0x4d2c6dfc,
  0x53380d13,
  0x650a7354,
  0x766a0abb,
  0x81c2c92e,
  0x92722c85,
  0xa2bfe8a1,
  0xa81a664b,
  0xc24b8b70,
  0xc76c51a3,
  0xd192e819,
  0xd6990624,
  0xf40e3585,
  0x106aa070,
  0x19a4c116,
  0x1e376c08,
  0x2748774c,
  0x34b0bcb5,
  0x391c0cb3,
  0x4ed8aa4a,
  0x5b9cca4f,
  0x682e6ff3,
  0x748f82ee,
  0x78a5636f,
  0x84c87814,
  0x8cc70208,
  0x90befffa,
  0xa4506ceb,
  0xbef9a3f7,
  0xc67178f2,
]);

/** The initial hash value. */
const H0 = [
  0x6a09e667,
  0xbb67ae85,
  0x3c6ef372,
  0xa54ff53a,
  0x510e527f,
  0x9b05688c,
  0x1f83d9ab,
  0x5be0cd19,
];

/** Texts this long or longer are hashed natively once `node:crypto` is loaded. */
export const NATIVE_FROM = 4096;

/** The message schedule, reused by every call (the thread runs one at a time). */
const W = new Int32Array(64);
const encoder = new TextEncoder();

/** `node:crypto`'s SHA-256, once loaded. */
let native: ((data: string | Uint8Array) => Uint8Array) | undefined;
let loading = false;

function loadNative(): void {
  if (loading) return;
  loading = true;
  import("node:crypto").then(({ createHash }) => {
    native = (data) => createHash("sha256").update(data).digest(); // a Buffer: a Uint8Array
  }, () => {/* stays in JavaScript */});
}

/** SHA-256 of `data` (a string as its UTF-8), 32 bytes. */
export function sha256(data: string | Uint8Array): Uint8Array {
  if (data.length >= NATIVE_FROM) {
    if (native) return native(data);
    loadNative();
  }
  return digest(typeof data === "string" ? utf8(data) : data);
}

/** HMAC-SHA-256 of `data` under `key` (strings as their UTF-8), 32 bytes. */
export function hmacSha256(key: string | Uint8Array, data: string | Uint8Array): Uint8Array {
  let k = typeof key === "string" ? encoder.encode(key) : key;
  if (k.length > 64) k = digest(k);
  const message = typeof data === "string" ? encoder.encode(data) : data;
  const inner = new Uint8Array(64 + message.length);
  const outer = new Uint8Array(64 + 32);
  for (let i = 0; i < 64; i++) {
    const byte = i < k.length ? k[i] : 0;
    inner[i] = byte ^ 0x36;
    outer[i] = byte ^ 0x5c;
  }
  inner.set(message, 64);
  outer.set(digest(inner), 64);
  return digest(outer);
}

/** Where short texts are encoded, and the padded last blocks built (a new typed array costs µs). */
const scratch = new Uint8Array(1024);
const pad = new Uint8Array(128);
const padView = new DataView(pad.buffer);
const state = new Int32Array(8);

/** SHA-256 of bytes, in JavaScript. */
function digest(message: Uint8Array): Uint8Array {
  const length = message.length;
  // The message, a 0x80 byte, zeros, and its length in bits (big-endian) fill whole blocks.
  const full = length >>> 6;
  const rest = length - full * 64;
  const padBlocks = rest < 56 ? 1 : 2;
  pad.fill(0);
  pad.set(message.subarray(full * 64));
  pad[rest] = 0x80;
  const bits = length * 8;
  padView.setUint32(padBlocks * 64 - 8, Math.floor(bits / 0x100000000));
  padView.setUint32(padBlocks * 64 - 4, bits >>> 0);
  for (let i = 0; i < 8; i++) state[i] = H0[i];
  for (let block = 0; block < full; block++) compress(state, message, block * 64);
  for (let block = 0; block < padBlocks; block++) compress(state, pad, block * 64);
  const out = new Uint8Array(32);
  for (let i = 0; i < 8; i++) {
    out[i * 4] = state[i] >>> 24;
    out[i * 4 + 1] = state[i] >>> 16;
    out[i * 4 + 2] = state[i] >>> 8;
    out[i * 4 + 3] = state[i];
  }
  return out;
}

/** A text's UTF-8: in `scratch` when it fits (read before the next call), else new bytes. */
function utf8(text: string): Uint8Array {
  if (text.length * 3 <= scratch.length) {
    return scratch.subarray(0, encoder.encodeInto(text, scratch).written);
  }
  return encoder.encode(text);
}

/** One 64-byte block of `bytes` from `at` into the state `h`. */
function compress(h: Int32Array, bytes: Uint8Array, at: number): void {
  for (let i = 0; i < 16; i++) {
    const j = at + i * 4;
    W[i] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3];
  }
  for (let i = 16; i < 64; i++) {
    const w15 = W[i - 15];
    const w2 = W[i - 2];
    const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3);
    const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10);
    W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
  }
  let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (let i = 0; i < 64; i++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const ch = (e & f) ^ (~e & g);
    const t1 = (hh + S1 + ch + K[i] + W[i]) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const maj = (a & b) ^ (a & c) ^ (b & c);
    const t2 = (S0 + maj) | 0;
    hh = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  h[0] = (h[0] + a) | 0;
  h[1] = (h[1] + b) | 0;
  h[2] = (h[2] + c) | 0;
  h[3] = (h[3] + d) | 0;
  h[4] = (h[4] + e) | 0;
  h[5] = (h[5] + f) | 0;
  h[6] = (h[6] + g) | 0;
  h[7] = (h[7] + hh) | 0;
}
