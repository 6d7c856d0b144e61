/**
 * The SQLite store's schema, as the migrations that built it, in order (each runs once, in a
 * transaction of its own; `PRAGMA user_version` counts those done). Never change one that has
 * shipped: add the next.
 */
import type { DatabaseSync } from "node:sqlite";
import { alerts, SQLITE_TYPES, teamKeys } from "./schema_shared.ts";

/** The migrations, oldest first. */
export const MIGRATIONS: string[] = [
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
  // Keys a team can hand out (the columns and budgets: `teamKeys` of `schema_shared.ts`, shared with
  // the PostgreSQL store): names, metadata, expiry, disabling, rotation, limits (JSON, see
  // `limits.ts`) and the counts a limited hold keeps on the key's row; account limits; budget
  // states (one row per owner and period); what each limited hold counted. A key's counters and
  // last use change on every call, and must not wake every process's key cache: the change
  // trigger watches the other columns only (and account limits, read with the key).
  `${teamKeys(SQLITE_TYPES)}
   DROP TRIGGER keys_updated;
   CREATE TRIGGER keys_updated AFTER UPDATE OF account_id, hash, prefix, rpm, revoked_at, name,
     metadata, expires_at, disabled_at, limits, previous_hash, previous_until ON keys
   BEGIN UPDATE key_changes SET n = n + 1; END;
   CREATE TRIGGER accounts_limits AFTER UPDATE OF limits ON accounts
   BEGIN UPDATE key_changes SET n = n + 1; END;`,
  // Alerts (see `alerts/`; the migration is `schema_shared.ts`'s, shared with the PostgreSQL store):
  // what each is about is unique, so inserting one is the decision that it is raised once; its
  // delivery state is kept with it, so a restart resumes delivery. Keys about to expire are found
  // by an index of their own.
  alerts(SQLITE_TYPES),
  // A key's strict mode: its translated calls refuse adaptations (see `translate/adaptations.ts`).
  // A change to it is a key change like the others.
  `ALTER TABLE keys ADD COLUMN strict INTEGER NOT NULL DEFAULT 0;
   DROP TRIGGER keys_updated;
   CREATE TRIGGER keys_updated AFTER UPDATE OF account_id, hash, prefix, rpm, revoked_at, name,
     metadata, expires_at, disabled_at, limits, previous_hash, previous_until, strict ON keys
   BEGIN UPDATE key_changes SET n = n + 1; END;`,
  // Messages threads the gateway holds itself (translated calls), one row per turn under its
  // answer's id, in creation order like stored_responses.
  `CREATE TABLE thread_turns (
     id TEXT NOT NULL UNIQUE,
     account_id INTEGER NOT NULL REFERENCES accounts(id),
     previous_id TEXT,
     turn TEXT NOT NULL,
     created_at INTEGER NOT NULL
   );`,
  // What the prompt cache did for each call (see `billing/cache.ts`): its input tokens, those read
  // and written (5-minute, 1-hour), what the reads saved, and a miss the gateway caused — its
  // cause, the tokens it would have read, what that lost (nanoUSD). Older rows keep zeros.
  `ALTER TABLE ledger ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE ledger ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE ledger ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE ledger ADD COLUMN cache_write_1h_tokens INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE ledger ADD COLUMN cache_saved INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE ledger ADD COLUMN cache_miss TEXT;
   ALTER TABLE ledger ADD COLUMN cache_miss_tokens INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE ledger ADD COLUMN cache_lost INTEGER NOT NULL DEFAULT 0;`,
];

/** Runs the migrations `db` has not had yet. */
export function migrate(db: DatabaseSync): void {
  const version = Number(
    (db.prepare("PRAGMA user_version").get() as { user_version: unknown }).user_version,
  );
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
