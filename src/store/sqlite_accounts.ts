/**
 * Accounts and keys in the SQLite store: creating and crediting accounts, their limits, keys and
 * their settings, rotation and revocation — and the key cache of `findKey`, dropped whenever any
 * connection changes a key (the `key_changes` counter, see the schema).
 */
import { setImmediate } from "node:timers";
import type { Budget, KeyRecord } from "./store.ts";
import { BUDGET_PERIODS } from "./store.ts";
import { checkCredit, CreditRefused, MAX_BALANCE } from "./amounts.ts";
import { accountOwner, keyOwner, limitsText, patchedKey } from "./limits.ts";
import { ACCOUNT_COLUMNS, KEY_COLUMNS, type Row, toAccount, toKey } from "./rows.ts";
import { answer, type SqliteConnection } from "./sqlite_connection.ts";
import type { AccountsPart } from "./store_parts.ts";

/** Keys kept in memory at most (only keys that exist, so bounded by the store as well). */
const MAX_CACHED_KEYS = 100_000;

/** The store's accounts and keys: keys are found at once (from memory, or a read). */
export type SqliteAccounts = Omit<AccountsPart, "findKey"> & {
  findKey(id: string): KeyRecord | undefined;
};

/** An object's JSON text, or null when it is empty (or absent). */
function jsonOrNull(value: object | undefined): string | null {
  return value && Object.keys(value).length ? JSON.stringify(value) : null;
}

/** The accounts and keys of the store on `c`. */
export function sqliteAccounts(c: SqliteConnection): SqliteAccounts {
  const s = c.prepare({
    accountByName: `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE name = ?`,
    accountById: `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`,
    accounts: `SELECT ${ACCOUNT_COLUMNS} FROM accounts ORDER BY name`,
    insertAccount:
      `INSERT INTO accounts (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`,
    // A credit may not take the balance past MAX_BALANCE, nor a debit below what calls in
    // flight hold (written so that nothing can overflow).
    addBalance: `UPDATE accounts SET balance = balance + ?1
       WHERE id = ?2 AND CASE WHEN ?1 >= 0 THEN balance <= ${MAX_BALANCE} - ?1
                              ELSE balance + ?1 >= held END`,
    insertCredit:
      `INSERT INTO ledger (kind, status, account_id, amount, note, created_at, settled_at)
       VALUES ('credit', 'settled', ?1, ?2, ?3, ?4, ?4)`,
    accountLimits: `UPDATE accounts SET limits = ? WHERE name = ? RETURNING id`,
    defineBudget: `INSERT INTO budgets (owner, period, amount) VALUES (?, ?, ?)
       ON CONFLICT (owner, period) DO UPDATE SET amount = excluded.amount`,
    dropBudget: `DELETE FROM budgets WHERE owner = ? AND period = ?`,
    insertKey: `INSERT INTO keys (id, account_id, hash, prefix, rpm, created_at, name, metadata,
                         expires_at, limits, strict)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    keyById: `SELECT ${KEY_COLUMNS} FROM keys k JOIN accounts a ON a.id = k.account_id
                WHERE k.id = ?`,
    keys: `SELECT ${KEY_COLUMNS} FROM keys k JOIN accounts a ON a.id = k.account_id
             ORDER BY k.created_at, k.id`,
    updateKey: `UPDATE keys SET name = ?, metadata = ?, expires_at = ?, disabled_at = ?, rpm = ?,
                       limits = ?, strict = ?
       WHERE id = ? AND revoked_at IS NULL`,
    rotateKey: `UPDATE keys SET previous_hash = hash, previous_until = ?, hash = ?, prefix = ?
       WHERE id = ? AND revoked_at IS NULL`,
    touchKey: `UPDATE keys SET last_used_at = ? WHERE id = ? AND coalesce(last_used_at, 0) < ?`,
    revokeKey: `UPDATE keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`,
    keyChanges: `SELECT n FROM key_changes`,
  }, ["accountByName", "accountById", "accounts"]);

  /** Keys looked up since another process last changed the file (see `findKey`). */
  const cached = new Map<string, KeyRecord>();
  let keyChanges = -1;
  /** `key_changes` was read in this event-loop turn (see `findKey`). */
  let keysChecked = false;

  /** Makes an owner's budget rows the given ones (a removed budget's row goes, counts and all). */
  const defineBudgets = (owner: string, budgets: Budget[] | undefined): void => {
    const kept = new Set((budgets ?? []).map((b) => b.period));
    for (const period of BUDGET_PERIODS) {
      if (!kept.has(period)) s.dropBudget.run(owner, period);
    }
    for (const budget of budgets ?? []) s.defineBudget.run(owner, budget.period, budget.amount);
  };

  return {
    ensureAccount: (name) =>
      answer(() => {
        s.insertAccount.run(name, Date.now());
        return toAccount(s.accountByName.get(name) as Row);
      }),

    account: (name) =>
      answer(() => {
        const row = s.accountByName.get(name) as Row | undefined;
        return row && toAccount(row);
      }),

    listAccounts: () => answer(() => (s.accounts.all() as Row[]).map(toAccount)),

    credit: (accountId, amount, note) =>
      answer(() => {
        checkCredit(amount);
        return c.tx(() => {
          if (Number(s.addBalance.run(amount, accountId).changes) !== 1) {
            const row = s.accountById.get(accountId) as Row | undefined;
            if (!row) throw new Error(`no account ${accountId}`);
            const account = toAccount(row);
            throw new CreditRefused(accountId, amount, account.balance, account.held);
          }
          s.insertCredit.run(accountId, amount, note, Date.now());
          return toAccount(s.accountById.get(accountId) as Row);
        });
      }),

    insertKey: (key) =>
      answer(() =>
        c.tx(() => {
          const limits = key.limits ?? {};
          s.insertKey.run(
            key.id,
            key.accountId,
            key.hash,
            key.prefix,
            key.rpm,
            key.createdAt,
            key.name ?? null,
            jsonOrNull(key.metadata),
            key.expiresAt ?? null,
            limitsText(limits),
            key.strict ? 1 : 0,
          );
          defineBudgets(keyOwner(key.id), limits.budgets);
        })
      ),

    updateKey: (id, patch) =>
      answer(() => {
        const updated = c.tx(() => {
          const row = s.keyById.get(id) as Row | undefined;
          if (!row || row.revoked_at !== null) return false;
          const key = patchedKey(toKey(row), patch, Date.now());
          s.updateKey.run(
            key.name,
            jsonOrNull(key.metadata),
            key.expiresAt,
            key.disabledAt,
            key.rpm,
            limitsText(key.limits),
            key.strict ? 1 : 0,
            id,
          );
          if (patch.limits) defineBudgets(keyOwner(id), key.limits.budgets);
          return true;
        });
        keysChecked = false; // this connection's own change is seen in this very turn
        const row = updated ? s.keyById.get(id) as Row | undefined : undefined;
        return row && toKey(row);
      }),

    rotateKey: (id, hash, prefix, previousUntil) =>
      answer(() => {
        const rotated = Number(s.rotateKey.run(previousUntil, hash, prefix, id).changes) === 1;
        keysChecked = false;
        return rotated;
      }),

    async touchKeys(used) {
      if (!used.size) return;
      await c.write(() => {
        for (const [id, at] of used) s.touchKey.run(at, id, at);
      });
    },

    updateAccountLimits: (name, limits) =>
      answer(() => {
        const updated = c.tx(() => {
          const row = s.accountLimits.get(limitsText(limits), name) as Row | undefined;
          if (!row) return false;
          defineBudgets(accountOwner(Number(row.id)), limits.budgets);
          return true;
        });
        keysChecked = false;
        const row = updated ? s.accountByName.get(name) as Row | undefined : undefined;
        return row && toAccount(row);
      }),

    /**
     * Key lookups are cached in memory. Every change to a key (the CLI's, another process's or
     * thread's) counts in `key_changes`, which is checked by the first lookup of each event-loop
     * turn (far cheaper than the join; the requests of one turn are handled as of its start), so
     * a revoked key is refused from the next request on.
     */
    findKey(id: string): KeyRecord | undefined {
      if (!keysChecked) {
        keysChecked = true;
        setImmediate(() => keysChecked = false);
        const version = Number((s.keyChanges.get() as Row).n);
        if (version !== keyChanges) {
          keyChanges = version;
          cached.clear();
        }
      }
      const known = cached.get(id);
      if (known) return known;
      const row = s.keyById.get(id) as Row | undefined;
      if (!row) return undefined; // ids that name no key are not kept: clients choose them
      const key = toKey(row);
      if (cached.size >= MAX_CACHED_KEYS) cached.clear();
      cached.set(id, key);
      return key;
    },

    listKeys: () => answer(() => (s.keys.all() as Row[]).map(toKey)),

    revokeKey: (id) =>
      answer(() => {
        const revoked = Number(s.revokeKey.run(Date.now(), id).changes) === 1;
        keysChecked = false; // this connection's own change is seen in this very turn
        return revoked;
      }),
  };
}
