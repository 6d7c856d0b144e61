/**
 * Alerts in the SQLite store: raising one once (what it is about is unique, so the insert is the
 * decision), its delivery state, the pages the admin API lists — and the checks that find what to
 * alert on: budgets spent past a threshold, low balances, keys about to expire.
 */
import { accountOwner, keyOwner } from "./limits.ts";
import {
  ALERT_COLUMNS,
  KEY_COLUMNS,
  type Row,
  toAlert,
  toKey,
  toLowBalance,
  toSpentBudget,
} from "./rows.ts";
import { answer, newestFirst, type SqliteConnection } from "./sqlite_connection.ts";
import type { AlertsPart } from "./store_parts.ts";

/** The alerts of the store on `c`. */
export function sqliteAlerts(c: SqliteConnection): AlertsPart {
  const s = c.prepare({
    raiseAlert: `INSERT INTO alerts (type, owner, period, window_start, threshold, account_id,
                           key_id, payload, status, next_attempt_at, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id`,
    alertExists: `SELECT 1 AS found FROM alerts
       WHERE type = ? AND owner = ? AND period = ? AND window_start = ? AND threshold = ?`,
    alertsDue: `SELECT ${ALERT_COLUMNS} FROM alerts INDEXED BY alerts_due
       WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?`,
    markAlert: `UPDATE alerts SET status = ?, attempts = attempts + 1, last_attempt_at = ?,
                         next_attempt_at = ?, last_error = ?, delivered_at = ?
       WHERE id = ? AND status = 'pending'`,
    alertPage: `SELECT ${ALERT_COLUMNS} FROM alerts WHERE id < ? ORDER BY id DESC LIMIT ?`,
    accountAlertPage: `SELECT ${ALERT_COLUMNS} FROM alerts WHERE account_id = ? AND id < ?
       ORDER BY id DESC LIMIT ?`,
    // A key's budget row names the key (`key:<id>`), an account's the account (`account:<id>`).
    spentBudgets: `SELECT b.owner, b.period, b.amount, b.held, b.window_start, b.window_spent,
              k.id AS key_id, k.name AS key_name, a.id AS account_id, a.name AS account_name
       FROM budgets b
       LEFT JOIN keys k ON b.owner GLOB 'key:*' AND k.id = substr(b.owner, 5)
       JOIN accounts a ON a.id = CASE WHEN b.owner GLOB 'account:*'
                                      THEN CAST(substr(b.owner, 9) AS INTEGER)
                                      ELSE k.account_id END
       WHERE b.window_spent * 100 >= b.amount * ?1 AND (k.id IS NULL OR k.revoked_at IS NULL)
         AND (?2 IS NULL OR b.owner IN (SELECT value FROM json_each(?2)))
       ORDER BY b.owner, b.period`,
    // Since the account's last credit (or debit): a top-up starts a low balance afresh.
    lowBalances: `SELECT a.id, a.name, a.balance, a.held,
              coalesce((SELECT max(l.created_at) FROM ledger l
                        WHERE l.account_id = a.id AND l.kind = 'credit'), a.created_at) AS since
       FROM accounts a
       WHERE a.balance < ?1 AND (?2 IS NULL OR a.id IN (SELECT value FROM json_each(?2)))
       ORDER BY a.id`,
    expiringKeys: `SELECT ${KEY_COLUMNS} FROM keys k INDEXED BY keys_expiry
       JOIN accounts a ON a.id = k.account_id
       WHERE k.revoked_at IS NULL AND k.disabled_at IS NULL AND k.expires_at IS NOT NULL
         AND k.expires_at > ? AND k.expires_at <= ?
       ORDER BY k.expires_at, k.id`,
  });

  return {
    raiseAlert: (alert) =>
      answer(() => {
        // Raised before (the common case of a check): a read, no write lock.
        const key = [alert.type, alert.owner, alert.period, alert.windowStart, alert.threshold];
        if (s.alertExists.get(...key)) return null;
        const row = c.tx(() =>
          s.raiseAlert.get(
            ...key,
            alert.accountId,
            alert.keyId,
            JSON.stringify(alert.payload),
            alert.status,
            alert.status === "pending" ? alert.createdAt : null,
            alert.createdAt,
          ) as Row | undefined
        );
        return row ? Number(row.id) : null;
      }),

    alertsDue: (now, limit) => answer(() => (s.alertsDue.all(now, limit) as Row[]).map(toAlert)),

    markAlert: (id, outcome) =>
      answer(() => {
        const changed = c.tx(() =>
          s.markAlert.run(
            outcome.status,
            outcome.at,
            outcome.status === "pending" ? outcome.nextAttemptAt : null,
            outcome.status === "delivered" ? null : outcome.error,
            outcome.status === "delivered" ? outcome.at : null,
            id,
          ).changes
        );
        return Number(changed) === 1;
      }),

    listAlerts: (page) =>
      answer(() => newestFirst(s.alertPage, s.accountAlertPage, page).map(toAlert)),

    spentBudgets: (percent, of) =>
      answer(() => {
        const owners = of
          ? JSON.stringify([...of.keyIds.map(keyOwner), ...of.accountIds.map(accountOwner)])
          : null;
        return (s.spentBudgets.all(percent, owners) as Row[]).map(toSpentBudget);
      }),

    lowBalances: (amount, accountIds) =>
      answer(() => {
        const ids = accountIds ? JSON.stringify(accountIds) : null;
        return (s.lowBalances.all(amount, ids) as Row[]).map(toLowBalance);
      }),

    expiringKeys: (after, until) =>
      answer(() => (s.expiringKeys.all(after, until) as Row[]).map(toKey)),
  };
}
