/**
 * Log lines from several serving threads share stdout: each write is whole lines of at most 4096
 * bytes (what a pipe writes atomically), a longer line alone.
 */
import assert from "node:assert/strict";
import { flushLog, log } from "../../src/log.ts";

Deno.test("flushLog writes whole lines in pieces of at most 4096 bytes, a longer line alone", () => {
  const writes: Uint8Array[] = [];
  const original = Deno.stdout.writeSync;
  Deno.stdout.writeSync = (bytes: Uint8Array) => {
    writes.push(bytes.slice());
    return bytes.length;
  };
  try {
    for (let i = 0; i < 400; i++) log("info", "line", { i, pad: "x".repeat((i * 37) % 500) });
    const wide = Object.fromEntries(
      Array.from({ length: 12 }, (_, k) => [`f${k}`, "z".repeat(500)]),
    );
    log("info", "wide", wide);
    log("info", "after");
    flushLog();
  } finally {
    Deno.stdout.writeSync = original;
  }
  const decoder = new TextDecoder();
  const lines: string[] = [];
  for (const bytes of writes) {
    const text = decoder.decode(bytes);
    assert.ok(text.endsWith("\n"), "every write ends at a line end");
    const parts = text.slice(0, -1).split("\n");
    if (bytes.length > 4096) assert.equal(parts.length, 1, "a write over 4096 bytes is one line");
    lines.push(...parts);
  }
  assert.ok(writes.length > 1);
  assert.equal(lines.length, 402);
  assert.deepEqual(lines.map((l) => JSON.parse(l).msg).slice(-2), ["wide", "after"]);
  assert.deepEqual(lines.slice(0, 400).map((l) => JSON.parse(l).i), [...Array(400).keys()]);
});
