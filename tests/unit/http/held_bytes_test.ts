import assert from "node:assert/strict";
import { HeldBytes } from "../../../src/http/held_bytes.ts";

Deno.test("the tally is the sum of its entries, each set to what its holder holds now", () => {
  const tally = new HeldBytes();
  const a = tally.entry();
  const b = tally.entry();
  a.set(100);
  b.set(50);
  assert.equal(tally.total, 150);
  a.set(30);
  assert.equal(tally.total, 80);
  assert.equal(a.bytes, 30);
  b.set(0);
  a.set(0);
  assert.equal(tally.total, 0);
});

Deno.test("over a budget, holders whose queues may have shrunk are looked at again first", () => {
  const tally = new HeldBytes();
  let queued = 300;
  let looks = 0;
  const socket = tally.entry(() => {
    looks++;
    socket.set(queued);
  });
  const idle = tally.entry(() => assert.fail("a holder with nothing held is not looked at"));
  idle.set(0);
  socket.set(queued);
  assert.equal(tally.over(400), false, "under the budget: nothing looked at");
  assert.equal(looks, 0);
  // The client read meanwhile: looked at again, the tally is under the budget.
  queued = 40;
  assert.equal(tally.over(200), false);
  assert.equal(looks, 1);
  assert.equal(tally.total, 40);
  // Looks again at most every 50 ms: within that, the tally answers as it stands.
  queued = 500;
  socket.set(queued);
  queued = 10;
  assert.equal(tally.over(200), true);
  assert.equal(looks, 1);
  // `refresh` (a metrics scrape) looks at once.
  tally.refresh();
  assert.equal(looks, 2);
  assert.equal(tally.total, 10);
  socket.set(0);
  tally.refresh();
  assert.equal(looks, 2, "an entry at 0 is not looked at");
});

Deno.test("holders that ended holding something unseen are let go of as more come: the looks kept stay bounded", () => {
  const tally = new HeldBytes();
  let looks = 0;
  for (let i = 0; i < 100; i++) {
    // Each holder's queue was read to the end after it was last set (nobody looked again).
    const entry = tally.entry(() => {
      looks++;
      entry.set(0);
    });
    entry.set(10);
  }
  // Past 64 kept, all were looked at again (and let go of): the 35 since are still counted.
  assert.equal(looks, 65);
  assert.equal(tally.total, 350);
  tally.refresh();
  assert.equal(tally.total, 0);
});
