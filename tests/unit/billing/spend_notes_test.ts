/**
 * Spend notes: gathered on the request path and handed to the listener in batches, a key that
 * spends often one note a batch; nothing kept without a listener.
 */
import assert from "node:assert/strict";
import {
  listenForSpending,
  noteRefused,
  noteSpent,
  type SpendNote,
} from "../../../src/billing/spend_notes.ts";

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("spend notes are handed on in one batch after the window, one per key", async () => {
  const batches: SpendNote[][] = [];
  const stop = listenForSpending((notes) => batches.push(notes));
  try {
    for (let i = 0; i < 50; i++) noteSpent({ keyId: "k1", accountId: 1 });
    // Another event-loop turn, within the window: the same batch.
    await wait(0);
    noteSpent({ keyId: "k2", accountId: 2 });
    noteRefused({ keyId: "k1", accountId: 1 }, {
      refused: "budget",
      owner: "key",
      period: "day",
      amount: 100,
      room: 5,
      resetsAt: 2_000,
    }, 1_000);
    assert.equal(batches.length, 0, "nothing handed on the request path, nor at the next turn");
    await wait(50);
    assert.equal(batches.length, 1, "one batch");
    const notes = batches[0];
    assert.deepEqual(notes.filter((n) => !n.refused).map((n) => n.keyId), ["k1", "k2"]);
    assert.deepEqual(notes.find((n) => n.refused)?.refused, {
      owner: "key",
      period: "day",
      at: 1_000,
      room: 5,
    });
  } finally {
    stop();
  }
  // Without a listener nothing is kept.
  noteSpent({ keyId: "k3", accountId: 3 });
  await wait(30);
  assert.equal(batches.length, 1);
});
