/**
 * Every account's spend by UTC day (`Store.totalUsageByDay`): the SQLite store finds where the
 * window starts by a binary search over ledger ids; its answer must equal a plain scan's, with gaps
 * in the ids (released holds) and with held and credit entries left out.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { openSqliteStore } from "../../../src/store/sqlite.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

Deno.test("spend by day of every account equals a scan of the ledger, for any window", async () => {
  const dir = await Deno.makeTempDir({ prefix: "switchyard-total-usage-" });
  try {
    const path = `${dir}/s.db`;
    const store = openSqliteStore(path);
    const accounts = [await store.ensureAccount("a"), await store.ensureAccount("b")];
    for (const a of accounts) await store.credit(a.id, 1_000_000_000, "test");
    const charge = (amount: number) => ({
      units: [{ unit: "output_tokens", quantity: 1, amount }],
      amount,
      estimated: false,
    });
    const hold = (i: number) =>
      store.reserve({
        requestId: `r${i}`,
        keyId: "k",
        accountId: accounts[i % 2].id,
        endpoint: "responses",
        model: "m",
        provider: "p",
        reserve: 10,
        estimate: { units: [{ unit: "input_tokens", quantity: 1, amount: 1 }], amount: 1 },
      });
    // 300 calls: every 11th left held; beside every 7th, a call released (a gap in the ids).
    let settled = 0;
    for (let i = 0; i < 300; i++) {
      const released = i % 7 === 0 ? await hold(i) : null;
      const id = await hold(i);
      assert.ok(id);
      if (released) await store.settle(released, null);
      if (i % 11 === 0) continue;
      await store.settle(id, charge(1000 + i));
      settled++;
    }
    // Spread over 60 days in id order, as a ledger written over that time would be.
    const start = Date.UTC(2026, 0, 1, 5);
    const db = new DatabaseSync(path);
    db.prepare(`UPDATE ledger SET created_at = ? + id * ?`).run(start, (60 * DAY) / 350);
    const scan = db.prepare(
      `SELECT date(created_at / 1000, 'unixepoch') AS day, count(*) AS requests,
              sum(amount) AS amount
       FROM ledger WHERE kind = 'charge' AND status = 'settled' AND created_at >= ?
       GROUP BY day ORDER BY day`,
    );
    for (const days of [0, 1, 12.5, 30, 59, 61, 90]) {
      const since = start + 60 * DAY - days * DAY;
      const expected = (scan.all(since) as { day: string; requests: number; amount: number }[])
        .map((r) => ({ day: r.day, requests: r.requests, amount: r.amount }));
      assert.deepEqual(await store.totalUsageByDay(since), expected, `the last ${days} days`);
    }
    const all = await store.totalUsageByDay(start);
    assert.equal(all.reduce((n, d) => n + d.requests, 0), settled, "every settled charge");
    assert.ok(all.length > 50, "one entry per day with spend");
    db.close();
    store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an empty ledger has no spend", async () => {
  const dir = await Deno.makeTempDir({ prefix: "switchyard-total-usage-" });
  try {
    const store = openSqliteStore(`${dir}/s.db`);
    assert.deepEqual(await store.totalUsageByDay(0), []);
    store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
