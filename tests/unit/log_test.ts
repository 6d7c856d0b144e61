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

Deno.test("info lines wait for their batch and go out in one write; a burst past the bound at once", async () => {
  const writes: string[] = [];
  const original = Deno.stdout.writeSync;
  const decoder = new TextDecoder();
  Deno.stdout.writeSync = (bytes: Uint8Array) => {
    writes.push(decoder.decode(bytes));
    return bytes.length;
  };
  try {
    log("info", "first");
    log("info", "second");
    assert.equal(writes.length, 0, "nothing is written on the request's path");
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(writes.length, 1, "the batch in one write");
    assert.deepEqual(writes[0].trim().split("\n").map((l) => JSON.parse(l).msg), [
      "first",
      "second",
    ]);
    // 200 lines of about 500 bytes: past 64 KiB they are written before the batch's time.
    for (let i = 0; i < 200; i++) log("info", "burst", { i, pad: "x".repeat(450) });
    assert.ok(writes.length > 1, "a burst is written at once past the bound");
    await new Promise((resolve) => setTimeout(resolve, 50));
    const burst = writes.slice(1).join("").trim().split("\n").map((l) => JSON.parse(l).i);
    assert.deepEqual(burst, [...Array(200).keys()], "every line once, in order");
  } finally {
    Deno.stdout.writeSync = original;
  }
});
