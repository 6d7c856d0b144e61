/**
 * The Messages threads the SQLite store keeps for the gateway (see `pipeline/threads.ts`): one row
 * per turn under its answer's id, linked to the turn it continued, walked back from the newest
 * within a bound, and pruned by age (kept in insertion order, so the expired ones are a range at
 * the start).
 */
import { type Row, toThreadTurn } from "./rows.ts";
import { chainQuery, THREADS } from "./chains.ts";
import { answer, inOrderPrune, type SqliteConnection } from "./sqlite_connection.ts";
import type { ThreadsPart } from "./store_parts.ts";

/** The thread turns of the store on `c`. */
export function sqliteThreads(c: SqliteConnection): ThreadsPart {
  const s = c.prepare({
    saveThreadTurn: `INSERT INTO thread_turns (id, account_id, previous_id, turn, created_at)
       VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    threadChain: chainQuery(THREADS, "sqlite"),
    pruneThreadTurns: inOrderPrune("thread_turns"),
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
