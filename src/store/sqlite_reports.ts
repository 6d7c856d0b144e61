/**
 * What the SQLite store reports from its ledger: an account's usage (by unit, by model, what its
 * calls in flight hold), settled spend by UTC day — an account's, or every account's — the prompt
 * cache's figures, and the ledger itself, newest first, a page at a time. Sums are exact at any size (see `amounts.ts`).
 */
import {
  ACCOUNT_COLUMNS,
  CACHE_SUMS,
  LEDGER_COLUMNS,
  type Row,
  toCacheUsage,
  toDay,
  toLedgerEntry,
  toUsage,
} from "./rows.ts";
import { answer, newestFirst, type SqliteConnection } from "./sqlite_connection.ts";
import type { ReportsPart } from "./store_parts.ts";

const SETTLED_CHARGES = "l.account_id = ? AND l.kind = 'charge' AND l.status = 'settled'";
/**
 * How far out of time order ledger ids may run (an entry is timed as it is written, under the
 * write lock, but the clock can be stepped back): time bounds found by id are moved back this
 * much, and the rows are then filtered by time exactly.
 */
const LEDGER_SKEW_MS = 3600_000;

/** The reports of the store on `c`. */
export function sqliteReports(c: SqliteConnection): ReportsPart {
  const s = c.prepare({
    accountById: `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`,
    requests: `SELECT count(*) AS n FROM ledger l WHERE ${SETTLED_CHARGES}`,
    byUnit: `SELECT json_extract(u.value, '$.unit') AS unit,
                    sum(json_extract(u.value, '$.quantity')) AS quantity,
                    sum(json_extract(u.value, '$.amount')) AS amount
             FROM ledger l, json_each(l.units) u WHERE ${SETTLED_CHARGES}
             GROUP BY 1 ORDER BY 1`,
    byModel: `SELECT model, count(*) AS requests, sum(amount) AS amount FROM ledger l
              WHERE ${SETTLED_CHARGES} GROUP BY model ORDER BY model`,
    heldByUnit: `SELECT json_extract(u.value, '$.unit') AS unit,
                        sum(json_extract(u.value, '$.quantity')) AS quantity,
                        sum(json_extract(u.value, '$.amount')) AS amount
                 FROM ledger l INDEXED BY ledger_held, json_each(l.estimate, '$.units') u
                 WHERE l.account_id = ? AND l.kind = 'charge' AND l.status = 'held'
                 GROUP BY 1 ORDER BY 1`,
    byDay: `SELECT date(created_at / 1000, 'unixepoch') AS day, count(*) AS requests,
                   sum(amount) AS amount
            FROM ledger l WHERE ${SETTLED_CHARGES} AND created_at >= ?
            GROUP BY day ORDER BY day`,
    // Every account's: from a lower bound on the id (see `firstEntryFrom`), not a scan.
    allByDay: `SELECT date(created_at / 1000, 'unixepoch') AS day, count(*) AS requests,
                      sum(amount) AS amount
               FROM ledger l WHERE l.id >= ?2 AND l.kind = 'charge' AND l.status = 'settled'
                 AND l.created_at >= ?1
               GROUP BY day ORDER BY day`,
    // The prompt cache's figures: an account's per key; every account's from a lower bound on the
    // id (see `firstEntryFrom`).
    cacheByKey: `SELECT date(created_at / 1000, 'unixepoch') AS day, l.key_id, l.model,
                        l.cache_miss, ${CACHE_SUMS}
                 FROM ledger l WHERE ${SETTLED_CHARGES} AND l.created_at >= ?
                   AND l.input_tokens > 0
                 GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
    cacheAll: `SELECT date(created_at / 1000, 'unixepoch') AS day, l.model, l.cache_miss,
                      ${CACHE_SUMS}
               FROM ledger l WHERE l.id >= ?2 AND l.kind = 'charge' AND l.status = 'settled'
                 AND l.created_at >= ?1 AND l.input_tokens > 0
               GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    ledgerIds: `SELECT min(id) AS lo, max(id) AS hi FROM ledger`,
    entryFrom: `SELECT id, created_at FROM ledger WHERE id >= ? ORDER BY id LIMIT 1`,
    ledgerPage: `SELECT ${LEDGER_COLUMNS} FROM ledger l JOIN accounts a ON a.id = l.account_id
                 WHERE l.id < ? ORDER BY l.id DESC LIMIT ?`,
    accountLedgerPage:
      `SELECT ${LEDGER_COLUMNS} FROM ledger l JOIN accounts a ON a.id = l.account_id
                        WHERE l.account_id = ? AND l.id < ? ORDER BY l.id DESC LIMIT ?`,
  }, [
    "accountById",
    "byUnit",
    "byModel",
    "heldByUnit",
    "byDay",
    "allByDay",
    "cacheByKey",
    "cacheAll",
    "ledgerPage",
    "accountLedgerPage",
  ]);

  /**
   * The smallest ledger id from which every entry was created at `time` or later (one past the
   * last id when none was): a binary search over ids, which follow creation order (give or take
   * `LEDGER_SKEW_MS`) — a few index lookups where a filter on `created_at` would read the whole
   * ledger, which has no index on it.
   */
  const firstEntryFrom = (time: number): number => {
    const ids = s.ledgerIds.get() as Row;
    let lo = ids.lo === null ? 1 : Number(ids.lo);
    let hi = ids.hi === null ? lo : Number(ids.hi) + 1;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const row = s.entryFrom.get(mid) as Row | undefined;
      // None: the last entries were removed meanwhile (a released hold) — none is newer.
      if (!row || Number(row.created_at) >= time) hi = mid;
      else lo = Number(row.id) + 1;
    }
    return lo;
  };

  return {
    usage: (accountId) =>
      answer(() =>
        toUsage(
          s.accountById.get(accountId) as Row,
          s.requests.get(accountId) as Row,
          s.byUnit.all(accountId) as Row[],
          s.byModel.all(accountId) as Row[],
          s.heldByUnit.all(accountId) as Row[],
        )
      ),

    usageByDay: (accountId, since) =>
      answer(() => (s.byDay.all(accountId, since) as Row[]).map(toDay)),

    totalUsageByDay: (since) =>
      answer(() => {
        const first = firstEntryFrom(since - LEDGER_SKEW_MS);
        return (s.allByDay.all(since, first) as Row[]).map(toDay);
      }),

    cacheUsage: (since, accountId) =>
      answer(() =>
        (accountId === undefined
          ? s.cacheAll.all(since, firstEntryFrom(since - LEDGER_SKEW_MS))
          : s.cacheByKey.all(accountId, since) as Row[]).map(toCacheUsage)
      ),

    ledgerPage: (page) =>
      answer(() => newestFirst(s.ledgerPage, s.accountLedgerPage, page).map(toLedgerEntry)),
  };
}
