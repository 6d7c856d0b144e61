/**
 * The embedded store: one SQLite file through `node:sqlite`, in WAL mode so the CLI can write
 * while the server runs. Every money change commits in one transaction with its ledger entry;
 * hot-path writes are group-committed: queued during an event-loop turn and written at its end in
 * one short transaction, under the process's write lock when several threads share the file.
 */
import { setImmediate } from "node:timers";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { OwnerLock } from "./owners.ts";
import { WriteLock } from "./write_lock.ts";
import type { CheckpointerStart } from "./checkpointer.ts";
import {
  accountOwner,
  budgetStates,
  chargedTokens,
  type HoldMark,
  keyLimitsOf,
  keyOwner,
  limitsText,
  markOf,
  planHold,
  settledBudget,
  utcWindows,
} from "./limits.ts";
import {
  checkCharge,
  checkCredit,
  checkHold,
  checkTokens,
  checkVideoJob,
  checkVideoOutcome,
  CreditRefused,
  MAX_BALANCE,
  toTotal,
} from "./amounts.ts";
import {
  type Row,
  toAccount,
  toAlert,
  toBudgetRow,
  toDay,
  toKey,
  toLowBalance,
  toSpentBudget,
  toStoredResponse,
  toUpstreamObject,
  toVideoJob,
} from "./rows.ts";
import { BUDGET_PERIODS } from "./store.ts";
import type {
  Account,
  AccountLimits,
  Alert,
  AlertOutcome,
  Budget,
  BudgetState,
  BudgetWindows,
  ChainBound,
  Charge,
  DayUsage,
  HoldLimits,
  KeyPatch,
  KeyRecord,
  LedgerEntry,
  LimitedHold,
  LimitRefusal,
  LowBalance,
  NewAlert,
  NewHold,
  NewKey,
  PendingHold,
  SpentBudget,
  Store,
  StoredResponse,
  UpstreamObject,
  UsageSummary,
  VideoJob,
  VideoOutcome,
} from "./store.ts";

const MIGRATIONS: string[] = [
  `CREATE TABLE accounts (
     id INTEGER PRIMARY KEY,
     name TEXT NOT NULL UNIQUE,
     balance INTEGER NOT NULL DEFAULT 0,
     spent INTEGER NOT NULL DEFAULT 0,
     held INTEGER NOT NULL DEFAULT 0,
     created_at INTEGER NOT NULL
   );
   CREATE TABLE keys (
     id TEXT PRIMARY KEY,
     account_id INTEGER NOT NULL REFERENCES accounts(id),
     hash BLOB NOT NULL,
     prefix TEXT NOT NULL,
     rpm INTEGER,
     created_at INTEGER NOT NULL,
     revoked_at INTEGER
   );
   -- One row per billed call (kind 'charge': 'held' while the call runs, then 'settled') and per
   -- credit. units: JSON array of {unit, quantity, amount}; estimate: the charge used if the
   -- process dies while the row is held.
   CREATE TABLE ledger (
     id INTEGER PRIMARY KEY,
     kind TEXT NOT NULL CHECK (kind IN ('charge', 'credit')),
     status TEXT NOT NULL CHECK (status IN ('held', 'settled')),
     request_id TEXT,
     key_id TEXT,
     account_id INTEGER NOT NULL REFERENCES accounts(id),
     endpoint TEXT,
     model TEXT,
     provider TEXT,
     reserved INTEGER NOT NULL DEFAULT 0,
     amount INTEGER NOT NULL,
     units TEXT NOT NULL DEFAULT '[]',
     estimate TEXT,
     estimated INTEGER NOT NULL DEFAULT 0,
     note TEXT,
     created_at INTEGER NOT NULL,
     settled_at INTEGER
   );
   CREATE INDEX ledger_account ON ledger (account_id, kind, status);`,
  // Asynchronous video jobs; ledger_id is the job's hold, settled or released when it finishes.
  `CREATE TABLE video_jobs (
     id TEXT PRIMARY KEY,
     upstream_id TEXT NOT NULL,
     account_id INTEGER NOT NULL REFERENCES accounts(id),
     key_id TEXT NOT NULL,
     ledger_id INTEGER NOT NULL,
     model TEXT NOT NULL,
     provider TEXT NOT NULL,
     rate INTEGER NOT NULL,
     held_seconds INTEGER NOT NULL,
     status TEXT NOT NULL CHECK (status IN ('pending', 'done', 'failed', 'expired')),
     billed_seconds INTEGER,
     amount INTEGER,
     result TEXT,
     created_at INTEGER NOT NULL,
     finished_at INTEGER
   );
   CREATE INDEX video_jobs_pending ON video_jobs (created_at) WHERE status = 'pending';`,
  // Upstream objects (stored responses, containers) by the account whose call created them.
  `CREATE TABLE upstream_objects (
     id TEXT PRIMARY KEY,
     account_id INTEGER NOT NULL REFERENCES accounts(id),
     kind TEXT NOT NULL,
     context_tokens INTEGER NOT NULL DEFAULT 0,
     created_at INTEGER NOT NULL
   ) WITHOUT ROWID;
   CREATE INDEX upstream_objects_age ON upstream_objects (created_at);`,
  // The serving process that holds each call's funds (see `owners.ts`); NULL for older rows.
  `ALTER TABLE ledger ADD COLUMN owner TEXT;`,
  // One insert per call matters more than the prune every few hours, which may scan.
  `DROP INDEX IF EXISTS upstream_objects_age;`,
  // Kept in insertion (rowid) order, so expired objects are a range at the start that the prune
  // deletes without scanning the rest; the id is a unique index.
  `CREATE TABLE upstream_objects_new (
     id TEXT NOT NULL UNIQUE,
     account_id INTEGER NOT NULL REFERENCES accounts(id),
     kind TEXT NOT NULL,
     context_tokens INTEGER NOT NULL DEFAULT 0,
     created_at INTEGER NOT NULL
   );
   INSERT INTO upstream_objects_new (id, account_id, kind, context_tokens, created_at)
     SELECT id, account_id, kind, context_tokens, created_at FROM upstream_objects
     ORDER BY created_at;
   DROP TABLE upstream_objects;
   ALTER TABLE upstream_objects_new RENAME TO upstream_objects;`,
  // Responses conversations the gateway keeps itself (translated calls), one row per answer, in
  // creation order like upstream_objects.
  `CREATE TABLE stored_responses (
     id TEXT NOT NULL UNIQUE,
     account_id INTEGER NOT NULL REFERENCES accounts(id),
     previous_id TEXT,
     items TEXT NOT NULL,
     context_tokens INTEGER NOT NULL DEFAULT 0,
     created_at INTEGER NOT NULL
   );`,
  // A call's funds move with its ledger row, inside the statement that writes the row: a held row
  // reserves, settling it charges, deleting it releases. One statement per hot-path write, so no
  // savepoint is needed around it.
  `CREATE TRIGGER ledger_hold AFTER INSERT ON ledger
     WHEN NEW.kind = 'charge' AND NEW.status = 'held'
   BEGIN
     UPDATE accounts SET held = held + NEW.reserved WHERE id = NEW.account_id;
   END;
   CREATE TRIGGER ledger_settle AFTER UPDATE OF status ON ledger
     WHEN OLD.kind = 'charge' AND OLD.status = 'held' AND NEW.status = 'settled'
   BEGIN
     UPDATE accounts SET held = held - OLD.reserved, balance = balance - NEW.amount,
                         spent = spent + NEW.amount
     WHERE id = NEW.account_id;
   END;
   CREATE TRIGGER ledger_release AFTER DELETE ON ledger
     WHEN OLD.kind = 'charge' AND OLD.status = 'held'
   BEGIN
     UPDATE accounts SET held = held - OLD.reserved WHERE id = OLD.account_id;
   END;`,
  // A counter of key changes, so that serving processes and threads drop their cached keys when a
  // key changes — and only then, not on every ledger write of another connection.
  `CREATE TABLE key_changes (n INTEGER NOT NULL);
   INSERT INTO key_changes (n) VALUES (0);
   CREATE TRIGGER keys_inserted AFTER INSERT ON keys
   BEGIN UPDATE key_changes SET n = n + 1; END;
   CREATE TRIGGER keys_updated AFTER UPDATE ON keys
   BEGIN UPDATE key_changes SET n = n + 1; END;
   CREATE TRIGGER keys_deleted AFTER DELETE ON keys
   BEGIN UPDATE key_changes SET n = n + 1; END;`,
  // Held entries (calls in flight) get an index of their own: recovery, which looks for them every
  // 30 s, no longer reads the whole ledger, and settling a call no longer moves its entry in the
  // account index.
  `DROP INDEX ledger_account;
   CREATE INDEX ledger_account ON ledger (account_id, kind);
   CREATE INDEX ledger_held ON ledger (account_id) WHERE status = 'held';`,
  // The upstream model that served a call (a model's deployments may name different ones).
  `ALTER TABLE ledger ADD COLUMN upstream_model TEXT;`,
  // The provider holding an upstream object: a call continuing it goes there (see `routeCall`).
  `ALTER TABLE upstream_objects ADD COLUMN provider TEXT;`,
  // The upstream key a video job was submitted with: its polls use the same one.
  `ALTER TABLE video_jobs ADD COLUMN upstream_key TEXT;`,
  // Keys a team can hand out: names, metadata, expiry, disabling, rotation, limits (JSON, see
  // `limits.ts`) and the counts a limited hold keeps on the key's row; account limits; budget
  // states (one row per owner and period); what each limited hold counted. A key's counters and
  // last use change on every call, and must not wake every process's key cache: the change
  // trigger watches the other columns only (and account limits, read with the key).
  `ALTER TABLE keys ADD COLUMN name TEXT;
   ALTER TABLE keys ADD COLUMN metadata TEXT;
   ALTER TABLE keys ADD COLUMN expires_at INTEGER;
   ALTER TABLE keys ADD COLUMN disabled_at INTEGER;
   ALTER TABLE keys ADD COLUMN last_used_at INTEGER;
   ALTER TABLE keys ADD COLUMN limits TEXT;
   ALTER TABLE keys ADD COLUMN previous_hash BLOB;
   ALTER TABLE keys ADD COLUMN previous_until INTEGER;
   ALTER TABLE keys ADD COLUMN in_flight INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE keys ADD COLUMN tpm_minute INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE keys ADD COLUMN tpm_tokens INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE accounts ADD COLUMN limits TEXT;
   ALTER TABLE ledger ADD COLUMN limits TEXT;
   CREATE TABLE budgets (
     owner TEXT NOT NULL,
     period TEXT NOT NULL,
     amount INTEGER NOT NULL,
     held INTEGER NOT NULL DEFAULT 0,
     window_start INTEGER NOT NULL DEFAULT 0,
     window_spent INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (owner, period)
   ) WITHOUT ROWID;
   DROP TRIGGER keys_updated;
   CREATE TRIGGER keys_updated AFTER UPDATE OF account_id, hash, prefix, rpm, revoked_at, name,
     metadata, expires_at, disabled_at, limits, previous_hash, previous_until ON keys
   BEGIN UPDATE key_changes SET n = n + 1; END;
   CREATE TRIGGER accounts_limits AFTER UPDATE OF limits ON accounts
   BEGIN UPDATE key_changes SET n = n + 1; END;`,
  // Alerts (see `alerts/`): what each is about is unique, so inserting one is the decision that it
  // is raised once; its delivery state is kept with it, so a restart resumes delivery. Keys about
  // to expire are found by an index of their own.
  `CREATE TABLE alerts (
     id INTEGER PRIMARY KEY,
     type TEXT NOT NULL,
     owner TEXT NOT NULL,
     period TEXT NOT NULL,
     window_start INTEGER NOT NULL,
     threshold INTEGER NOT NULL,
     account_id INTEGER NOT NULL REFERENCES accounts (id),
     key_id TEXT,
     payload TEXT NOT NULL,
     status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'unsent')),
     attempts INTEGER NOT NULL DEFAULT 0,
     next_attempt_at INTEGER,
     last_attempt_at INTEGER,
     last_error TEXT,
     created_at INTEGER NOT NULL,
     delivered_at INTEGER,
     UNIQUE (type, owner, period, window_start, threshold)
   );
   CREATE INDEX alerts_due ON alerts (next_attempt_at) WHERE status = 'pending';
   CREATE INDEX alerts_account ON alerts (account_id, id);
   CREATE INDEX keys_expiry ON keys (expires_at)
     WHERE expires_at IS NOT NULL AND revoked_at IS NULL;`,
];

/** Keys kept in memory at most (only keys that exist, so bounded by the store as well). */
const MAX_CACHED_KEYS = 100_000;

/**
 * WAL pages after which a connection checkpoints inside its own commit when another thread does
 * the checkpoints (a safety net should that thread stop): about 400 MB.
 */
const FALLBACK_CHECKPOINT_PAGES = 100_000;

/**
 * The checkpointer thread's module. `deno compile` embeds a Web Worker's module only when it is
 * passed with `--include` (the `compile` task does).
 */
const CHECKPOINTER = new URL("./checkpointer.ts", import.meta.url);

/** How a store is opened. */
export interface SqliteOptions {
  /**
   * This process serves calls: it takes an owner lock (see `owners.ts`), marks the holds it writes
   * with it, and `pendingHolds` never returns the holds of another live process.
   */
  owner?: boolean;
  /**
   * The write lock of the process's threads (see `sharedWriteLock`): given to a serving thread's
   * store, whose WAL checkpoints are then another thread's job (see `checkpointer.ts`).
   */
  writeLock?: SharedArrayBuffer;
  /** Told how long each write transaction took, from begin to commit (seconds). */
  onCommit?: (seconds: number) => void;
}

/** Opens (creating and migrating if needed) the SQLite store at `path`. */
export function openSqliteStore(path: string, options: SqliteOptions = {}): SqliteStore {
  let dir = ".";
  if (path !== ":memory:") {
    dir = path.includes("/") ? path.replace(/\/[^/]*$/, "") || "/" : ".";
    Deno.mkdirSync(dir, { recursive: true });
  }
  const db = new DatabaseSync(path);
  // The busy timeout first: switching to WAL waits, too, for a process still closing the file.
  db.exec("PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;");
  // 32 MiB of page cache (the default is 2 MiB): the ledger and object tables outgrow it quickly.
  db.exec("PRAGMA cache_size = -32768;");
  db.exec("PRAGMA foreign_keys = ON;");
  migrate(db);
  if (options.writeLock) db.exec(`PRAGMA wal_autocheckpoint = ${FALLBACK_CHECKPOINT_PAGES};`);
  const lock = path === ":memory:" ? null : new OwnerLock(`${dir}/owners`);
  const writeLock = options.writeLock ? new WriteLock(options.writeLock) : null;
  const owner = options.owner && lock ? lock.acquire() : null;
  return new SqliteStore(db, path, owner, lock, writeLock, options.onCommit);
}

function migrate(db: DatabaseSync): void {
  const version = Number((db.prepare("PRAGMA user_version").get() as Row).user_version);
  for (let v = version; v < MIGRATIONS.length; v++) {
    db.exec("BEGIN IMMEDIATE");
    try {
      db.exec(MIGRATIONS[v]);
      db.exec(`PRAGMA user_version = ${v + 1}`);
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    }
  }
}

const ACCOUNT_COLUMNS = "id, name, balance, spent, held, created_at, limits";
const KEY_COLUMNS = `k.id, k.account_id, a.name AS account_name, k.hash, k.prefix, k.rpm,
  k.created_at, k.revoked_at, k.name, k.metadata, k.expires_at, k.disabled_at, k.last_used_at,
  k.limits, a.limits AS account_limits, k.previous_hash, k.previous_until`;
const LEDGER_COLUMNS = `l.id, l.kind, l.status, a.name AS account, l.request_id, l.key_id,
  l.endpoint, l.model, l.provider, l.upstream_model, l.amount, l.units, l.estimated, l.note,
  l.created_at, l.settled_at`;
const ALERT_COLUMNS = `id, type, owner, period, window_start, threshold, account_id, key_id,
  payload, status, attempts, next_attempt_at, last_attempt_at, last_error, created_at,
  delivered_at`;
const SETTLED_CHARGES = "l.account_id = ? AND l.kind = 'charge' AND l.status = 'settled'";
/**
 * How far out of time order ledger ids may run (an entry is timed as it is written, under the write
 * lock, but the clock can be stepped back): time bounds found by id are moved back this much, and
 * the rows are then filtered by time exactly.
 */
const LEDGER_SKEW_MS = 3600_000;

/** The statements that read amounts or sums of them (see the constructor). */
const MONEY_READS = [
  "accountByName",
  "accountById",
  "accounts",
  "heldByUnit",
  "byUnit",
  "byDay",
  "allByDay",
  "ledgerPage",
  "accountLedgerPage",
  "byModel",
];

/** A write waiting for the turn's flush, and who waits for its result. */
interface Queued {
  run: () => unknown;
  done: PromiseWithResolvers<unknown>;
}

/** The SQLite implementation of `Store`. */
export class SqliteStore implements Store {
  readonly #db: DatabaseSync;
  readonly #s: Record<string, StatementSync>;
  /** Keys looked up since another process last changed the file (see `findKey`). */
  readonly #keys = new Map<string, KeyRecord>();
  #keyChanges = -1;
  /** `key_changes` was read in this event-loop turn (see `findKey`). */
  #keysChecked = false;
  /** This event-loop turn's writes, flushed in one transaction when the turn ends. */
  #queued: Queued[] = [];
  /** Held around every write transaction when threads share the file (else null). */
  #writeLock: WriteLock | null;
  /** The checkpointer thread this store started (see `prepareForServing`). */
  #checkpointer: Worker | null = null;
  #checkpointerFailed?: (message: string) => void;
  readonly #path: string;

  /** This process's owner id when it serves calls (its holds are marked with it). */
  readonly #owner: string | null;
  readonly #locks: OwnerLock | null;
  readonly #onCommit: ((seconds: number) => void) | undefined;

  constructor(
    db: DatabaseSync,
    path: string,
    owner: string | null,
    locks: OwnerLock | null,
    writeLock: WriteLock | null,
    onCommit?: (seconds: number) => void,
  ) {
    this.#db = db;
    this.#onCommit = onCommit;
    this.#path = path;
    this.#owner = owner;
    this.#locks = locks;
    this.#writeLock = writeLock;
    const p = (sql: string) => db.prepare(sql);
    this.#s = {
      accountByName: p(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE name = ?`),
      accountById: p(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`),
      available: p(
        `SELECT min(balance - held, ${MAX_BALANCE}) AS available FROM accounts WHERE id = ?`,
      ),
      insertAccount: p(
        `INSERT INTO accounts (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`,
      ),
      accounts: p(`SELECT ${ACCOUNT_COLUMNS} FROM accounts ORDER BY name`),
      // A credit may not take the balance past MAX_BALANCE, nor a debit below what calls in
      // flight hold (written so that nothing can overflow).
      addBalance: p(
        `UPDATE accounts SET balance = balance + ?1
         WHERE id = ?2 AND CASE WHEN ?1 >= 0 THEN balance <= ${MAX_BALANCE} - ?1
                                ELSE balance + ?1 >= held END`,
      ),
      insertCredit: p(
        `INSERT INTO ledger (kind, status, account_id, amount, note, created_at, settled_at)
         VALUES ('credit', 'settled', ?1, ?2, ?3, ?4, ?4)`,
      ),
      // The available balance is checked and the row written in one statement (the trigger
      // `ledger_hold` reserves); a zero hold is always taken.
      hold: p(
        `INSERT INTO ledger (kind, status, request_id, key_id, account_id, endpoint, model,
                             provider, reserved, amount, estimate, created_at, owner,
                             upstream_model)
         SELECT 'charge', 'held', ?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8, ?9, ?10, ?11 FROM accounts
         WHERE id = ?3 AND ?7 >= 0 AND (?7 = 0 OR balance - held >= ?7)`,
      ),
      // A limited hold: the limits were checked in the same write (see `reserveLimited`).
      holdMarked: p(
        `INSERT INTO ledger (kind, status, request_id, key_id, account_id, endpoint, model,
                             provider, reserved, amount, estimate, created_at, owner,
                             upstream_model, limits)
         SELECT 'charge', 'held', ?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8, ?9, ?10, ?11, ?12
         FROM accounts WHERE id = ?3 AND ?7 >= 0 AND (?7 = 0 OR balance - held >= ?7)`,
      ),
      // What a limited hold counted comes back with its settlement (null for the others).
      settleHold: p(
        `UPDATE ledger SET status = 'settled', amount = ?, units = ?, estimated = ?,
                           settled_at = ?
         WHERE id = ? AND status = 'held' RETURNING limits, reserved, key_id`,
      ),
      deleteHold: p(
        `DELETE FROM ledger WHERE id = ? AND status = 'held' RETURNING limits, reserved, key_id`,
      ),
      budgetRows: p(
        `SELECT owner, period, amount, held, window_start, window_spent FROM budgets
         WHERE owner IN (?, ?)`,
      ),
      budgetRow: p(
        `SELECT owner, period, amount, held, window_start, window_spent FROM budgets
         WHERE owner = ? AND period = ?`,
      ),
      putBudget: p(
        `UPDATE budgets SET held = ?, window_start = ?, window_spent = ?
         WHERE owner = ? AND period = ?`,
      ),
      defineBudget: p(
        `INSERT INTO budgets (owner, period, amount) VALUES (?, ?, ?)
         ON CONFLICT (owner, period) DO UPDATE SET amount = excluded.amount`,
      ),
      dropBudgets: p(`DELETE FROM budgets WHERE owner = ?`),
      dropBudget: p(`DELETE FROM budgets WHERE owner = ? AND period = ?`),
      raiseAlert: p(
        `INSERT INTO alerts (type, owner, period, window_start, threshold, account_id, key_id,
                             payload, status, next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id`,
      ),
      alertExists: p(
        `SELECT 1 AS found FROM alerts
         WHERE type = ? AND owner = ? AND period = ? AND window_start = ? AND threshold = ?`,
      ),
      alertsDue: p(
        `SELECT ${ALERT_COLUMNS} FROM alerts INDEXED BY alerts_due
         WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?`,
      ),
      markAlert: p(
        `UPDATE alerts SET status = ?, attempts = attempts + 1, last_attempt_at = ?,
                           next_attempt_at = ?, last_error = ?, delivered_at = ?
         WHERE id = ? AND status = 'pending'`,
      ),
      alertPage: p(`SELECT ${ALERT_COLUMNS} FROM alerts WHERE id < ? ORDER BY id DESC LIMIT ?`),
      accountAlertPage: p(
        `SELECT ${ALERT_COLUMNS} FROM alerts WHERE account_id = ? AND id < ?
         ORDER BY id DESC LIMIT ?`,
      ),
      // A key's budget row names the key (`key:<id>`), an account's the account (`account:<id>`).
      spentBudgets: p(
        `SELECT b.owner, b.period, b.amount, b.held, b.window_start, b.window_spent,
                k.id AS key_id, k.name AS key_name, a.id AS account_id, a.name AS account_name
         FROM budgets b
         LEFT JOIN keys k ON b.owner GLOB 'key:*' AND k.id = substr(b.owner, 5)
         JOIN accounts a ON a.id = CASE WHEN b.owner GLOB 'account:*'
                                        THEN CAST(substr(b.owner, 9) AS INTEGER)
                                        ELSE k.account_id END
         WHERE b.window_spent * 100 >= b.amount * ?1 AND (k.id IS NULL OR k.revoked_at IS NULL)
           AND (?2 IS NULL OR b.owner IN (SELECT value FROM json_each(?2)))
         ORDER BY b.owner, b.period`,
      ),
      // Since the account's last credit (or debit): a top-up starts a low balance afresh.
      lowBalances: p(
        `SELECT a.id, a.name, a.balance, a.held,
                coalesce((SELECT max(l.created_at) FROM ledger l
                          WHERE l.account_id = a.id AND l.kind = 'credit'), a.created_at) AS since
         FROM accounts a
         WHERE a.balance < ?1 AND (?2 IS NULL OR a.id IN (SELECT value FROM json_each(?2)))
         ORDER BY a.id`,
      ),
      expiringKeys: p(
        `SELECT ${KEY_COLUMNS} FROM keys k INDEXED BY keys_expiry
         JOIN accounts a ON a.id = k.account_id
         WHERE k.revoked_at IS NULL AND k.disabled_at IS NULL AND k.expires_at IS NOT NULL
           AND k.expires_at > ? AND k.expires_at <= ?
         ORDER BY k.expires_at, k.id`,
      ),
      keyCounts: p(`SELECT limits, in_flight, tpm_minute, tpm_tokens FROM keys WHERE id = ?`),
      putKeyCounts: p(`UPDATE keys SET in_flight = ?, tpm_minute = ?, tpm_tokens = ? WHERE id = ?`),
      leaveFlight: p(`UPDATE keys SET in_flight = max(0, in_flight - 1) WHERE id = ?`),
      correctTokens: p(
        `UPDATE keys SET tpm_tokens = max(0, tpm_tokens + ?) WHERE id = ? AND tpm_minute = ?`,
      ),
      touchKey: p(
        `UPDATE keys SET last_used_at = ? WHERE id = ? AND coalesce(last_used_at, 0) < ?`,
      ),
      rotateKey: p(
        `UPDATE keys SET previous_hash = hash, previous_until = ?, hash = ?, prefix = ?
         WHERE id = ? AND revoked_at IS NULL`,
      ),
      updateKey: p(
        `UPDATE keys SET name = ?, metadata = ?, expires_at = ?, disabled_at = ?, rpm = ?,
                         limits = ?
         WHERE id = ? AND revoked_at IS NULL`,
      ),
      accountLimits: p(`UPDATE accounts SET limits = ? WHERE name = ? RETURNING id`),
      holds: p(
        `SELECT id, account_id, estimate, owner FROM ledger INDEXED BY ledger_held
         WHERE kind = 'charge' AND status = 'held'
           AND id NOT IN (SELECT ledger_id FROM video_jobs WHERE status = 'pending')
         ORDER BY id`,
      ),
      heldCount: p(`SELECT count(*) AS n FROM ledger INDEXED BY ledger_held WHERE status = 'held'`),
      heldByUnit: p(`SELECT json_extract(u.value, '$.unit') AS unit,
                            sum(json_extract(u.value, '$.quantity')) AS quantity,
                            sum(json_extract(u.value, '$.amount')) AS amount
                     FROM ledger l INDEXED BY ledger_held, json_each(l.estimate, '$.units') u
                     WHERE l.account_id = ? AND l.kind = 'charge' AND l.status = 'held'
                     GROUP BY 1 ORDER BY 1`),
      insertVideoJob: p(
        `INSERT INTO video_jobs (id, upstream_id, account_id, key_id, ledger_id, model, provider,
                                 rate, held_seconds, status, created_at, upstream_key)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
      ),
      videoJob: p(`SELECT * FROM video_jobs WHERE id = ?`),
      pendingVideoJobs: p(
        `SELECT * FROM video_jobs WHERE status = 'pending' ORDER BY created_at LIMIT ?`,
      ),
      finishVideoJob: p(
        `UPDATE video_jobs SET status = ?, billed_seconds = ?, amount = ?, result = ?,
                               finished_at = ?
         WHERE id = ? AND status = 'pending' RETURNING ledger_id`,
      ),
      insertKey: p(
        `INSERT INTO keys (id, account_id, hash, prefix, rpm, created_at, name, metadata,
                           expires_at, limits)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      keyById: p(`SELECT ${KEY_COLUMNS} FROM keys k JOIN accounts a ON a.id = k.account_id
                  WHERE k.id = ?`),
      keys: p(`SELECT ${KEY_COLUMNS} FROM keys k JOIN accounts a ON a.id = k.account_id
               ORDER BY k.created_at, k.id`),
      revokeKey: p(`UPDATE keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`),
      keyChanges: p(`SELECT n FROM key_changes`),
      // Prepared once: the group commit runs these on every write of the hot path.
      begin: p(`BEGIN IMMEDIATE`),
      commit: p(`COMMIT`),
      savepoint: p(`SAVEPOINT op`),
      release: p(`RELEASE op`),
      rollbackTo: p(`ROLLBACK TO op`),
      recordObject: p(
        `INSERT INTO upstream_objects (id, account_id, kind, context_tokens, created_at, provider)
         VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
      ),
      upstreamObject: p(
        `SELECT id, account_id, kind, context_tokens, provider FROM upstream_objects WHERE id = ?`,
      ),
      // Objects are in creation order: the expired ones are the rowids before the first live one.
      pruneObjects: p(
        `DELETE FROM upstream_objects WHERE rowid < coalesce(
           (SELECT rowid FROM upstream_objects WHERE created_at >= ?1 ORDER BY rowid LIMIT 1),
           (SELECT max(rowid) + 1 FROM upstream_objects))`,
      ),
      saveResponse: p(
        `INSERT INTO stored_responses (id, account_id, previous_id, items, context_tokens,
                                       created_at)
         VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
      ),
      // Walks back from an answer while within the bounds (one step past the byte bound).
      responseChain: p(
        `WITH RECURSIVE chain (id, previous_id, n, bytes) AS (
           SELECT id, previous_id, 1, length(items) FROM stored_responses WHERE id = ?1
           UNION ALL
           SELECT s.id, s.previous_id, c.n + 1, c.bytes + length(s.items)
           FROM chain c JOIN stored_responses s ON s.id = c.previous_id
           WHERE c.n < ?2 AND c.bytes <= ?3
         )
         SELECT s.id, s.account_id, s.previous_id, s.items, s.context_tokens, s.created_at
         FROM chain c JOIN stored_responses s ON s.id = c.id ORDER BY c.n`,
      ),
      pruneResponses: p(
        `DELETE FROM stored_responses WHERE rowid < coalesce(
           (SELECT rowid FROM stored_responses WHERE created_at >= ?1 ORDER BY rowid LIMIT 1),
           (SELECT max(rowid) + 1 FROM stored_responses))`,
      ),
      requests: p(`SELECT count(*) AS n FROM ledger l WHERE ${SETTLED_CHARGES}`),
      byUnit: p(`SELECT json_extract(u.value, '$.unit') AS unit,
                        sum(json_extract(u.value, '$.quantity')) AS quantity,
                        sum(json_extract(u.value, '$.amount')) AS amount
                 FROM ledger l, json_each(l.units) u WHERE ${SETTLED_CHARGES}
                 GROUP BY 1 ORDER BY 1`),
      byDay: p(`SELECT date(created_at / 1000, 'unixepoch') AS day, count(*) AS requests,
                        sum(amount) AS amount
                 FROM ledger l WHERE ${SETTLED_CHARGES} AND created_at >= ?
                 GROUP BY day ORDER BY day`),
      // Every account's: from a lower bound on the id (see `#firstEntryFrom`), not a scan.
      allByDay: p(`SELECT date(created_at / 1000, 'unixepoch') AS day, count(*) AS requests,
                          sum(amount) AS amount
                   FROM ledger l WHERE l.id >= ?2 AND l.kind = 'charge' AND l.status = 'settled'
                     AND l.created_at >= ?1
                   GROUP BY day ORDER BY day`),
      ledgerIds: p(`SELECT min(id) AS lo, max(id) AS hi FROM ledger`),
      entryFrom: p(`SELECT id, created_at FROM ledger WHERE id >= ? ORDER BY id LIMIT 1`),
      ledgerPage: p(`SELECT ${LEDGER_COLUMNS} FROM ledger l JOIN accounts a ON a.id = l.account_id
                     WHERE l.id < ? ORDER BY l.id DESC LIMIT ?`),
      accountLedgerPage: p(`SELECT ${LEDGER_COLUMNS}
                            FROM ledger l JOIN accounts a ON a.id = l.account_id
                            WHERE l.account_id = ? AND l.id < ? ORDER BY l.id DESC LIMIT ?`),
      byModel: p(`SELECT model, count(*) AS requests, sum(amount) AS amount FROM ledger l
                  WHERE ${SETTLED_CHARGES} GROUP BY model ORDER BY model`),
    };
    // Money is read as bigints, then as numbers where they are safe (`toTotal`): a balance, a
    // lifetime spend or a sum past 2^53 reads exactly (as a number, node:sqlite would throw).
    for (const name of MONEY_READS) this.#s[name].setReadBigInts(true);
  }

  /**
   * Prepares the file for serving (see `Store.prepareForServing`): the write lock is created and
   * this store takes it from then on, and a checkpointer thread starts (see `checkpointer.ts`;
   * stopped by `close`), so that no commit on the request path copies the log back.
   */
  prepareForServing(onCheckpointerError?: (message: string) => void): SharedArrayBuffer {
    this.#checkpointerFailed = onCheckpointerError;
    if (this.#writeLock && this.#checkpointer) return this.#writeLock.buffer;
    this.#writeLock ??= new WriteLock();
    this.#db.exec(`PRAGMA wal_autocheckpoint = ${FALLBACK_CHECKPOINT_PAGES};`);
    const checkpointer = new Worker(CHECKPOINTER.href, { type: "module" });
    checkpointer.onerror = (event) => {
      // The connections' own checkpoints (past FALLBACK_CHECKPOINT_PAGES) take over.
      event.preventDefault();
      this.#checkpointerFailed?.(event.message);
    };
    checkpointer.postMessage(
      { path: this.#path, writeLock: this.#writeLock.buffer } satisfies CheckpointerStart,
    );
    this.#checkpointer = checkpointer;
    return this.#writeLock.buffer;
  }

  #tx<T>(work: () => T): T {
    this.#flush(); // a direct transaction never nests in the turn's
    this.#writeLock?.acquire();
    try {
      this.#db.exec("BEGIN IMMEDIATE");
      try {
        const result = work();
        this.#db.exec("COMMIT");
        return result;
      } catch (error) {
        this.#db.exec("ROLLBACK");
        throw error;
      }
    } finally {
      this.#writeLock?.release();
    }
  }

  /**
   * Group commit. `op` is queued; when the event-loop turn ends, the turn's writes run in one
   * transaction and the promise resolves to the op's result once that is committed (each op is
   * one statement, or several under a savepoint with `atomic`, so a failing op leaves the others
   * intact and rejects alone). Reads see the writes after the flush.
   */
  #write<T>(op: () => T, atomic = false): Promise<T> {
    if (!this.#queued.length) {
      // After this turn's I/O callbacks, not a timer tick later (setTimeout(0) waits ≥ 1 ms).
      setImmediate(() => this.#flush());
    }
    const done = Promise.withResolvers<unknown>();
    done.promise.catch(() => {}); // observed by whoever awaits it
    const run = atomic ? () => this.#savepoint(op) : op;
    this.#queued.push({ run, done });
    return done.promise as Promise<T>;
  }

  #savepoint<T>(op: () => T): T {
    this.#s.savepoint.run();
    try {
      const result = op();
      this.#s.release.run();
      return result;
    } catch (error) {
      this.#s.rollbackTo.run();
      this.#s.release.run();
      throw error;
    }
  }

  /** Writes the queued ops in one transaction (under the write lock) and answers their callers. */
  #flush(): void {
    const queued = this.#queued;
    if (!queued.length) return;
    this.#queued = [];
    const outcomes: { ok: boolean; value: unknown }[] = [];
    this.#writeLock?.acquire();
    const began = performance.now();
    try {
      this.#s.begin.run();
      for (const { run } of queued) {
        try {
          outcomes.push({ ok: true, value: run() });
        } catch (error) {
          // Some errors (disk full, I/O) roll the whole transaction back: then none of the
          // turn's writes happened, and the rest must not run outside a transaction.
          if (!this.#db.isTransaction) throw error;
          outcomes.push({ ok: false, value: error });
        }
      }
      this.#s.commit.run();
      this.#onCommit?.((performance.now() - began) / 1000);
    } catch (error) {
      try {
        this.#db.exec("ROLLBACK");
      } catch { /* not in a transaction */ }
      for (const { done } of queued) done.reject(error);
      return;
    } finally {
      this.#writeLock?.release();
    }
    queued.forEach(({ done }, i) => {
      const { ok, value } = outcomes[i];
      if (ok) done.resolve(value);
      else done.reject(value);
    });
  }

  ensureAccount(name: string): Promise<Account> {
    return answer(() => {
      this.#s.insertAccount.run(name, Date.now());
      return toAccount(this.#s.accountByName.get(name) as Row);
    });
  }

  account(name: string): Promise<Account | undefined> {
    return answer(() => {
      const row = this.#s.accountByName.get(name) as Row | undefined;
      return row && toAccount(row);
    });
  }

  listAccounts(): Promise<Account[]> {
    return answer(() => {
      return (this.#s.accounts.all() as Row[]).map(toAccount);
    });
  }

  credit(accountId: number, amount: number, note: string): Promise<Account> {
    return answer(() => {
      checkCredit(amount);
      return this.#tx(() => {
        if (Number(this.#s.addBalance.run(amount, accountId).changes) !== 1) {
          const row = this.#s.accountById.get(accountId) as Row | undefined;
          if (!row) throw new Error(`no account ${accountId}`);
          const account = toAccount(row);
          throw new CreditRefused(accountId, amount, account.balance, account.held);
        }
        this.#s.insertCredit.run(accountId, amount, note, Date.now());
        return toAccount(this.#s.accountById.get(accountId) as Row);
      });
    });
  }

  insertKey(key: NewKey): Promise<void> {
    return answer(() =>
      this.#tx(() => {
        const limits = key.limits ?? {};
        this.#s.insertKey.run(
          key.id,
          key.accountId,
          key.hash,
          key.prefix,
          key.rpm,
          key.createdAt,
          key.name ?? null,
          key.metadata && Object.keys(key.metadata).length ? JSON.stringify(key.metadata) : null,
          key.expiresAt ?? null,
          limitsText(limits),
        );
        this.#defineBudgets(keyOwner(key.id), limits.budgets);
      })
    );
  }

  /** Makes an owner's budget rows the given ones (a removed budget's row goes, counts and all). */
  #defineBudgets(owner: string, budgets: Budget[] | undefined): void {
    const kept = new Set((budgets ?? []).map((b) => b.period));
    for (const period of BUDGET_PERIODS) {
      if (!kept.has(period)) this.#s.dropBudget.run(owner, period);
    }
    for (const budget of budgets ?? []) {
      this.#s.defineBudget.run(owner, budget.period, budget.amount);
    }
  }

  updateKey(id: string, patch: KeyPatch): Promise<KeyRecord | undefined> {
    return answer(() => {
      const updated = this.#tx(() => {
        const row = this.#s.keyById.get(id) as Row | undefined;
        if (!row || row.revoked_at !== null) return false;
        const key = toKey(row);
        const limits = patch.limits ?? key.limits;
        const disabledAt = patch.disabled === undefined
          ? key.disabledAt
          : patch.disabled
          ? key.disabledAt ?? Date.now()
          : null;
        const metadata = patch.metadata ?? key.metadata;
        this.#s.updateKey.run(
          patch.name === undefined ? key.name : patch.name,
          Object.keys(metadata).length ? JSON.stringify(metadata) : null,
          patch.expiresAt === undefined ? key.expiresAt : patch.expiresAt,
          disabledAt,
          patch.rpm === undefined ? key.rpm : patch.rpm,
          limitsText(limits),
          id,
        );
        if (patch.limits) this.#defineBudgets(keyOwner(id), limits.budgets);
        return true;
      });
      this.#keysChecked = false; // this connection's own change is seen in this very turn
      const row = updated ? this.#s.keyById.get(id) as Row | undefined : undefined;
      return row && toKey(row);
    });
  }

  rotateKey(
    id: string,
    hash: Uint8Array,
    prefix: string,
    previousUntil: number | null,
  ): Promise<boolean> {
    return answer(() => {
      const rotated = Number(this.#s.rotateKey.run(previousUntil, hash, prefix, id).changes) === 1;
      this.#keysChecked = false;
      return rotated;
    });
  }

  async touchKeys(used: ReadonlyMap<string, number>): Promise<void> {
    if (!used.size) return;
    await this.#write(() => {
      for (const [id, at] of used) this.#s.touchKey.run(at, id, at);
    });
  }

  updateAccountLimits(name: string, limits: AccountLimits): Promise<Account | undefined> {
    return answer(() => {
      const updated = this.#tx(() => {
        const row = this.#s.accountLimits.get(limitsText(limits), name) as Row | undefined;
        if (!row) return false;
        this.#defineBudgets(accountOwner(Number(row.id)), limits.budgets);
        return true;
      });
      this.#keysChecked = false;
      const row = updated ? this.#s.accountByName.get(name) as Row | undefined : undefined;
      return row && toAccount(row);
    });
  }

  budgets(keyId: string | null, accountId: number, windows: BudgetWindows): Promise<BudgetState[]> {
    return answer(() => {
      const rows = this.#s.budgetRows.all(
        keyId === null ? "" : keyOwner(keyId),
        accountOwner(accountId),
      ) as Row[];
      return budgetStates(rows.map(toBudgetRow), windows);
    });
  }

  /**
   * Key lookups are cached in memory. Every change to a key (the CLI's, another process's or
   * thread's) counts in `key_changes`, which is checked by the first lookup of each event-loop
   * turn (far cheaper than the join; the requests of one turn are handled as of its start), so a
   * revoked key is refused from the next request on.
   */
  findKey(id: string): KeyRecord | undefined {
    if (!this.#keysChecked) {
      this.#keysChecked = true;
      setImmediate(() => this.#keysChecked = false);
      const version = Number((this.#s.keyChanges.get() as Row).n);
      if (version !== this.#keyChanges) {
        this.#keyChanges = version;
        this.#keys.clear();
      }
    }
    const cached = this.#keys.get(id);
    if (cached) return cached;
    const row = this.#s.keyById.get(id) as Row | undefined;
    if (!row) return undefined; // ids that name no key are not kept: clients choose them
    const key = toKey(row);
    if (this.#keys.size >= MAX_CACHED_KEYS) this.#keys.clear();
    this.#keys.set(id, key);
    return key;
  }

  listKeys(): Promise<KeyRecord[]> {
    return answer(() => {
      return (this.#s.keys.all() as Row[]).map(toKey);
    });
  }

  revokeKey(id: string): Promise<boolean> {
    return answer(() => {
      const revoked = Number(this.#s.revokeKey.run(Date.now(), id).changes) === 1;
      this.#keysChecked = false; // this connection's own change is seen in this very turn
      return revoked;
    });
  }

  holdsOutstanding(): Promise<number> {
    return answer(() => {
      return Number((this.#s.heldCount.get() as Row).n);
    });
  }

  available(accountId: number): Promise<number> {
    return answer(() => {
      const row = this.#s.available.get(accountId) as Row | undefined;
      return row ? Number(row.available) : 0;
    });
  }

  async reserve(h: NewHold): Promise<number | null> {
    checkHold(h);
    return await this.#write(() => {
      const written = this.#s.hold.run(
        h.requestId,
        h.keyId,
        h.accountId,
        h.endpoint,
        h.model,
        h.provider,
        h.reserve,
        JSON.stringify(h.estimate),
        Date.now(),
        this.#owner,
        h.upstreamModel ?? null,
      );
      return Number(written.changes) === 1 ? Number(written.lastInsertRowid) : null;
    });
  }

  async reserveLimited(h: NewHold, at: HoldLimits): Promise<LimitedHold | LimitRefusal> {
    checkHold(h);
    return await this.#write(() => {
      const account = this.#s.accountById.get(h.accountId) as Row | undefined;
      const key = this.#s.keyCounts.get(h.keyId) as Row | undefined;
      if (!account) return { refused: "balance", needed: h.reserve } as const;
      const keyLimits = keyLimitsOf(key?.limits);
      const rows = (this.#s.budgetRows.all(
        keyOwner(h.keyId),
        accountOwner(h.accountId),
      ) as Row[]).map(toBudgetRow);
      const available = Number(toTotal(account.balance)) - Number(toTotal(account.held));
      const plan = planHold(h.reserve, available, keyLimits, rows, {
        inFlight: Number(key?.in_flight ?? 0),
        tpmMinute: Number(key?.tpm_minute ?? 0),
        tpmTokens: Number(key?.tpm_tokens ?? 0),
      }, at);
      if ("refused" in plan) return plan;
      const written = this.#s.holdMarked.run(
        h.requestId,
        h.keyId,
        h.accountId,
        h.endpoint,
        h.model,
        h.provider,
        h.reserve,
        JSON.stringify(h.estimate),
        Date.now(),
        this.#owner,
        h.upstreamModel ?? null,
        JSON.stringify(plan.mark),
      );
      if (Number(written.changes) !== 1) {
        return { refused: "balance", needed: h.reserve } as const;
      }
      for (const row of plan.budgets) {
        this.#s.putBudget.run(row.held, row.windowStart, row.windowSpent, row.owner, row.period);
      }
      if (key && (plan.mark.c || plan.mark.t !== undefined)) {
        const c = plan.counts;
        this.#s.putKeyCounts.run(c.inFlight, c.tpmMinute, c.tpmTokens, h.keyId);
      }
      return {
        id: Number(written.lastInsertRowid),
        ...(plan.tokens ? { tokens: plan.tokens } : {}),
      };
    }, true);
  }

  async settle(id: number, charge: Charge | null, windows?: BudgetWindows): Promise<boolean> {
    checkCharge(charge);
    return await this.#write(() => this.#settle(id, charge, windows));
  }

  /**
   * One statement (the row's triggers move the funds, see migration 8), and for a limited hold
   * what it counted given back (see `limits.ts`).
   */
  #settle(id: number, charge: Charge | null, windows?: BudgetWindows): boolean {
    const row = (charge
      ? this.#s.settleHold.get(
        charge.amount,
        JSON.stringify(charge.units),
        charge.estimated ? 1 : 0,
        Date.now(),
        id,
      )
      : this.#s.deleteHold.get(id)) as Row | undefined;
    if (!row) return false;
    const mark = markOf(row.limits);
    if (mark) this.#giveBack(mark, String(row.key_id), Number(row.reserved), charge, windows);
    return true;
  }

  /** Gives back what a limited hold counted (see `Store.settle`). */
  #giveBack(
    mark: HoldMark,
    keyId: string,
    reserved: number,
    charge: Charge | null,
    windows = utcWindows(Date.now()),
  ): void {
    const amount = charge?.amount ?? 0;
    for (const name of mark.b) {
      const at = name.lastIndexOf("|");
      const found = this.#s.budgetRow.get(name.slice(0, at), name.slice(at + 1)) as
        | Row
        | undefined;
      if (!found) continue; // the budget was removed meanwhile
      const after = settledBudget(toBudgetRow(found), reserved, amount, windows);
      this.#s.putBudget.run(
        after.held,
        after.windowStart,
        after.windowSpent,
        after.owner,
        after.period,
      );
    }
    if (mark.c) this.#s.leaveFlight.run(keyId);
    if (mark.t !== undefined && mark.m !== undefined) {
      const used = charge ? chargedTokens(charge.units) : 0;
      this.#s.correctTokens.run(used - mark.t, keyId, mark.m);
    }
  }

  /**
   * Held entries whose owner is gone: no owner (older rows), or an owner whose lock can be taken
   * (its process died). The holds of live processes — this one's included — are left alone.
   */
  pendingHolds(): Promise<PendingHold[]> {
    return answer(() => {
      const alive = new Map<string, boolean>();
      const gone = (owner: unknown): boolean => {
        if (owner === null) return true;
        const id = String(owner);
        if (id === this.#owner) return false;
        if (!alive.has(id)) alive.set(id, this.#locks?.alive(id) ?? false);
        return !alive.get(id);
      };
      const holds = (this.#s.holds.all() as Row[]).filter((row) => gone(row.owner));
      this.#locks?.sweep(new Set([...alive].filter(([, live]) => live).map(([id]) => id)));
      return holds.map((row) => ({
        id: Number(row.id),
        accountId: Number(row.account_id),
        estimate: JSON.parse(String(row.estimate)),
      }));
    });
  }

  async insertVideoJob(job: VideoJob): Promise<void> {
    checkVideoJob(job);
    await this.#write(() =>
      this.#s.insertVideoJob.run(
        job.id,
        job.upstreamId,
        job.accountId,
        job.keyId,
        job.ledgerId,
        job.model,
        job.provider,
        job.rate,
        job.heldSeconds,
        job.createdAt,
        job.upstreamKey ?? null,
      )
    );
  }

  videoJob(id: string): Promise<VideoJob | undefined> {
    return answer(() => {
      const row = this.#s.videoJob.get(id) as Row | undefined;
      return row && toVideoJob(row);
    });
  }

  pendingVideoJobs(limit: number): Promise<VideoJob[]> {
    return answer(() => {
      return (this.#s.pendingVideoJobs.all(limit) as Row[]).map(toVideoJob);
    });
  }

  async finishVideoJob(
    id: string,
    outcome: VideoOutcome,
    windows?: BudgetWindows,
  ): Promise<boolean> {
    checkVideoOutcome(outcome);
    return await this.#write(() => {
      const done = outcome.status === "done";
      const row = this.#s.finishVideoJob.get(
        outcome.status,
        done ? outcome.billedSeconds ?? 0 : null,
        done ? outcome.charge?.amount ?? 0 : null,
        outcome.result,
        Date.now(),
        id,
      ) as Row | undefined;
      if (!row) return false;
      this.#settle(Number(row.ledger_id), done ? outcome.charge! : null, windows);
      return true;
    }, true);
  }

  async recordObject(o: UpstreamObject): Promise<void> {
    checkTokens("an upstream object", o.contextTokens);
    await this.#write(() => {
      this.#s.recordObject.run(
        o.id,
        o.accountId,
        o.kind,
        o.contextTokens,
        Date.now(),
        o.provider ?? null,
      );
    });
  }

  upstreamObject(id: string): Promise<UpstreamObject | undefined> {
    return answer(() => {
      const row = this.#s.upstreamObject.get(id) as Row | undefined;
      return row && toUpstreamObject(row);
    });
  }

  pruneObjects(before: number): Promise<number> {
    return answer(() => {
      return Number(this.#tx(() => this.#s.pruneObjects.run(before)).changes);
    });
  }

  async saveResponse(r: StoredResponse): Promise<void> {
    checkTokens("a conversation step", r.contextTokens);
    await this.#write(() => {
      this.#s.saveResponse.run(
        r.id,
        r.accountId,
        r.previousId,
        r.items,
        r.contextTokens,
        r.createdAt,
      );
    });
  }

  responseChain(id: string, bound: ChainBound): Promise<StoredResponse[]> {
    return answer(() => {
      return (this.#s.responseChain.all(id, bound.steps, bound.bytes) as Row[]).map(
        toStoredResponse,
      );
    });
  }

  pruneResponses(before: number): Promise<number> {
    return answer(() => {
      return Number(this.#tx(() => this.#s.pruneResponses.run(before)).changes);
    });
  }

  usage(accountId: number): Promise<UsageSummary> {
    return answer(() => {
      const account = toAccount(this.#s.accountById.get(accountId) as Row);
      // Built from entries: a client-chosen name (`__proto__`) stays an ordinary key.
      const byUnit: UsageSummary["byUnit"] = Object.fromEntries(
        (this.#s.byUnit.all(accountId) as Row[]).map((
          row,
        ) => [String(row.unit), { quantity: toTotal(row.quantity), amount: toTotal(row.amount) }]),
      );
      // Built from entries: a client-chosen name (`__proto__`) stays an ordinary key.
      const byModel: UsageSummary["byModel"] = Object.fromEntries(
        (this.#s.byModel.all(accountId) as Row[]).map((
          row,
        ) => [String(row.model), { requests: Number(row.requests), amount: toTotal(row.amount) }]),
      );
      // Built from entries: a client-chosen name (`__proto__`) stays an ordinary key.
      const heldByUnit: UsageSummary["heldByUnit"] = Object.fromEntries(
        (this.#s.heldByUnit.all(accountId) as Row[]).map((
          row,
        ) => [String(row.unit), { quantity: toTotal(row.quantity), amount: toTotal(row.amount) }]),
      );
      const requests = Number((this.#s.requests.get(accountId) as Row).n);
      return { account, requests, byUnit, byModel, heldByUnit };
    });
  }

  usageByDay(accountId: number, since: number): Promise<DayUsage[]> {
    return answer(() => {
      return (this.#s.byDay.all(accountId, since) as Row[]).map(toDay);
    });
  }

  totalUsageByDay(since: number): Promise<DayUsage[]> {
    return answer(() => {
      const first = this.#firstEntryFrom(since - LEDGER_SKEW_MS);
      return (this.#s.allByDay.all(since, first) as Row[]).map(toDay);
    });
  }

  /**
   * The smallest ledger id from which every entry was created at `time` or later (one past the
   * last id when none was): a binary search over ids, which follow creation order (give or take
   * `LEDGER_SKEW_MS`) — a few index lookups where a filter on `created_at` would read the whole
   * ledger, which has no index on it.
   */
  #firstEntryFrom(time: number): number {
    const ids = this.#s.ledgerIds.get() as Row;
    let lo = ids.lo === null ? 1 : Number(ids.lo);
    let hi = ids.hi === null ? lo : Number(ids.hi) + 1;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const row = this.#s.entryFrom.get(mid) as Row | undefined;
      // None: the last entries were removed meanwhile (a released hold) — none is newer.
      if (!row || Number(row.created_at) >= time) hi = mid;
      else lo = Number(row.id) + 1;
    }
    return lo;
  }

  ledgerPage(
    page: { accountId?: number; before?: number; limit: number },
  ): Promise<LedgerEntry[]> {
    return answer(() => {
      const before = page.before ?? Number.MAX_SAFE_INTEGER;
      const rows = page.accountId === undefined
        ? this.#s.ledgerPage.all(before, page.limit)
        : this.#s.accountLedgerPage.all(page.accountId, before, page.limit);
      return (rows as Row[]).map((row) => ({
        id: Number(row.id),
        kind: String(row.kind) as LedgerEntry["kind"],
        status: String(row.status) as LedgerEntry["status"],
        account: String(row.account),
        requestId: row.request_id === null ? null : String(row.request_id),
        keyId: row.key_id === null ? null : String(row.key_id),
        endpoint: row.endpoint === null ? null : String(row.endpoint),
        model: row.model === null ? null : String(row.model),
        provider: row.provider === null ? null : String(row.provider),
        upstreamModel: row.upstream_model === null ? null : String(row.upstream_model),
        amount: toTotal(row.amount),
        units: JSON.parse(String(row.units)),
        estimated: Number(row.estimated) === 1,
        note: row.note === null ? null : String(row.note),
        createdAt: Number(row.created_at),
        settledAt: row.settled_at === null ? null : Number(row.settled_at),
      }));
    });
  }

  raiseAlert(alert: NewAlert): Promise<number | null> {
    return answer(() => {
      // Raised before (the common case of a check): a read, no write lock.
      const key = [alert.type, alert.owner, alert.period, alert.windowStart, alert.threshold];
      if (this.#s.alertExists.get(...key)) return null;
      const row = this.#tx(() =>
        this.#s.raiseAlert.get(
          alert.type,
          alert.owner,
          alert.period,
          alert.windowStart,
          alert.threshold,
          alert.accountId,
          alert.keyId,
          JSON.stringify(alert.payload),
          alert.status,
          alert.status === "pending" ? alert.createdAt : null,
          alert.createdAt,
        ) as Row | undefined
      );
      return row ? Number(row.id) : null;
    });
  }

  alertsDue(now: number, limit: number): Promise<Alert[]> {
    return answer(() => (this.#s.alertsDue.all(now, limit) as Row[]).map(toAlert));
  }

  markAlert(id: number, outcome: AlertOutcome): Promise<boolean> {
    return answer(() => {
      const changed = this.#tx(() =>
        this.#s.markAlert.run(
          outcome.status,
          outcome.at,
          outcome.status === "pending" ? outcome.nextAttemptAt : null,
          outcome.status === "delivered" ? null : outcome.error,
          outcome.status === "delivered" ? outcome.at : null,
          id,
        ).changes
      );
      return Number(changed) === 1;
    });
  }

  listAlerts(page: { limit: number; before?: number; accountId?: number }): Promise<Alert[]> {
    return answer(() => {
      const before = page.before ?? Number.MAX_SAFE_INTEGER;
      const rows = page.accountId === undefined
        ? this.#s.alertPage.all(before, page.limit)
        : this.#s.accountAlertPage.all(page.accountId, before, page.limit);
      return (rows as Row[]).map(toAlert);
    });
  }

  spentBudgets(
    percent: number,
    of?: { keyIds: string[]; accountIds: number[] },
  ): Promise<SpentBudget[]> {
    return answer(() => {
      const owners = of
        ? JSON.stringify([...of.keyIds.map(keyOwner), ...of.accountIds.map(accountOwner)])
        : null;
      return (this.#s.spentBudgets.all(percent, owners) as Row[]).map(toSpentBudget);
    });
  }

  lowBalances(amount: number, accountIds?: number[]): Promise<LowBalance[]> {
    return answer(() => {
      const ids = accountIds ? JSON.stringify(accountIds) : null;
      return (this.#s.lowBalances.all(amount, ids) as Row[]).map(toLowBalance);
    });
  }

  expiringKeys(after: number, until: number): Promise<KeyRecord[]> {
    return answer(() => (this.#s.expiringKeys.all(after, until) as Row[]).map(toKey));
  }

  close(): void {
    this.#flush();
    this.#checkpointer?.terminate();
    this.#db.close();
    this.#locks?.release();
  }
}

/** What a synchronous read or write gives, as the interface's promise (a throw: a rejection). */
function answer<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (error) {
    return Promise.reject(error);
  }
}
