/**
 * Alerts in the PostgreSQL store: raising one once across replicas (what it is about is unique,
 * so the insert decides), its delivery state, the pages the admin API lists — and the checks that
 * find what to alert on: budgets spent past a threshold, low balances, keys about to expire.
 */
import { accountOwner, keyOwner } from "./limits.ts";
import { ALERT_COLUMNS, KEY_COLUMNS, toAlert, toKey, toLowBalance, toSpentBudget } from "./rows.ts";
import { type PgConnection, REPORT_TIMEOUT_MS } from "./postgres_connection.ts";
import type { AlertsPart } from "./store_parts.ts";

/** The alerts of the store on `c`. */
export function postgresAlerts(c: PgConnection): AlertsPart {
  const { sql } = c;
  const ALERT = sql.unsafe(ALERT_COLUMNS);
  return {
    async raiseAlert(alert) {
      // Inserted only when absent (an id is drawn from the sequence only then); ON CONFLICT for
      // the race of two raising it at once.
      const [row] = await c.run(sql`
        INSERT INTO alerts (type, owner, period, window_start, threshold, account_id, key_id,
                            payload, status, next_attempt_at, created_at)
        SELECT ${alert.type}, ${alert.owner}, ${alert.period}, ${alert.windowStart},
               ${alert.threshold}, ${alert.accountId}, ${alert.keyId}, ${c.json(alert.payload)},
               ${alert.status}, ${alert.status === "pending" ? alert.createdAt : null},
               ${alert.createdAt}
        WHERE NOT EXISTS (
          SELECT 1 FROM alerts WHERE type = ${alert.type} AND owner = ${alert.owner}
            AND period = ${alert.period} AND window_start = ${alert.windowStart}
            AND threshold = ${alert.threshold})
        ON CONFLICT DO NOTHING RETURNING id`);
      return row ? Number(row.id) : null;
    },

    async alertsDue(now, limit) {
      const rows = await c.run(sql`
        SELECT ${ALERT} FROM alerts
        WHERE status = 'pending' AND next_attempt_at <= ${now}
        ORDER BY next_attempt_at, id LIMIT ${limit}`);
      return rows.map(toAlert);
    },

    async markAlert(id, outcome) {
      const result = await c.run(sql`
        UPDATE alerts SET status = ${outcome.status}, attempts = attempts + 1,
          last_attempt_at = ${outcome.at},
          next_attempt_at = ${outcome.status === "pending" ? outcome.nextAttemptAt : null},
          last_error = ${outcome.status === "delivered" ? null : outcome.error},
          delivered_at = ${outcome.status === "delivered" ? outcome.at : null}
        WHERE id = ${id} AND status = 'pending'`);
      return result.count === 1;
    },

    async listAlerts(page) {
      const account = page.accountId === undefined
        ? sql``
        : sql`AND account_id = ${page.accountId}`;
      const rows = await c.run(
        sql`
        SELECT ${ALERT} FROM alerts
        WHERE id < ${page.before ?? Number.MAX_SAFE_INTEGER} ${account}
        ORDER BY id DESC LIMIT ${page.limit}`,
        REPORT_TIMEOUT_MS,
      );
      return rows.map(toAlert);
    },

    async spentBudgets(percent, of) {
      const owners = of
        ? sql`AND b.owner = ANY(${[
          ...of.keyIds.map(keyOwner),
          ...of.accountIds.map(accountOwner),
        ]}::text[])`
        : sql``;
      // A key's budget row names the key (`key:<id>`), an account's the account (`account:<id>`).
      const rows = await c.run(
        sql`
        SELECT b.owner, b.period, b.amount, b.held, b.window_start, b.window_spent,
               k.id AS key_id, k.name AS key_name, a.id AS account_id, a.name AS account_name
        FROM budgets b
        LEFT JOIN keys k ON b.owner LIKE 'key:%' AND k.id = substr(b.owner, 5)
        JOIN accounts a ON a.id = CASE WHEN b.owner LIKE 'account:%'
                                       THEN substr(b.owner, 9)::bigint ELSE k.account_id END
        WHERE b.window_spent * 100 >= b.amount * ${percent}
          AND (k.id IS NULL OR k.revoked_at IS NULL) ${owners}
        ORDER BY b.owner, b.period`,
        REPORT_TIMEOUT_MS,
      );
      return rows.map(toSpentBudget);
    },

    async lowBalances(amount, accountIds) {
      const only = accountIds ? sql`AND a.id = ANY(${accountIds}::bigint[])` : sql``;
      // Since the account's last credit (or debit): a top-up starts a low balance afresh.
      const rows = await c.run(
        sql`
        SELECT a.id, a.name, a.balance, a.held,
               coalesce((SELECT max(l.created_at) FROM ledger l
                         WHERE l.account_id = a.id AND l.kind = 'credit'), a.created_at) AS since
        FROM accounts a WHERE a.balance < ${amount} ${only}
        ORDER BY a.id`,
        REPORT_TIMEOUT_MS,
      );
      return rows.map(toLowBalance);
    },

    async expiringKeys(after, until) {
      const rows = await c.run(
        sql`
        SELECT ${sql.unsafe(KEY_COLUMNS)} FROM keys k JOIN accounts a ON a.id = k.account_id
        WHERE k.revoked_at IS NULL AND k.disabled_at IS NULL AND k.expires_at IS NOT NULL
          AND k.expires_at > ${after} AND k.expires_at <= ${until}
        ORDER BY k.expires_at, k.id`,
        REPORT_TIMEOUT_MS,
      );
      return rows.map(toKey);
    },
  };
}
