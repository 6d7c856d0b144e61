/**
 * Where conversations' caches are, as the serving threads share it: a placement put through one
 * view of the board is found through another, until it expires; a full bucket gives up the entry
 * that runs out first; two accounts never meet.
 */
import assert from "node:assert/strict";
import { Board } from "../../../src/routing/board.ts";

Deno.test("the table: a placement put by one view is found by another, until it expires", () => {
  const board = new Board();
  const other = new Board(board.buffer);
  const now = Date.now();
  const placement = { target: 11, key: 22, expires: now + 1000, synced: 0, stored: 0, cached: 7 };
  assert.equal(board.affinity.find(101, 203, 1, now), undefined);
  board.affinity.put(101, 203, 1, placement, now);
  assert.deepEqual(other.affinity.find(101, 203, 1, now), placement);
  assert.equal(
    other.affinity.find(101, 205, 1, now),
    undefined,
    "both halves of the hash must match",
  );
  assert.equal(other.affinity.find(101, 203, 2, now), undefined, "another account's, never");
  assert.equal(other.affinity.find(101, 203, 1, now + 1000), undefined, "expired");
  other.affinity.put(101, 203, 1, { ...placement, key: 33, expires: now + 5000 }, now);
  assert.equal(board.affinity.find(101, 203, 1, now + 2000)?.key, 33, "replaced in place");
});

Deno.test("the table: the prefix a provider caches is noted on a placement that still names it", () => {
  const board = new Board();
  const other = new Board(board.buffer);
  const now = Date.now();
  const placement = { target: 11, key: 22, expires: now + 1000, synced: 0, stored: 0 };
  board.affinity.put(101, 203, 1, placement, now);
  assert.equal(other.affinity.find(101, 203, 1, now)?.cached, 0, "none known at first");
  other.affinity.markCached(101, 203, 1, 11, 22, 99);
  assert.equal(board.affinity.find(101, 203, 1, now)?.cached, 99);
  other.affinity.markCached(101, 203, 1, 11, 23, 98);
  assert.equal(board.affinity.find(101, 203, 1, now)?.cached, 99, "another key's: not this one's");
  other.affinity.markCached(101, 203, 2, 11, 22, 97);
  assert.equal(board.affinity.find(101, 203, 1, now)?.cached, 99, "another account's: never");
  board.affinity.put(101, 203, 1, { ...placement, key: 23 }, now);
  assert.equal(board.affinity.find(101, 203, 1, now)?.cached, 0, "a new placement knows none");
});

Deno.test("the table: memory is bounded — a full bucket gives up its entry that expires first", () => {
  const board = new Board();
  const now = Date.now();
  // Hashes whose upper bits are equal share a bucket (8 entries).
  const inBucket = (i: number) => (i << 13) | (7 << 1) | 1;
  for (let i = 0; i < 8; i++) {
    board.affinity.put(inBucket(i), 1, 1, {
      target: i,
      key: i,
      expires: now + 10_000 + i,
      synced: 0,
      stored: 0,
    }, now);
  }
  for (let i = 0; i < 8; i++) assert.equal(board.affinity.find(inBucket(i), 1, 1, now)?.target, i);
  board.affinity.put(inBucket(8), 1, 1, {
    target: 8,
    key: 8,
    expires: now + 20_000,
    synced: 0,
    stored: 0,
  }, now);
  assert.equal(board.affinity.find(inBucket(0), 1, 1, now), undefined, "the first to expire left");
  for (let i = 1; i <= 8; i++) assert.equal(board.affinity.find(inBucket(i), 1, 1, now)?.target, i);
  // An expired entry makes room before any live one.
  board.affinity.put(inBucket(9), 1, 1, {
    target: 9,
    key: 9,
    expires: now + 30_000,
    synced: 0,
    stored: 0,
  }, now + 10_005);
  assert.equal(board.affinity.find(inBucket(9), 1, 1, now + 10_005)?.target, 9);
  assert.equal(board.affinity.find(inBucket(8), 1, 1, now + 10_005)?.target, 8);
});
