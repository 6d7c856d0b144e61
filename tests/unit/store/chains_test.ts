/**
 * The chain walk both stores share (`chains.ts`), run on an in-memory SQLite table; PostgreSQL runs
 * the same query in `store_contract_test.ts`.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { chainQuery, RESPONSES, THREADS } from "../../../src/store/chains.ts";

/** A thread_turns table holding the turns t1 ← t2 ← t3 ← t4, each 10 bytes. */
function turns(): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  db.exec(`CREATE TABLE thread_turns (id TEXT NOT NULL UNIQUE, account_id INTEGER NOT NULL,
             previous_id TEXT, turn TEXT NOT NULL, created_at INTEGER NOT NULL)`);
  const insert = db.prepare(`INSERT INTO thread_turns VALUES (?, 1, ?, ?, ?)`);
  for (let n = 1; n <= 4; n++) insert.run(`t${n}`, n === 1 ? null : `t${n - 1}`, "x".repeat(10), n);
  return db;
}

Deno.test("a chain is walked back from its newest row, within the steps and one row past the bytes", () => {
  const db = turns();
  try {
    const walk = db.prepare(chainQuery(THREADS, "sqlite"));
    const ids = (id: string, steps: number, bytes: number) =>
      walk.all(id, steps, bytes).map((row) => row.id);
    assert.deepEqual(ids("t4", 10, 1_000), ["t4", "t3", "t2", "t1"]);
    assert.deepEqual(ids("t3", 10, 1_000), ["t3", "t2", "t1"]);
    assert.deepEqual(ids("t4", 2, 1_000), ["t4", "t3"]);
    assert.deepEqual(ids("t4", 10, 15), ["t4", "t3"], "one row past the byte bound");
    assert.deepEqual(ids("nope", 10, 1_000), []);
    assert.deepEqual(
      Object.keys(walk.all("t1", 1, 1)[0]),
      ["id", "account_id", "previous_id", "turn", "created_at"],
    );
  } finally {
    db.close();
  }
});

Deno.test("each dialect numbers the parameters its own way; PostgreSQL sums lengths as bigint", () => {
  const sqlite = chainQuery(RESPONSES, "sqlite");
  const postgres = chainQuery(RESPONSES, "postgres");
  for (const n of [1, 2, 3]) {
    assert.ok(sqlite.includes(`?${n}`) && postgres.includes(`$${n}`));
  }
  assert.ok(!sqlite.includes("$") && !postgres.includes("?"));
  assert.ok(postgres.includes("length(items)::bigint") && !sqlite.includes("::"));
  assert.match(sqlite, /SELECT r\.id, r\.account_id, r\.previous_id, r\.items, r\.context_tokens/);
});
