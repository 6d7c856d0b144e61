/**
 * The Messages threads the SQLite store keeps for the gateway (see `pipeline/threads.ts`): one row
 * per turn under its answer's id, linked to the turn it continued, walked back from the newest
 * within a bound, and pruned by age (kept in insertion order, so the expired ones are a range at
 * the start).
 */
import { type Row, toThreadTurn } from "./rows.ts";
import { answer, type SqliteConnection } from "./sqlite_connection.ts";
import type { ThreadsPart } from "./store_parts.ts";

/** The thread turns of the store on `c`. */
export function sqliteThreads(c: SqliteConnection): ThreadsPart {
  const s = c.prepare({
    saveThreadTurn: `INSERT INTO thread_turns (id, account_id, previous_id, turn, created_at)
       VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    // Walks back from a turn while within the bounds (one turn past the byte bound).
    threadChain: `WITH RECURSIVE chain (id, previous_id, n, bytes) AS (
         SELECT id, previous_id, 1, length(turn) FROM thread_turns WHERE id = ?1
         UNION ALL
         SELECT t.id, t.previous_id, c.n + 1, c.bytes + length(t.turn)
         FROM chain c JOIN thread_turns t ON t.id = c.previous_id
         WHERE c.n < ?2 AND c.bytes <= ?3
       )
       SELECT t.id, t.account_id, t.previous_id, t.turn, t.created_at
       FROM chain c JOIN thread_turns t ON t.id = c.id ORDER BY c.n`,
    pruneThreadTurns: `DELETE FROM thread_turns WHERE rowid < coalesce(
         (SELECT rowid FROM thread_turns WHERE created_at >= ?1 ORDER BY rowid LIMIT 1),
         (SELECT max(rowid) + 1 FROM thread_turns))`,
  });

  return {
    async saveThreadTurn(t) {
      await c.write(() => {
        s.saveThreadTurn.run(t.id, t.accountId, t.previousId, t.turn, t.createdAt);
      });
    },

    threadChain: (id, bound) =>
      answer(() => (s.threadChain.all(id, bound.steps, bound.bytes) as Row[]).map(toThreadTurn)),

    pruneThreadTurns: (before) =>
      answer(() => Number(c.tx(() => s.pruneThreadTurns.run(before)).changes)),
  };
}
