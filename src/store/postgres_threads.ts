/**
 * The Messages threads the PostgreSQL store keeps for the gateway (see `pipeline/threads.ts`):
 * one row per turn under its answer's id, linked to the turn it continued, walked back from the
 * newest within a bound, and pruned by age.
 */
import { toThreadTurn } from "./rows.ts";
import { type PgConnection, REPORT_TIMEOUT_MS } from "./postgres_connection.ts";
import type { ThreadsPart } from "./store_parts.ts";

/** The thread turns of the store on `c`. */
export function postgresThreads(c: PgConnection): ThreadsPart {
  const { sql } = c;
  return {
    async saveThreadTurn(t) {
      await c.run(sql`
        INSERT INTO thread_turns (id, account_id, previous_id, turn, created_at)
        VALUES (${t.id}, ${t.accountId}, ${t.previousId}, ${t.turn}, ${t.createdAt})
        ON CONFLICT (id) DO NOTHING`);
    },

    async threadChain(id, bound) {
      const rows = await c.run(sql`
        WITH RECURSIVE chain (id, previous_id, n, bytes) AS (
          SELECT id, previous_id, 1, length(turn)::bigint FROM thread_turns WHERE id = ${id}
          UNION ALL
          SELECT t.id, t.previous_id, c.n + 1, c.bytes + length(t.turn)
          FROM chain c JOIN thread_turns t ON t.id = c.previous_id
          WHERE c.n < ${bound.steps} AND c.bytes <= ${bound.bytes}
        )
        SELECT t.id, t.account_id, t.previous_id, t.turn, t.created_at
        FROM chain c JOIN thread_turns t ON t.id = c.id ORDER BY c.n`);
      return rows.map(toThreadTurn);
    },

    async pruneThreadTurns(before) {
      const result = await c.run(
        sql`DELETE FROM thread_turns WHERE created_at < ${before}`,
        REPORT_TIMEOUT_MS,
      );
      return result.count;
    },
  };
}
