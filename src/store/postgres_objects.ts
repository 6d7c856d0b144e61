/**
 * What the PostgreSQL store keeps of calls' answers: the upstream objects they created (stored
 * responses, containers), by the account whose call created each, and the Responses conversations
 * the gateway keeps itself — both pruned by age.
 */
import { checkTokens } from "./amounts.ts";
import { toStoredResponse, toUpstreamObject } from "./rows.ts";
import { chainQuery, RESPONSES } from "./chains.ts";
import type { PgConnection } from "./postgres_connection.ts";
import type { ObjectsPart } from "./store_parts.ts";

/** The upstream objects and kept conversations of the store on `c`. */
export function postgresObjects(c: PgConnection): ObjectsPart {
  const { sql } = c;
  const responseChain = chainQuery(RESPONSES, "postgres");
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

    pruneObjects: (before) => c.prune("upstream_objects", "created_at", before),

    async saveResponse(r) {
      checkTokens("a conversation step", r.contextTokens);
      await c.run(sql`
        INSERT INTO stored_responses (id, account_id, previous_id, items, context_tokens,
                                      created_at)
        VALUES (${r.id}, ${r.accountId}, ${r.previousId}, ${r.items}, ${r.contextTokens},
                ${r.createdAt})
        ON CONFLICT (id) DO NOTHING`);
    },

    responseChain: async (id, bound) =>
      (await c.query(responseChain, [id, bound.steps, bound.bytes])).map(toStoredResponse),

    pruneResponses: (before) => c.prune("stored_responses", "created_at", before),
  };
}
