/**
 * The PostgreSQL store's schema: forward-only migrations, applied at startup in one transaction
 * under an advisory lock, so replicas starting together migrate once. Amounts are `bigint`
 * nanoUSD; times are ms since the epoch, as in the SQLite store.
 */
import type { Sql } from "./postgres_connection.ts";
import { alerts, POSTGRES_TYPES, teamKeys } from "./schema_shared.ts";

/** Advisory lock keys (two-int form): the namespace, then what is locked in it. */
export const LOCKS = {
  /** `(GATEWAY, MIGRATE)` is held while migrating; `(GATEWAY, LEADER)` by the leading replica. */
  GATEWAY: 53_470,
  MIGRATE: 1,
  LEADER: 2,
  /** `(OWNER, id)` is held by the live process that registered as owner `id`. */
  OWNER: 53_471,
} as const;

/** The channel a key change is announced on (see `postgres.ts`, `postgres_accounts.ts`). */
export const KEYS_CHANNEL = "switchyard_keys";

/**
 * The request counter's signature and the clock its body reads, the same in each version of it (a
 * function is replaced only with the same arguments and result).
 */
const COUNT_REQUEST = `switchyard_count_request(k text, lim integer)
     RETURNS TABLE (allowed boolean, remaining integer, reset_ms bigint)
     LANGUAGE plpgsql AS $$
   DECLARE
     now_ms bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
     b bigint := now_ms / 100;`;

/**
 * How each version of the request counter answers, once `count` requests are in the window
 * (`allowed`: whether this one was counted): the requests left under the limit, or none until the
 * oldest bucket leaves the window.
 */
function countAnswer(count: string, allowed: string): string {
  return `     IF ${count} < lim THEN
       RETURN QUERY SELECT ${allowed}, lim - ${count}, 0::bigint;
       RETURN;
     END IF;
     SELECT min(bucket) INTO oldest FROM rate_buckets WHERE key_id = k;
     RETURN QUERY SELECT ${allowed}, 0, greatest((oldest + 600) * 100 - now_ms, 1);
   END $$;`;
}

/** The migrations, oldest first. Never change one that has shipped: add the next. */
export const MIGRATIONS: string[] = [
  `CREATE TABLE accounts (
     id bigserial PRIMARY KEY,
     name text NOT NULL UNIQUE,
     balance bigint NOT NULL DEFAULT 0,
     spent bigint NOT NULL DEFAULT 0,
     held bigint NOT NULL DEFAULT 0,
     created_at bigint NOT NULL
   );
   CREATE TABLE keys (
     id text PRIMARY KEY,
     account_id bigint NOT NULL REFERENCES accounts (id),
     hash bytea NOT NULL,
     prefix text NOT NULL,
     rpm integer,
     created_at bigint NOT NULL,
     revoked_at bigint
   );
   -- One row per billed call ('held' while it runs, then 'settled') and per credit, as in the
   -- SQLite store; owner: the process holding the call (see owners below).
   CREATE TABLE ledger (
     id bigserial PRIMARY KEY,
     kind text NOT NULL CHECK (kind IN ('charge', 'credit')),
     status text NOT NULL CHECK (status IN ('held', 'settled')),
     request_id text,
     key_id text,
     account_id bigint NOT NULL REFERENCES accounts (id),
     endpoint text,
     model text,
     provider text,
     upstream_model text,
     reserved bigint NOT NULL DEFAULT 0,
     amount bigint NOT NULL,
     units jsonb NOT NULL DEFAULT '[]',
     estimate jsonb,
     estimated boolean NOT NULL DEFAULT false,
     note text,
     owner integer,
     -- Names a hold before its id is known (a hold whose answer was lost with the connection).
     token uuid,
     created_at bigint NOT NULL,
     settled_at bigint
   );
   CREATE INDEX ledger_account ON ledger (account_id, kind);
   CREATE INDEX ledger_held ON ledger (account_id) WHERE status = 'held';
   CREATE INDEX ledger_token ON ledger (token) WHERE status = 'held';
   CREATE INDEX ledger_created ON ledger (created_at);
   CREATE TABLE video_jobs (
     id text PRIMARY KEY,
     upstream_id text NOT NULL,
     account_id bigint NOT NULL REFERENCES accounts (id),
     key_id text NOT NULL,
     ledger_id bigint NOT NULL,
     model text NOT NULL,
     provider text NOT NULL,
     upstream_key text,
     rate bigint NOT NULL,
     held_seconds integer NOT NULL,
     status text NOT NULL CHECK (status IN ('pending', 'done', 'failed', 'expired')),
     billed_seconds integer,
     amount bigint,
     result text,
     created_at bigint NOT NULL,
     finished_at bigint
   );
   CREATE INDEX video_jobs_pending ON video_jobs (created_at) WHERE status = 'pending';
   CREATE TABLE upstream_objects (
     id text PRIMARY KEY,
     account_id bigint NOT NULL REFERENCES accounts (id),
     kind text NOT NULL,
     context_tokens bigint NOT NULL DEFAULT 0,
     provider text,
     created_at bigint NOT NULL
   );
   CREATE INDEX upstream_objects_age ON upstream_objects (created_at);
   CREATE TABLE stored_responses (
     id text PRIMARY KEY,
     account_id bigint NOT NULL REFERENCES accounts (id),
     previous_id text,
     items text NOT NULL,
     context_tokens bigint NOT NULL DEFAULT 0,
     created_at bigint NOT NULL
   );
   CREATE INDEX stored_responses_age ON stored_responses (created_at);
   -- Serving processes: each holds the advisory lock (OWNER, id) while it lives, so its held calls
   -- are recovered only once it has died.
   CREATE TABLE owners (
     id serial PRIMARY KEY,
     pid integer NOT NULL,
     started_at bigint NOT NULL
   );
   -- Key changes are counted and announced, so every replica drops its cached keys.
   CREATE TABLE key_changes (n bigint NOT NULL);
   INSERT INTO key_changes (n) VALUES (0);
   CREATE FUNCTION switchyard_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     UPDATE key_changes SET n = n + 1;
     PERFORM pg_notify('${KEYS_CHANNEL}', '');
     RETURN NULL;
   END $$;
   CREATE TRIGGER keys_changed AFTER INSERT OR UPDATE OR DELETE ON keys
     FOR EACH STATEMENT EXECUTE FUNCTION switchyard_key_changed();
   -- Requests per minute per key, for the key as a whole: counts per 100 ms bucket of the
   -- database's clock; the window is the current bucket and the 599 before it.
   CREATE TABLE rate_buckets (
     key_id text NOT NULL,
     bucket bigint NOT NULL,
     n integer NOT NULL,
     PRIMARY KEY (key_id, bucket)
   );
   CREATE FUNCTION ${COUNT_REQUEST}
     total integer;
     oldest bigint;
   BEGIN
     -- One key's requests are counted one at a time, whichever replica they reach.
     PERFORM pg_advisory_xact_lock(53472, hashtext(k));
     DELETE FROM rate_buckets WHERE key_id = k AND bucket <= b - 600;
     SELECT coalesce(sum(n), 0), min(bucket) INTO total, oldest
       FROM rate_buckets WHERE key_id = k;
     IF total >= lim THEN
       RETURN QUERY SELECT false, 0, greatest((oldest + 600) * 100 - now_ms, 1);
       RETURN;
     END IF;
     INSERT INTO rate_buckets (key_id, bucket, n) VALUES (k, b, 1)
       ON CONFLICT (key_id, bucket) DO UPDATE SET n = rate_buckets.n + 1;
     total := total + 1;
${countAnswer("total", "true")}`,
  // Requests counted without summing the window on every call: a running total per key, whose
  // row is also the key's lock (held for a few index operations, not the window's sum).
  `CREATE TABLE rate_keys (
     key_id text PRIMARY KEY,
     total integer NOT NULL
   );
   CREATE OR REPLACE FUNCTION ${COUNT_REQUEST}
     counted integer;
     expired integer;
     ok boolean;
     oldest bigint;
   BEGIN
     SELECT total INTO counted FROM rate_keys WHERE key_id = k FOR UPDATE;
     IF NOT FOUND THEN
       INSERT INTO rate_keys (key_id, total)
         SELECT k, coalesce(sum(n), 0) FROM rate_buckets WHERE key_id = k
         ON CONFLICT (key_id) DO NOTHING;
       SELECT total INTO counted FROM rate_keys WHERE key_id = k FOR UPDATE;
     END IF;
     WITH gone AS (
       DELETE FROM rate_buckets WHERE key_id = k AND bucket <= b - 600 RETURNING n
     )
     SELECT coalesce(sum(n), 0) INTO expired FROM gone;
     counted := counted - expired;
     ok := counted < lim;
     IF ok THEN
       INSERT INTO rate_buckets (key_id, bucket, n) VALUES (k, b, 1)
         ON CONFLICT (key_id, bucket) DO UPDATE SET n = rate_buckets.n + 1;
       counted := counted + 1;
     END IF;
     UPDATE rate_keys SET total = counted WHERE key_id = k;
${countAnswer("counted", "ok")}`,
  // Owners say they are alive every second (see `gone` in postgres_owners.ts): a lock lost with a
  // connection for a moment does not make a live process look dead.
  `ALTER TABLE owners ADD COLUMN seen_at bigint;
   ALTER TABLE owners ADD COLUMN seen_epoch float8;`,
  // Keys a team can hand out (see the SQLite store's migration of the same name; the columns and
  // budgets are `teamKeys` of `schema_shared.ts`, as there): names, metadata, expiry, disabling,
  // rotation, limits and the counts a limited hold keeps on the key's row; account limits; budget
  // states; what each limited hold counted. Counters and last use change on every call and must
  // not be announced as key changes.
  `${teamKeys(POSTGRES_TYPES)}
   DROP TRIGGER keys_changed ON keys;
   CREATE TRIGGER keys_changed AFTER INSERT OR DELETE OR UPDATE OF account_id, hash, prefix, rpm,
     revoked_at, name, metadata, expires_at, disabled_at, limits, previous_hash, previous_until
     ON keys FOR EACH STATEMENT EXECUTE FUNCTION switchyard_key_changed();
   CREATE TRIGGER accounts_limits_changed AFTER UPDATE OF limits ON accounts
     FOR EACH STATEMENT EXECUTE FUNCTION switchyard_key_changed();`,
  // Alerts (see the SQLite store's migration of the same name, and `schema_shared.ts`): what each is
  // about is unique, so the insert that raises one decides, across replicas, that it is raised once.
  alerts(POSTGRES_TYPES),
  // A key's strict mode (see the SQLite store's migration of the same name).
  `ALTER TABLE keys ADD COLUMN strict boolean NOT NULL DEFAULT false;
   DROP TRIGGER keys_changed ON keys;
   CREATE TRIGGER keys_changed AFTER INSERT OR DELETE OR UPDATE OF account_id, hash, prefix, rpm,
     revoked_at, name, metadata, expires_at, disabled_at, limits, previous_hash, previous_until,
     strict
     ON keys FOR EACH STATEMENT EXECUTE FUNCTION switchyard_key_changed();`,
  // Messages threads the gateway holds itself (translated calls), one row per turn.
  `CREATE TABLE thread_turns (
     id text PRIMARY KEY,
     account_id bigint NOT NULL REFERENCES accounts (id),
     previous_id text,
     turn text NOT NULL,
     created_at bigint NOT NULL
   );
   CREATE INDEX thread_turns_age ON thread_turns (created_at);`,
  // What the prompt cache did for each call (see the SQLite store's migration of the same name).
  `ALTER TABLE ledger ADD COLUMN input_tokens bigint NOT NULL DEFAULT 0,
     ADD COLUMN cached_tokens bigint NOT NULL DEFAULT 0,
     ADD COLUMN cache_write_tokens bigint NOT NULL DEFAULT 0,
     ADD COLUMN cache_write_1h_tokens bigint NOT NULL DEFAULT 0,
     ADD COLUMN cache_saved bigint NOT NULL DEFAULT 0,
     ADD COLUMN cache_miss text,
     ADD COLUMN cache_miss_tokens bigint NOT NULL DEFAULT 0,
     ADD COLUMN cache_lost bigint NOT NULL DEFAULT 0;`,
  // Where conversations' prompt caches are (see `postgres_affinity.ts`): unlogged, as a placement
  // lost in a crash only costs a cache miss.
  `CREATE UNLOGGED TABLE conversation_affinity (
     id text PRIMARY KEY,
     deployment text NOT NULL,
     key_id text NOT NULL,
     expires_at bigint NOT NULL
   );
   CREATE INDEX conversation_affinity_expiry ON conversation_affinity (expires_at);`,
];

/** Runs the migrations the database has not had yet (once, whichever replica comes first). */
export async function migrate(sql: Sql): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${LOCKS.GATEWAY}, ${LOCKS.MIGRATE})`;
    await tx`CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)`;
    const [row] = await tx`SELECT version FROM schema_version`;
    const version = row ? Number(row.version) : 0;
    if (!row) await tx`INSERT INTO schema_version (version) VALUES (0)`;
    for (let v = version; v < MIGRATIONS.length; v++) await tx.unsafe(MIGRATIONS[v]);
    if (version < MIGRATIONS.length) {
      await tx`UPDATE schema_version SET version = ${MIGRATIONS.length}`;
    }
  });
}
