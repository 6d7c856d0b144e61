/**
 * The Messages threads the PostgreSQL store keeps for the gateway (see `pipeline/threads.ts`):
 * one row per turn under its answer's id, linked to the turn it continued, walked back from the
 * newest within a bound, and pruned by age.
 */
import { toThreadTurn } from "./rows.ts";
import { chainQuery, THREADS } from "./chains.ts";
import type { PgConnection } from "./postgres_connection.ts";
import type { ThreadsPart } from "./store_parts.ts";

/** The thread turns of the store on `c`. */
export function postgresThreads(c: PgConnection): ThreadsPart {
  const { sql } = c;
  const threadChain = chainQuery(THREADS, "postgres");
  return {
    async saveThreadTurn(t) {
      await c.run(sql`
        INSERT INTO thread_turns (id, account_id, previous_id, turn, created_at)
        VALUES (${t.id}, ${t.accountId}, ${t.previousId}, ${t.turn}, ${t.createdAt})
        ON CONFLICT (id) DO NOTHING`);
    },

    threadChain: async (id, bound) =>
      (await c.query(threadChain, [id, bound.steps, bound.bytes])).map(toThreadTurn),

    pruneThreadTurns: (before) => c.prune("thread_turns", "created_at", before),
  };
}
