/**
 * What the SQLite store keeps of calls' answers: the upstream objects they created (stored
 * responses and their items, containers), by the account whose call created each, and the
 * Responses conversations the gateway keeps itself — both group-committed with the call's
 * settlement, both pruned by age (kept in insertion order, so the expired ones are a range at the
 * start).
 */
import { checkTokens } from "./amounts.ts";
import { type Row, toStoredResponse, toUpstreamObject } from "./rows.ts";
import { answer, type SqliteConnection } from "./sqlite_connection.ts";
import type { ObjectsPart } from "./store_parts.ts";

/** The upstream objects and kept conversations of the store on `c`. */
export function sqliteObjects(c: SqliteConnection): ObjectsPart {
  const s = c.prepare({
    recordObject:
      `INSERT INTO upstream_objects (id, account_id, kind, context_tokens, created_at, provider)
       VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    upstreamObject:
      `SELECT id, account_id, kind, context_tokens, provider FROM upstream_objects WHERE id = ?`,
    // Objects are in creation order: the expired ones are the rowids before the first live one.
    pruneObjects: `DELETE FROM upstream_objects WHERE rowid < coalesce(
         (SELECT rowid FROM upstream_objects WHERE created_at >= ?1 ORDER BY rowid LIMIT 1),
         (SELECT max(rowid) + 1 FROM upstream_objects))`,
    saveResponse: `INSERT INTO stored_responses (id, account_id, previous_id, items, context_tokens,
                                     created_at)
       VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    // Walks back from an answer while within the bounds (one step past the byte bound).
    responseChain: `WITH RECURSIVE chain (id, previous_id, n, bytes) AS (
         SELECT id, previous_id, 1, length(items) FROM stored_responses WHERE id = ?1
         UNION ALL
         SELECT s.id, s.previous_id, c.n + 1, c.bytes + length(s.items)
         FROM chain c JOIN stored_responses s ON s.id = c.previous_id
         WHERE c.n < ?2 AND c.bytes <= ?3
       )
       SELECT s.id, s.account_id, s.previous_id, s.items, s.context_tokens, s.created_at
       FROM chain c JOIN stored_responses s ON s.id = c.id ORDER BY c.n`,
    pruneResponses: `DELETE FROM stored_responses WHERE rowid < coalesce(
         (SELECT rowid FROM stored_responses WHERE created_at >= ?1 ORDER BY rowid LIMIT 1),
         (SELECT max(rowid) + 1 FROM stored_responses))`,
  });

  return {
    async recordObjects(objects) {
      if (!objects.length) return;
      for (const o of objects) checkTokens("an upstream object", o.contextTokens);
      const now = Date.now();
      // One queued write for the answer's objects; several statements are one savepoint.
      await c.write(() => {
        for (const o of objects) {
          s.recordObject.run(o.id, o.accountId, o.kind, o.contextTokens, now, o.provider ?? null);
        }
      }, objects.length > 1);
    },

    upstreamObject: (id) =>
      answer(() => {
        const row = s.upstreamObject.get(id) as Row | undefined;
        return row && toUpstreamObject(row);
      }),

    pruneObjects: (before) => answer(() => Number(c.tx(() => s.pruneObjects.run(before)).changes)),

    async saveResponse(r) {
      checkTokens("a conversation step", r.contextTokens);
      await c.write(() => {
        s.saveResponse.run(r.id, r.accountId, r.previousId, r.items, r.contextTokens, r.createdAt);
      });
    },

    responseChain: (id, bound) =>
      answer(() =>
        (s.responseChain.all(id, bound.steps, bound.bytes) as Row[]).map(toStoredResponse)
      ),

    pruneResponses: (before) =>
      answer(() => Number(c.tx(() => s.pruneResponses.run(before)).changes)),
  };
}
