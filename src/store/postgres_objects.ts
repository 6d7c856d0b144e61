/**
 * What the PostgreSQL store keeps of calls' answers: the upstream objects they created (stored
 * responses, containers), by the account whose call created each, and the Responses conversations
 * the gateway keeps itself — both pruned by age.
 */
import { checkTokens } from "./amounts.ts";
import { toStoredResponse, toUpstreamObject } from "./rows.ts";
import { type PgConnection, REPORT_TIMEOUT_MS } from "./postgres_connection.ts";
import type { ObjectsPart } from "./store_parts.ts";

/** The upstream objects and kept conversations of the store on `c`. */
export function postgresObjects(c: PgConnection): ObjectsPart {
  const { sql } = c;
  return {
    async recordObjects(objects) {
      if (!objects.length) return;
      for (const o of objects) checkTokens("an upstream object", o.contextTokens);
      // One statement for the answer's objects, inserted in their order (so the first of an id
      // is the one kept).
      await c.run(sql`
        INSERT INTO upstream_objects (id, account_id, kind, context_tokens, provider, created_at)
        SELECT id, account_id, kind, context_tokens, provider, ${Date.now()}::bigint
        FROM unnest(${objects.map((o) => o.id)}::text[],
                    ${objects.map((o) => o.accountId)}::bigint[],
                    ${objects.map((o) => o.kind)}::text[],
                    ${objects.map((o) => o.contextTokens)}::bigint[],
                    ${objects.map((o) => o.provider ?? null)}::text[])
             WITH ORDINALITY AS o(id, account_id, kind, context_tokens, provider, n)
        ORDER BY n
        ON CONFLICT (id) DO NOTHING`);
    },

    async upstreamObject(id) {
      const [row] = await c.run(sql`
        SELECT id, account_id, kind, context_tokens, provider FROM upstream_objects
        WHERE id = ${id}`);
      return row && toUpstreamObject(row);
    },

    async pruneObjects(before) {
      const result = await c.run(
        sql`DELETE FROM upstream_objects WHERE created_at < ${before}`,
        REPORT_TIMEOUT_MS,
      );
      return result.count;
    },

    async saveResponse(r) {
      checkTokens("a conversation step", r.contextTokens);
      await c.run(sql`
        INSERT INTO stored_responses (id, account_id, previous_id, items, context_tokens,
                                      created_at)
        VALUES (${r.id}, ${r.accountId}, ${r.previousId}, ${r.items}, ${r.contextTokens},
                ${r.createdAt})
        ON CONFLICT (id) DO NOTHING`);
    },

    async responseChain(id, bound) {
      const rows = await c.run(sql`
        WITH RECURSIVE chain (id, previous_id, n, bytes) AS (
          SELECT id, previous_id, 1, length(items)::bigint FROM stored_responses WHERE id = ${id}
          UNION ALL
          SELECT s.id, s.previous_id, c.n + 1, c.bytes + length(s.items)
          FROM chain c JOIN stored_responses s ON s.id = c.previous_id
          WHERE c.n < ${bound.steps} AND c.bytes <= ${bound.bytes}
        )
        SELECT s.id, s.account_id, s.previous_id, s.items, s.context_tokens, s.created_at
        FROM chain c JOIN stored_responses s ON s.id = c.id ORDER BY c.n`);
      return rows.map(toStoredResponse);
    },

    async pruneResponses(before) {
      const result = await c.run(
        sql`DELETE FROM stored_responses WHERE created_at < ${before}`,
        REPORT_TIMEOUT_MS,
      );
      return result.count;
    },
  };
}
