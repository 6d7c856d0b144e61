/**
 * What the two stores' schemas create alike, written once: the parts of their migrations whose
 * tables and columns are the same in SQLite and PostgreSQL but for the names of their types. Each
 * part belongs to a migration that has shipped, so its text never changes (the digests of every
 * migration are pinned by `tests/unit/store/schema_shared_test.ts`); a new table both stores need
 * is a new part.
 */

/** A dialect's names for the types the shared parts use. */
export interface ColumnTypes {
  /** An id the database numbers (the primary key it is declared with). */
  readonly serial: string;
  /** A count (a 32-bit integer in PostgreSQL). */
  readonly integer: string;
  /** An amount (nanoUSD), a time (ms since the epoch) or a token count. */
  readonly bigint: string;
  readonly text: string;
  /** A JSON document. */
  readonly json: string;
  readonly bytes: string;
  /** What follows the `)` of a table keyed by its primary key (SQLite: no rowid of its own). */
  readonly keyed: string;
}

/** PostgreSQL's types. */
export const POSTGRES_TYPES: ColumnTypes = {
  serial: "bigserial",
  integer: "integer",
  bigint: "bigint",
  text: "text",
  json: "jsonb",
  bytes: "bytea",
  keyed: "",
};

/** SQLite's types (its type affinities: amounts and times are INTEGER, JSON is TEXT). */
export const SQLITE_TYPES: ColumnTypes = {
  serial: "INTEGER",
  integer: "INTEGER",
  bigint: "INTEGER",
  text: "TEXT",
  json: "TEXT",
  bytes: "BLOB",
  keyed: " WITHOUT ROWID",
};

/**
 * Keys a team can hand out (the start of the migration of that name): the keys' new columns, the
 * limits of accounts and of each limited hold, and the budgets' table. What follows it — the key
 * change trigger, watching the new columns — is each dialect's own.
 */
export function teamKeys(t: ColumnTypes): string {
  return `ALTER TABLE keys ADD COLUMN name ${t.text};
   ALTER TABLE keys ADD COLUMN metadata ${t.json};
   ALTER TABLE keys ADD COLUMN expires_at ${t.bigint};
   ALTER TABLE keys ADD COLUMN disabled_at ${t.bigint};
   ALTER TABLE keys ADD COLUMN last_used_at ${t.bigint};
   ALTER TABLE keys ADD COLUMN limits ${t.json};
   ALTER TABLE keys ADD COLUMN previous_hash ${t.bytes};
   ALTER TABLE keys ADD COLUMN previous_until ${t.bigint};
   ALTER TABLE keys ADD COLUMN in_flight ${t.integer} NOT NULL DEFAULT 0;
   ALTER TABLE keys ADD COLUMN tpm_minute ${t.bigint} NOT NULL DEFAULT 0;
   ALTER TABLE keys ADD COLUMN tpm_tokens ${t.bigint} NOT NULL DEFAULT 0;
   ALTER TABLE accounts ADD COLUMN limits ${t.json};
   ALTER TABLE ledger ADD COLUMN limits ${t.json};
   CREATE TABLE budgets (
     owner ${t.text} NOT NULL,
     period ${t.text} NOT NULL,
     amount ${t.bigint} NOT NULL,
     held ${t.bigint} NOT NULL DEFAULT 0,
     window_start ${t.bigint} NOT NULL DEFAULT 0,
     window_spent ${t.bigint} NOT NULL DEFAULT 0,
     PRIMARY KEY (owner, period)
   )${t.keyed};`;
}

/**
 * The alerts migration, whole: what each alert is about is unique, so the insert that raises one
 * decides (across processes and replicas) that it is raised once; its delivery state is kept with
 * it. Keys about to expire are found by an index of their own.
 */
export function alerts(t: ColumnTypes): string {
  return `CREATE TABLE alerts (
     id ${t.serial} PRIMARY KEY,
     type ${t.text} NOT NULL,
     owner ${t.text} NOT NULL,
     period ${t.text} NOT NULL,
     window_start ${t.bigint} NOT NULL,
     threshold ${t.bigint} NOT NULL,
     account_id ${t.bigint} NOT NULL REFERENCES accounts (id),
     key_id ${t.text},
     payload ${t.json} NOT NULL,
     status ${t.text} NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'unsent')),
     attempts ${t.integer} NOT NULL DEFAULT 0,
     next_attempt_at ${t.bigint},
     last_attempt_at ${t.bigint},
     last_error ${t.text},
     created_at ${t.bigint} NOT NULL,
     delivered_at ${t.bigint},
     UNIQUE (type, owner, period, window_start, threshold)
   );
   CREATE INDEX alerts_due ON alerts (next_attempt_at) WHERE status = 'pending';
   CREATE INDEX alerts_account ON alerts (account_id, id);
   CREATE INDEX keys_expiry ON keys (expires_at)
     WHERE expires_at IS NOT NULL AND revoked_at IS NULL;`;
}
