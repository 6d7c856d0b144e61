/**
 * Where conversations' prompt caches are, as PostgreSQL replicas share them (see
 * `pipeline/affinity.ts`): one row per conversation (by the hash the pipeline names it with), in
 * an unlogged table — a placement lost in a crash only costs a cache miss — replaced on change,
 * read when a replica's own copy is a second old, pruned once expired.
 */
import type { PgConnection } from "./postgres_connection.ts";
import type { AffinityPart } from "./store_parts.ts";

/** The conversations' placements of the store on `c`. */
export function postgresAffinity(c: PgConnection): AffinityPart {
  const { sql } = c;
  return {
    async affinity(id) {
      const [row] = await c.run(sql`
        SELECT deployment, key_id, expires_at FROM conversation_affinity
        WHERE id = ${id} AND expires_at > ${Date.now()}`);
      return row &&
        { deployment: row.deployment, key: row.key_id, expiresAt: Number(row.expires_at) };
    },

    async saveAffinity(id, record) {
      await c.run(sql`
        INSERT INTO conversation_affinity (id, deployment, key_id, expires_at)
        VALUES (${id}, ${record.deployment}, ${record.key}, ${record.expiresAt})
        ON CONFLICT (id) DO UPDATE SET deployment = excluded.deployment,
          key_id = excluded.key_id, expires_at = excluded.expires_at`);
    },

    pruneAffinity: (before) => c.prune("conversation_affinity", "expires_at", before),
  };
}
