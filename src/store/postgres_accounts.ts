/**
 * Accounts and keys in the PostgreSQL store: creating and crediting accounts, their limits, keys
 * and their settings, rotation and revocation — and the key cache of `findKey`, which any
 * replica's change to a key drops (`KeyCache.changed`, on its announcement or the counter checked
 * every second, see `postgres.ts`).
 */
import type { Budget, KeyRecord } from "./store.ts";
import { checkCredit, CreditRefused, MAX_BALANCE } from "./amounts.ts";
import { accountOwner, keyOwner, patchedKey } from "./limits.ts";
import { ACCOUNT_COLUMNS, KEY_COLUMNS, toAccount, toKey } from "./rows.ts";
import { type PgConnection, REPORT_TIMEOUT_MS, type Tx } from "./postgres_connection.ts";
import type { AccountsPart } from "./store_parts.ts";

/** Keys kept in memory at most. */
const MAX_CACHED_KEYS = 100_000;
/** Unknown key ids remembered at most (until any key changes). */
const MAX_MISSING_KEYS = 10_000;

/** Keys found, and ids that name none, since keys last changed. */
export class KeyCache {
  readonly keys = new Map<string, KeyRecord>();
  /** Unknown key ids looked up since keys last changed (bounded; see `findKey`). */
  readonly missing = new Set<string>();
  /** Bumped when keys change: a lookup begun before a change is not cached. */
  generation = 0;
  /** The database's count of key changes, as last read. */
  #counted = -1;

  /** Keys changed (here or on another replica): forgets them all. */
  changed(): void {
    this.generation++;
    this.keys.clear();
    this.missing.clear();
  }

  /** The database's count of key changes, read: forgets them all when it moved. */
  counted(n: number): void {
    if (n === this.#counted) return;
    this.#counted = n;
    this.changed();
  }
}

/** The accounts and keys of the store on `c`, its keys cached in `cache`. */
export function postgresAccounts(c: PgConnection, cache: KeyCache): AccountsPart {
  const { sql } = c;
  const ACCOUNT = sql.unsafe(ACCOUNT_COLUMNS);
  const KEY = sql.unsafe(KEY_COLUMNS);

  /** Makes an owner's budget rows the given ones (a removed budget's row goes, counts and all). */
  const defineBudgets = async (tx: Tx, owner: string, budgets?: Budget[]) => {
    const kept = (budgets ?? []).map((b) => b.period);
    await tx`DELETE FROM budgets WHERE owner = ${owner}
             AND NOT (period = ANY(${kept as string[]}::text[]))`;
    for (const b of budgets ?? []) {
      await tx`INSERT INTO budgets (owner, period, amount) VALUES (${owner}, ${b.period}, ${b.amount})
               ON CONFLICT (owner, period) DO UPDATE SET amount = EXCLUDED.amount`;
    }
  };

  return {
    async ensureAccount(name) {
      // The no-op update returns the row when another caller made it first (a select would not
      // see a row committed during the statement).
      const [row] = await c.run(sql`
        INSERT INTO accounts (name, created_at) VALUES (${name}, ${Date.now()})
        ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
        RETURNING ${ACCOUNT}`);
      return toAccount(row);
    },

    async account(name) {
      const [row] = await c.run(sql`SELECT ${ACCOUNT} FROM accounts WHERE name = ${name}`);
      return row && toAccount(row);
    },

    async listAccounts() {
      const rows = await c.run(
        sql`SELECT ${ACCOUNT} FROM accounts ORDER BY name`,
        REPORT_TIMEOUT_MS,
      );
      return rows.map(toAccount);
    },

    async credit(accountId, amount, note) {
      checkCredit(amount);
      const now = Date.now();
      // A credit may not take the balance past MAX_BALANCE, nor a debit below what calls in
      // flight hold (written so that nothing can overflow).
      const [row] = await c.run(sql`
        WITH a AS (
          UPDATE accounts SET balance = balance + ${amount}::bigint
          WHERE id = ${accountId} AND CASE WHEN ${amount}::bigint >= 0
                                           THEN balance <= ${MAX_BALANCE}::bigint - ${amount}::bigint
                                           ELSE balance + ${amount}::bigint >= held END
          RETURNING ${ACCOUNT}
        ), l AS (
          INSERT INTO ledger (kind, status, account_id, amount, note, created_at, settled_at)
          SELECT 'credit', 'settled', id, ${amount}::bigint, ${note}, ${now}, ${now} FROM a
        )
        SELECT * FROM a`);
      if (row) return toAccount(row);
      const [current] = await c.run(sql`SELECT ${ACCOUNT} FROM accounts WHERE id = ${accountId}`);
      if (!current) throw new Error(`no account ${accountId}`);
      const account = toAccount(current);
      throw new CreditRefused(accountId, amount, account.balance, account.held);
    },

    async insertKey(key) {
      const limits = key.limits ?? {};
      await c.run(sql.begin(async (tx) => {
        await tx`
          INSERT INTO keys (id, account_id, hash, prefix, rpm, created_at, name, metadata,
                            expires_at, limits, strict)
          VALUES (${key.id}, ${key.accountId}, ${key.hash}, ${key.prefix}, ${key.rpm},
                  ${key.createdAt}, ${key.name ?? null}, ${c.jsonOrNull(key.metadata)},
                  ${key.expiresAt ?? null}, ${c.jsonOrNull(limits)}, ${key.strict ?? false})`;
        await defineBudgets(tx, keyOwner(key.id), limits.budgets);
      }));
      cache.changed();
    },

    async updateKey(id, patch) {
      const updated = await c.run(sql.begin(async (tx) => {
        const [row] = await tx`
          SELECT ${KEY} FROM keys k JOIN accounts a ON a.id = k.account_id
          WHERE k.id = ${id} AND k.revoked_at IS NULL FOR UPDATE OF k`;
        if (!row) return false;
        const key = patchedKey(toKey(row), patch, Date.now());
        await tx`
          UPDATE keys SET name = ${key.name}, metadata = ${c.jsonOrNull(key.metadata)},
                 expires_at = ${key.expiresAt}, disabled_at = ${key.disabledAt},
                 rpm = ${key.rpm}, limits = ${c.jsonOrNull(key.limits)}, strict = ${key.strict}
          WHERE id = ${id}`;
        if (patch.limits) await defineBudgets(tx, keyOwner(id), key.limits.budgets);
        return true;
      }));
      cache.changed();
      if (!updated) return undefined;
      const [row] = await c.run(sql`
        SELECT ${KEY} FROM keys k JOIN accounts a ON a.id = k.account_id WHERE k.id = ${id}`);
      return row && toKey(row);
    },

    async rotateKey(id, hash, prefix, previousUntil) {
      const result = await c.run(sql`
        UPDATE keys SET previous_hash = hash, previous_until = ${previousUntil}, hash = ${hash},
               prefix = ${prefix}
        WHERE id = ${id} AND revoked_at IS NULL`);
      cache.changed();
      return result.count === 1;
    },

    async touchKeys(used) {
      if (!used.size) return;
      const ids = [...used.keys()];
      const times = ids.map((id) => used.get(id)!);
      await c.run(sql`
        UPDATE keys SET last_used_at = u.at
        FROM unnest(${ids}::text[], ${times}::bigint[]) AS u(id, at)
        WHERE keys.id = u.id AND coalesce(keys.last_used_at, 0) < u.at`);
    },

    async updateAccountLimits(name, limits) {
      const row = await c.run(sql.begin(async (tx) => {
        const [row] = await tx`
          UPDATE accounts SET limits = ${c.jsonOrNull(limits)} WHERE name = ${name}
          RETURNING ${ACCOUNT}`;
        if (row) await defineBudgets(tx, accountOwner(Number(row.id)), limits.budgets);
        return row;
      }));
      cache.changed();
      return row ? toAccount(row) : undefined;
    },

    /** From memory when cached (see the module's note on how changes drop the cache). */
    findKey(id: string): KeyRecord | undefined | Promise<KeyRecord | undefined> {
      const cached = cache.keys.get(id);
      if (cached) return cached;
      if (cache.missing.has(id)) return undefined;
      const generation = cache.generation;
      return c.run(sql`
        SELECT ${KEY} FROM keys k JOIN accounts a ON a.id = k.account_id
        WHERE k.id = ${id}`).then(([row]) => {
        if (!row) {
          // Remembered until any key changes, at most MAX_MISSING_KEYS (clients choose these).
          if (generation === cache.generation) {
            if (cache.missing.size >= MAX_MISSING_KEYS) cache.missing.clear();
            cache.missing.add(id);
          }
          return undefined;
        }
        const key = toKey(row);
        if (generation === cache.generation) {
          if (cache.keys.size >= MAX_CACHED_KEYS) cache.keys.clear();
          cache.keys.set(id, key);
        }
        return key;
      });
    },

    async listKeys() {
      const rows = await c.run(
        sql`SELECT ${KEY} FROM keys k JOIN accounts a ON a.id = k.account_id
            ORDER BY k.created_at, k.id`,
        REPORT_TIMEOUT_MS,
      );
      return rows.map(toKey);
    },

    async revokeKey(id) {
      const result = await c.run(sql`
        UPDATE keys SET revoked_at = ${Date.now()} WHERE id = ${id} AND revoked_at IS NULL`);
      cache.changed();
      return result.count === 1;
    },
  };
}
