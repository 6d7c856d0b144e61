/**
 * What the SQLite store keeps of calls' answers: the upstream objects they created (stored
 * responses and their items, containers), by the account whose call created each, and the
 * Responses conversations the gateway keeps itself — both group-committed with the call's
 * settlement, both pruned by age (kept in insertion order, so the expired ones are a range at the
 * start).
 */
import { checkTokens } from "./amounts.ts";
import { type Row, toStoredResponse, toUpstreamObject } from "./rows.ts";
import { chainQuery, RESPONSES } from "./chains.ts";
import { answer, inOrderPrune, type SqliteConnection } from "./sqlite_connection.ts";
import type { ObjectsPart } from "./store_parts.ts";

/** The upstream objects and kept conversations of the store on `c`. */
export function sqliteObjects(c: SqliteConnection): ObjectsPart {
  const s = c.prepare({
    recordObject:
      `INSERT INTO upstream_objects (id, account_id, kind, context_tokens, created_at, provider)
       VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    upstreamObject:
      `SELECT id, account_id, kind, context_tokens, provider FROM upstream_objects WHERE id = ?`,
    // Objects are in creation order: the expired ones are a range at the start.
    pruneObjects: inOrderPrune("upstream_objects"),
    saveResponse: `INSERT INTO stored_responses (id, account_id, previous_id, items, context_tokens,
                                     created_at)
       VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    responseChain: chainQuery(RESPONSES, "sqlite"),
    pruneResponses: inOrderPrune("stored_responses"),
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
