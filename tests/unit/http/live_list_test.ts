import assert from "node:assert/strict";
import { LiveList } from "../../../src/http/live_list.ts";
import { deadline } from "../../../src/http/deadlines.ts";
import { sleep } from "../../helpers/poll.ts";

Deno.test("a live list keeps its values oldest first, whichever of them leave", () => {
  const list = new LiveList<string>();
  const a = list.add("a");
  const b = list.add("b");
  const c = list.add("c");
  const d = list.add("d");
  assert.deepEqual(list.values(), ["a", "b", "c", "d"]);
  assert.equal(list.size, 4);
  assert.equal(b.remove(), true, "in the middle");
  assert.deepEqual(list.values(), ["a", "c", "d"]);
  assert.equal(a.remove(), true, "the first");
  assert.equal(d.remove(), true, "the last");
  assert.deepEqual(list.values(), ["c"]);
  assert.equal(b.remove(), false, "a value removed twice was in the list once");
  assert.equal(list.size, 1);
  list.add("e");
  assert.deepEqual(list.values(), ["c", "e"]);
  assert.equal(c.remove(), true);
  assert.deepEqual(list.values(), ["e"]);
  assert.deepEqual(list.entries().map(([, value]) => value), ["e"]);
  assert.equal(list.entries()[0][0].remove(), true, "an entry from `entries` removes its value");
  assert.equal(list.size, 0);
  assert.deepEqual(list.values(), []);
});

Deno.test("a value removed from a live list holds no link to the values around it", () => {
  // What the list is for: a dead entry that reached the old generation must not keep younger
  // entries alive through scavenges (as a Set's abandoned tables do).
  const list = new LiveList<{ request: number }>();
  const entries = [1, 2, 3].map((request) => list.add({ request }));
  entries[1].remove();
  entries[0].remove();
  for (const entry of entries.slice(0, 2)) {
    const links = entry as unknown as { prev: unknown; next: unknown };
    assert.equal(links.prev, null);
    assert.equal(links.next, null);
  }
});

Deno.test("a copy of the values lets each be removed while they are walked (a drain)", () => {
  const list = new LiveList<() => void>();
  const cut: number[] = [];
  for (const n of [1, 2, 3]) {
    const entry = list.add(() => {
      cut.push(n);
      entry.remove();
    });
  }
  for (const end of list.values()) end();
  assert.deepEqual(cut, [1, 2, 3]);
  assert.equal(list.size, 0);
});

Deno.test("deadlines expire once due, not when ended first, and not when a due one ends them", async () => {
  const expired: string[] = [];
  let endSecond = () => {};
  deadline(0, () => {
    expired.push("first");
    endSecond();
  });
  // Due in the same sweep as the first, whose expiry ends it before its turn.
  endSecond = deadline(0, () => expired.push("second"));
  const ended = deadline(0, () => expired.push("ended"));
  ended();
  const third = deadline(0, () => expired.push("third"));
  const kept = deadline(60_000, () => expired.push("kept"));
  await sleep(250);
  assert.deepEqual(expired, ["first", "third"]);
  third();
  kept();
  // With nothing in force the shared timer stops (the test's sanitizer fails on a live interval).
});
