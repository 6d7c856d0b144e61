/**
 * What the PostgreSQL store reports from its ledger: an account's usage (by unit, by model, what
 * its calls in flight hold), settled spend by UTC day — an account's, or every account's — the
 * prompt cache's figures, and the ledger itself, newest first, a page at a time. Sums are `numeric`, exact at any size (see
 * `amounts.ts`); reports may read much, so they get the longer deadline.
 */
import {
  ACCOUNT_COLUMNS,
  CACHE_SUMS,
  LEDGER_COLUMNS,
  toCacheUsage,
  toDay,
  toLedgerEntry,
  toUsage,
} from "./rows.ts";
import { type PgConnection, REPORT_TIMEOUT_MS } from "./postgres_connection.ts";
import type { ReportsPart } from "./store_parts.ts";

/** A ledger row's UTC day, `YYYY-MM-DD`. */
const DAY = `to_char(to_timestamp(created_at / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD')`;

/** The reports of the store on `c`. */
export function postgresReports(c: PgConnection): ReportsPart {
  const { sql } = c;
  return {
    async usage(accountId) {
      const settled = sql`l.account_id = ${accountId} AND l.kind = 'charge'
        AND l.status = 'settled'`;
      const [accounts, requests, units, models, held] = await c.run(
        Promise.all([
          sql`SELECT ${sql.unsafe(ACCOUNT_COLUMNS)} FROM accounts WHERE id = ${accountId}`,
          sql`SELECT count(*) AS n FROM ledger l WHERE ${settled}`,
          sql`SELECT u->>'unit' AS unit, sum((u->>'quantity')::numeric) AS quantity,
                   sum((u->>'amount')::numeric) AS amount
            FROM ledger l, jsonb_array_elements(l.units) u WHERE ${settled}
            GROUP BY 1 ORDER BY 1`,
          sql`SELECT model, count(*) AS requests, sum(amount) AS amount FROM ledger l
            WHERE ${settled} GROUP BY model ORDER BY model`,
          sql`SELECT u->>'unit' AS unit, sum((u->>'quantity')::numeric) AS quantity,
                   sum((u->>'amount')::numeric) AS amount
            FROM ledger l, jsonb_array_elements(l.estimate->'units') u
            WHERE l.account_id = ${accountId} AND l.kind = 'charge' AND l.status = 'held'
            GROUP BY 1 ORDER BY 1`,
        ]),
        REPORT_TIMEOUT_MS,
      );
      return toUsage(accounts[0], requests[0], units, models, held);
    },

    async usageByDay(accountId, since) {
      const rows = await c.run(
        sql`
        SELECT ${sql.unsafe(DAY)} AS day, count(*) AS requests, sum(amount) AS amount
        FROM ledger WHERE account_id = ${accountId} AND kind = 'charge' AND status = 'settled'
          AND created_at >= ${since}
        GROUP BY 1 ORDER BY 1`,
        REPORT_TIMEOUT_MS,
      );
      return rows.map(toDay);
    },

    async totalUsageByDay(since) {
      const rows = await c.run(
        sql`
        SELECT ${sql.unsafe(DAY)} AS day, count(*) AS requests, sum(amount) AS amount
        FROM ledger WHERE kind = 'charge' AND status = 'settled' AND created_at >= ${since}
        GROUP BY 1 ORDER BY 1`,
        REPORT_TIMEOUT_MS,
      );
      return rows.map(toDay);
    },

    async cacheUsage(since, accountId) {
      const rows = await c.run(
        accountId === undefined
          ? sql`
          SELECT ${sql.unsafe(DAY)} AS day, l.model, l.cache_miss, ${sql.unsafe(CACHE_SUMS)}
          FROM ledger l WHERE l.kind = 'charge' AND l.status = 'settled'
            AND l.created_at >= ${since} AND l.input_tokens > 0
          GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 NULLS FIRST`
          : sql`
          SELECT ${sql.unsafe(DAY)} AS day, l.key_id, l.model, l.cache_miss,
                 ${sql.unsafe(CACHE_SUMS)}
          FROM ledger l WHERE l.account_id = ${accountId} AND l.kind = 'charge'
            AND l.status = 'settled' AND l.created_at >= ${since} AND l.input_tokens > 0
          GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4 NULLS FIRST`,
        REPORT_TIMEOUT_MS,
      );
      return rows.map(toCacheUsage);
    },

    async ledgerPage(page) {
      const before = page.before ?? Number.MAX_SAFE_INTEGER;
      const account = page.accountId === undefined
        ? sql``
        : sql`AND l.account_id = ${page.accountId}`;
      const rows = await c.run(
        sql`
        SELECT ${sql.unsafe(LEDGER_COLUMNS)} FROM ledger l JOIN accounts a ON a.id = l.account_id
        WHERE l.id < ${before} ${account} ORDER BY l.id DESC LIMIT ${page.limit}`,
        REPORT_TIMEOUT_MS,
      );
      return rows.map(toLedgerEntry);
    },
  };
}
