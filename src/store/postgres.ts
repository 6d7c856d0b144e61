/**
 * The PostgreSQL store, for several gateway replicas on one database (`store.url`). Every money
 * change is one statement (or one statement of data-modifying CTEs) that cannot overdraw: a hold
 * is taken by a conditional `UPDATE … WHERE balance - held >= amount`, and a settlement moves the
 * funds in the statement that settles its ledger row, only while the row is held — so it happens
 * once, whichever replica gets there first. Requests per minute are counted in the database for
 * the key as a whole (`switchyard_count_request`). Keys are cached per process and dropped when
 * any replica changes a key (`LISTEN/NOTIFY`, and a check every second should that connection
 * drop). Each serving process holds an advisory lock as the owner of its calls, so a replica
 * that dies has its held calls settled by another; background work runs on the replica holding
 * the leader lock. While the database cannot be reached, new calls are refused (`StoreUnavailable`,
 * a 503) and settlements are queued — in memory up to a bound, then in a local spool file — and
 * written once it is back (a settlement applies only to a held row, so replaying is exact).
 *
 * The driver (`npm:postgres`, pure JavaScript) is loaded only by this module, which `open.ts`
 * imports only when a PostgreSQL URL is configured.
 */
import postgres from "postgres";
import { KEYS_CHANNEL, LOCKS, MIGRATIONS } from "./postgres_schema.ts";
import {
  type Account,
  type AccountLimits,
  type Alert,
  type AlertOutcome,
  type Budget,
  type BudgetState,
  type BudgetWindows,
  type ChainBound,
  type Charge,
  type DayUsage,
  type HoldLimits,
  type KeyPatch,
  type KeyRecord,
  type LedgerEntry,
  type LimitedHold,
  type LimitRefusal,
  type LowBalance,
  type NewAlert,
  type NewHold,
  type NewKey,
  type PendingHold,
  type RateDecision,
  type SpentBudget,
  type Store,
  type StoredResponse,
  StoreUnavailable,
  type UpstreamObject,
  type UsageSummary,
  type VideoJob,
  type VideoOutcome,
} from "./store.ts";
import { log } from "../log.ts";
import { deadline } from "../http/deadlines.ts";
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
  accountOwner,
  budgetStates,
  chargedTokens,
  type HoldMark,
  keyLimitsOf,
  keyOwner,
  markOf,
  planHold,
  settledBudget,
  utcWindows,
} from "./limits.ts";
import {
  text,
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

type Sql = postgres.Sql<Record<string, never>>;

/** How a PostgreSQL store is opened. */
export interface PostgresOptions {
  /**
   * This process serves calls: it registers as an owner (its held calls are recovered only once
   * it dies), watches key changes, and may lead the background work.
   */
  owner?: boolean;
  /**
   * Where this store spools settlements while the database cannot be reached (a file path; one
   * per serving thread, as each thread writes its own).
   */
  spoolFile?: string;
  /**
   * The process's first store: at start it also writes what the other `settlements*.spool` files
   * beside `spoolFile` hold (left by threads of an earlier run).
   */
  replaySpools?: boolean;
  /** Connections in the pool (default 2). */
  poolSize?: number;
  /** Settlements kept in memory while the database is away (default 10,000); then the spool. */
  maxQueued?: number;
}

/** Keys kept in memory at most. */
const MAX_CACHED_KEYS = 100_000;
/** Settlements kept in memory while the database is away; later ones go to the spool file. */
const MAX_QUEUED = 10_000;
/** How often key changes are checked without a notification, and queued settlements retried. */
const TICK_MS = 1_000;
/** Seconds to wait for a connection before the database counts as unreachable. */
const CONNECT_TIMEOUT_S = 3;
/** How long a call's statement may take before the database counts as unreachable. */
const QUERY_TIMEOUT_MS = 5_000;
/** The same for reports (usage, ledger pages), which may read much. */
const REPORT_TIMEOUT_MS = 60_000;
/**
 * An owner not seen for this long, whose lock is free, has died (an owner says it is alive every
 * second; a process that stops cleanly says it is gone at once).
 */
const OWNER_STALE_MS = 5_000;
/** Unknown key ids remembered at most (until any key changes). */
const MAX_MISSING_KEYS = 10_000;

/**
 * `bigint` columns as numbers while they are safe integers, as bigints beyond (a lifetime spend
 * may pass 2^53; see `toTotal`). Sums are `numeric`, which the driver leaves as text.
 */
const BIGINT = {
  to: 20,
  from: [20],
  serialize: (value: number | bigint) => String(value),
  parse: (value: string) => toTotal(value),
};

/** Errors of a database that could not be reached, or does not serve now: nothing was done. */
const NOT_RUN = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "CONNECT_TIMEOUT",
  "CONNECTION_ENDED",
  "57P03", // cannot_connect_now
  "57014", // query_canceled (a statement timeout): rolled back
  "25006", // read_only_sql_transaction (a standby after a failover)
  "40001", // serialization_failure: rolled back
  "40P01", // deadlock_detected: rolled back
]);

/** Errors of a connection lost while a statement was on it: it may have run. */
const LOST = new Set([
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
]);

/**
 * Whether `error` means the database cannot serve now (rather than a statement it refused), and
 * whether the statement may have run all the same; null for any other error.
 */
function outage(error: unknown): { mayHaveRun: boolean } | null {
  if (error instanceof Deno.errors.ConnectionRefused) return { mayHaveRun: false };
  if (error instanceof Deno.errors.ConnectionReset) return { mayHaveRun: true };
  if (error instanceof Deno.errors.TimedOut) return { mayHaveRun: true };
  const code = String((error as { code?: unknown } | null)?.code ?? "");
  // Class 53: insufficient resources (too many connections, out of memory or disk).
  if (NOT_RUN.has(code) || code.startsWith("53")) return { mayHaveRun: false };
  if (LOST.has(code) || code.startsWith("08")) return { mayHaveRun: true };
  return null;
}

/**
 * A write waiting for the database: the settlement of a held entry, the release of a hold whose
 * answer was lost with the connection (by the token it was written with), or a submitted video
 * job (its upstream job exists and its funds are held: it must be recorded).
 */
type Deferred =
  | { id: number; charge: Charge | null; windows?: BudgetWindows }
  | { token: string }
  | { job: VideoJob };

/**
 * A connection pool; `session`: one connection kept for good (never recycled by the driver), as
 * the advisory locks taken on it last only as long as it does.
 */
function connect(url: string, max: number, session = false): Sql {
  return postgres(url, {
    max,
    // (An idle connection is kept by default: `idle_timeout` is 0.)
    ...(session ? { max_lifetime: null } : {}),
    onnotice: () => {},
    connect_timeout: CONNECT_TIMEOUT_S,
    // Reconnect within a second of the database coming back (the driver's own backoff reaches
    // 20 s after a few failed attempts).
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1),
    types: { bigint: BIGINT },
    connection: { application_name: "switchyard" },
  }) as unknown as Sql;
}

/**
 * Opens the store at `url`: connects, migrates (once, under an advisory lock, whichever replica
 * comes first), and for a serving process registers it as an owner and replays its spool.
 */
export async function openPostgresStore(
  url: string,
  options: PostgresOptions = {},
): Promise<PostgresStore> {
  const sql = connect(url, options.poolSize ?? 2);
  // Session state — the owner and leader locks — lives on a connection of its own.
  const session = connect(url, 1, true);
  try {
    await migrate(sql);
    const store = new PostgresStore(sql, session, options);
    if (options.owner) await store.serve();
    return store;
  } catch (error) {
    await Promise.all([sql.end({ timeout: 1 }), session.end({ timeout: 1 })]);
    if (outage(error)) throw new StoreUnavailable(describe(error));
    throw error;
  }
}

async function migrate(sql: Sql): Promise<void> {
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

/** A statement the database did not answer in time. */
class QueryTimeout extends Error {}

/** A connection failure as a log line can show it (never the URL or its password). */
function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return code ? `the database is unreachable (${String(code)})` : "the database is unreachable";
}

const ACCOUNT = "id, name, balance, spent, held, created_at, limits";
const KEY = `k.id, k.account_id, a.name AS account_name, k.hash, k.prefix, k.rpm, k.created_at,
  k.revoked_at, k.name, k.metadata, k.expires_at, k.disabled_at, k.last_used_at, k.limits,
  a.limits AS account_limits, k.previous_hash, k.previous_until`;
const BUDGET = "owner, period, amount, held, window_start, window_spent";
const ENTRY = `l.id, l.kind, l.status, a.name AS account, l.request_id, l.key_id, l.endpoint,
  l.model, l.provider, l.upstream_model, l.amount, l.units, l.estimated, l.note, l.created_at,
  l.settled_at`;
const ALERT = `id, type, owner, period, window_start, threshold, account_id, key_id, payload,
  status, attempts, next_attempt_at, last_attempt_at, last_error, created_at, delivered_at`;
/** A ledger row's UTC day, `YYYY-MM-DD`. */
const DAY = `to_char(to_timestamp(created_at / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD')`;

/** The database's clock, ms since the epoch (one clock for every replica). */
const NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";
/** When the database (its postmaster) last started, as seconds since the epoch. */
const EPOCH = "extract(epoch FROM pg_postmaster_start_time())::float8";

/** The PostgreSQL implementation of `Store`. */
export class PostgresStore implements Store {
  readonly #sql: Sql;
  readonly #session: Sql;
  readonly #options: PostgresOptions;
  readonly #keys = new Map<string, KeyRecord>();
  /** Bumped when keys change: a lookup begun before a change is not cached. */
  #keyGeneration = 0;
  #keyChanges = -1;
  /** This process's owner id (`owners.id`) when it serves calls. */
  #owner: number | null = null;
  #deferred: Deferred[] = [];
  #spooled = false;
  #down: string | null = null;
  #timer: ReturnType<typeof setInterval> | null = null;
  #ticking = false;
  /** The replay of queued writes under way (one at a time, see `#replay`). */
  #replaying: Promise<void> | null = null;
  /** Unknown key ids looked up since keys last changed (bounded; see `findKey`). */
  readonly #missing = new Set<string>();
  #unlisten: (() => Promise<void>) | null = null;

  constructor(sql: Sql, session: Sql, options: PostgresOptions) {
    this.#sql = sql;
    this.#session = session;
    this.#options = options;
  }

  /** Registers this process as an owner, watches key changes, replays spooled settlements. */
  async serve(): Promise<void> {
    const [row] = await this.#sql`INSERT INTO owners (pid, started_at)
      VALUES (${Deno.pid}, ${Date.now()}) RETURNING id`;
    this.#owner = Number(row.id);
    await this.#holdOwnerLock();
    if (this.#options.replaySpools) await this.#replayLeftovers();
    this.#spooled = this.#options.spoolFile !== undefined && exists(this.#options.spoolFile);
    if (this.#spooled) await this.#replay();
    const listening = await this.#sql.listen(
      KEYS_CHANNEL,
      () => this.#keysChanged(),
      // (Re)connected: a change may have been missed meanwhile.
      () => this.#keysChanged(),
    );
    this.#unlisten = listening.unlisten;
    const timer = setInterval(() => void this.#tick(), TICK_MS);
    Deno.unrefTimer(timer);
    this.#timer = timer;
    await this.#tick();
  }

  /** Takes (again, after a reconnect) this process's owner lock, and says it is alive. */
  async #holdOwnerLock(): Promise<void> {
    if (this.#owner === null) return;
    const [row] = await this.#run(this.#session`
      SELECT ${this.#heldOrTaken(LOCKS.OWNER, this.#owner)} AS held`);
    const sql = this.#sql;
    await this.#run(sql`UPDATE owners SET seen_at = ${sql.unsafe(NOW_MS)},
                        seen_epoch = ${sql.unsafe(EPOCH)} WHERE id = ${this.#owner}`);
    if (row.held !== true) {
      log("warn", "this process's owner lock is held elsewhere: retrying", { owner: this.#owner });
    }
  }

  /** SQL: true when the session holds the advisory lock (a, b), else an attempt to take it. */
  #heldOrTaken(a: number, b: number) {
    return this.#session`coalesce(
      (SELECT true FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()
         AND classid = ${a} AND objid = ${b} AND objsubid = 2 AND granted),
      pg_try_advisory_lock(${a}, ${b}))`;
  }

  /** Every second: key changes, the owner lock, queued settlements. */
  async #tick(): Promise<void> {
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      const [row] = await this.#run(this.#sql`SELECT n FROM key_changes`);
      const n = Number(row.n);
      if (n !== this.#keyChanges) {
        this.#keyChanges = n;
        this.#keysChanged();
      }
      await this.#holdOwnerLock();
      // In the background: a long replay must not hold up the key and owner checks.
      if (this.#deferred.length || this.#spooled) {
        this.#replay().catch((error) => {
          if (!(error instanceof StoreUnavailable)) {
            log("error", "writing queued settlements failed", { error: String(error) });
          }
        });
      }
    } catch (error) {
      if (!(error instanceof StoreUnavailable)) {
        log("error", "store housekeeping failed", { error: String(error) });
      }
    } finally {
      this.#ticking = false;
    }
  }

  #keysChanged(): void {
    this.#keyGeneration++;
    this.#keys.clear();
    this.#missing.clear();
  }

  /**
   * Runs a query; a database that cannot serve it (or does not answer within `timeoutMs`) marks
   * the store unreachable, and the query fails with `StoreUnavailable`.
   */
  async #run<T>(query: Promise<T>, timeoutMs = QUERY_TIMEOUT_MS): Promise<T> {
    // The shared deadline sweep (within 100 ms), not a timer per statement.
    let stop = () => {};
    const late = new Promise<never>((_, reject) => {
      stop = deadline(timeoutMs, () => reject(new QueryTimeout()));
    });
    try {
      const result = await Promise.race([query, late]);
      this.#down = null;
      return result;
    } catch (error) {
      const cause = error instanceof QueryTimeout ? { mayHaveRun: true } : outage(error);
      if (!cause) throw error;
      const reason = error instanceof QueryTimeout
        ? "the database did not answer in time"
        : describe(error);
      if (this.#down === null) log("error", "the store cannot be reached", { error: reason });
      this.#down = reason;
      throw new StoreUnavailable(reason, cause);
    } finally {
      stop();
    }
  }

  /** A `jsonb` parameter. */
  #json(value: unknown) {
    return this.#sql.json(value as postgres.JSONValue);
  }

  unreachable(): string | null {
    return this.#down;
  }

  async ensureAccount(name: string): Promise<Account> {
    // The no-op update returns the row when another caller made it first (a select would not see
    // a row committed during the statement).
    const [row] = await this.#run(this.#sql`
      INSERT INTO accounts (name, created_at) VALUES (${name}, ${Date.now()})
      ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
      RETURNING ${this.#sql.unsafe(ACCOUNT)}`);
    return toAccount(row);
  }

  async account(name: string): Promise<Account | undefined> {
    const [row] = await this.#run(
      this.#sql`SELECT ${this.#sql.unsafe(ACCOUNT)} FROM accounts WHERE name = ${name}`,
    );
    return row && toAccount(row);
  }

  async listAccounts(): Promise<Account[]> {
    const rows = await this.#run(
      this.#sql`SELECT ${this.#sql.unsafe(ACCOUNT)} FROM accounts ORDER BY name`,
      REPORT_TIMEOUT_MS,
    );
    return rows.map(toAccount);
  }

  async credit(accountId: number, amount: number, note: string): Promise<Account> {
    checkCredit(amount);
    const now = Date.now();
    // A credit may not take the balance past MAX_BALANCE, nor a debit below what calls in
    // flight hold (written so that nothing can overflow).
    const [row] = await this.#run(this.#sql`
      WITH a AS (
        UPDATE accounts SET balance = balance + ${amount}::bigint
        WHERE id = ${accountId} AND CASE WHEN ${amount}::bigint >= 0
                                         THEN balance <= ${MAX_BALANCE}::bigint - ${amount}::bigint
                                         ELSE balance + ${amount}::bigint >= held END
        RETURNING ${this.#sql.unsafe(ACCOUNT)}
      ), l AS (
        INSERT INTO ledger (kind, status, account_id, amount, note, created_at, settled_at)
        SELECT 'credit', 'settled', id, ${amount}::bigint, ${note}, ${now}, ${now} FROM a
      )
      SELECT * FROM a`);
    if (row) return toAccount(row);
    const [current] = await this.#run(
      this.#sql`SELECT ${this.#sql.unsafe(ACCOUNT)} FROM accounts WHERE id = ${accountId}`,
    );
    if (!current) throw new Error(`no account ${accountId}`);
    const account = toAccount(current);
    throw new CreditRefused(accountId, amount, account.balance, account.held);
  }

  async insertKey(key: NewKey): Promise<void> {
    const limits = key.limits ?? {};
    await this.#run(this.#sql.begin(async (tx) => {
      await tx`
        INSERT INTO keys (id, account_id, hash, prefix, rpm, created_at, name, metadata,
                          expires_at, limits)
        VALUES (${key.id}, ${key.accountId}, ${key.hash}, ${key.prefix}, ${key.rpm},
                ${key.createdAt}, ${key.name ?? null}, ${this.#jsonOrNull(key.metadata)},
                ${key.expiresAt ?? null}, ${this.#jsonOrNull(limits)})`;
      await this.#defineBudgets(tx, keyOwner(key.id), limits.budgets);
    }));
    this.#keysChanged();
  }

  /** A `jsonb` parameter, or null for an empty object. */
  #jsonOrNull(value: object | undefined) {
    return value && Object.keys(value).length ? this.#json(value) : null;
  }

  /** Makes an owner's budget rows the given ones (a removed budget's row goes, counts and all). */
  async #defineBudgets(tx: postgres.TransactionSql, owner: string, budgets?: Budget[]) {
    const kept = (budgets ?? []).map((b) => b.period);
    await tx`DELETE FROM budgets WHERE owner = ${owner}
             AND NOT (period = ANY(${kept as string[]}::text[]))`;
    for (const b of budgets ?? []) {
      await tx`INSERT INTO budgets (owner, period, amount) VALUES (${owner}, ${b.period}, ${b.amount})
               ON CONFLICT (owner, period) DO UPDATE SET amount = EXCLUDED.amount`;
    }
  }

  async updateKey(id: string, patch: KeyPatch): Promise<KeyRecord | undefined> {
    const updated = await this.#run(this.#sql.begin(async (tx) => {
      const [row] = await tx`
        SELECT ${tx.unsafe(KEY)} FROM keys k JOIN accounts a ON a.id = k.account_id
        WHERE k.id = ${id} AND k.revoked_at IS NULL FOR UPDATE OF k`;
      if (!row) return false;
      const key = toKey(row);
      const limits = patch.limits ?? key.limits;
      const disabledAt = patch.disabled === undefined
        ? key.disabledAt
        : patch.disabled
        ? key.disabledAt ?? Date.now()
        : null;
      await tx`
        UPDATE keys SET name = ${patch.name === undefined ? key.name : patch.name},
               metadata = ${this.#jsonOrNull(patch.metadata ?? key.metadata)},
               expires_at = ${patch.expiresAt === undefined ? key.expiresAt : patch.expiresAt},
               disabled_at = ${disabledAt}, rpm = ${patch.rpm === undefined ? key.rpm : patch.rpm},
               limits = ${this.#jsonOrNull(limits)}
        WHERE id = ${id}`;
      if (patch.limits) await this.#defineBudgets(tx, keyOwner(id), limits.budgets);
      return true;
    }));
    this.#keysChanged();
    if (!updated) return undefined;
    const [row] = await this.#run(this.#sql`
      SELECT ${this.#sql.unsafe(KEY)} FROM keys k JOIN accounts a ON a.id = k.account_id
      WHERE k.id = ${id}`);
    return row && toKey(row);
  }

  async rotateKey(
    id: string,
    hash: Uint8Array,
    prefix: string,
    previousUntil: number | null,
  ): Promise<boolean> {
    const result = await this.#run(this.#sql`
      UPDATE keys SET previous_hash = hash, previous_until = ${previousUntil}, hash = ${hash},
             prefix = ${prefix}
      WHERE id = ${id} AND revoked_at IS NULL`);
    this.#keysChanged();
    return result.count === 1;
  }

  async touchKeys(used: ReadonlyMap<string, number>): Promise<void> {
    if (!used.size) return;
    const ids = [...used.keys()];
    const times = ids.map((id) => used.get(id)!);
    await this.#run(this.#sql`
      UPDATE keys SET last_used_at = u.at
      FROM unnest(${ids}::text[], ${times}::bigint[]) AS u(id, at)
      WHERE keys.id = u.id AND coalesce(keys.last_used_at, 0) < u.at`);
  }

  async updateAccountLimits(name: string, limits: AccountLimits): Promise<Account | undefined> {
    const row = await this.#run(this.#sql.begin(async (tx) => {
      const [row] = await tx`
        UPDATE accounts SET limits = ${this.#jsonOrNull(limits)} WHERE name = ${name}
        RETURNING ${tx.unsafe(ACCOUNT)}`;
      if (row) await this.#defineBudgets(tx, accountOwner(Number(row.id)), limits.budgets);
      return row;
    }));
    this.#keysChanged();
    return row ? toAccount(row) : undefined;
  }

  async budgets(
    keyId: string | null,
    accountId: number,
    windows: BudgetWindows,
  ): Promise<BudgetState[]> {
    const rows = await this.#run(this.#sql`
      SELECT ${this.#sql.unsafe(BUDGET)} FROM budgets
      WHERE owner IN (${keyId === null ? "" : keyOwner(keyId)}, ${accountOwner(accountId)})`);
    return budgetStates(rows.map(toBudgetRow), windows);
  }

  /** From memory when cached (see the module's note on how changes drop the cache). */
  findKey(id: string): KeyRecord | undefined | Promise<KeyRecord | undefined> {
    const cached = this.#keys.get(id);
    if (cached) return cached;
    if (this.#missing.has(id)) return undefined;
    const generation = this.#keyGeneration;
    return this.#run(this.#sql`
      SELECT ${this.#sql.unsafe(KEY)} FROM keys k JOIN accounts a ON a.id = k.account_id
      WHERE k.id = ${id}`).then(([row]) => {
      if (!row) {
        // Remembered until any key changes, at most MAX_MISSING_KEYS (clients choose these ids).
        if (generation === this.#keyGeneration) {
          if (this.#missing.size >= MAX_MISSING_KEYS) this.#missing.clear();
          this.#missing.add(id);
        }
        return undefined;
      }
      const key = toKey(row);
      if (generation === this.#keyGeneration) {
        if (this.#keys.size >= MAX_CACHED_KEYS) this.#keys.clear();
        this.#keys.set(id, key);
      }
      return key;
    });
  }

  async listKeys(): Promise<KeyRecord[]> {
    const rows = await this.#run(
      this.#sql`
      SELECT ${this.#sql.unsafe(KEY)} FROM keys k JOIN accounts a ON a.id = k.account_id
      ORDER BY k.created_at, k.id`,
      REPORT_TIMEOUT_MS,
    );
    return rows.map(toKey);
  }

  async revokeKey(id: string): Promise<boolean> {
    const result = await this.#run(this.#sql`
      UPDATE keys SET revoked_at = ${Date.now()} WHERE id = ${id} AND revoked_at IS NULL`);
    this.#keysChanged();
    return result.count === 1;
  }

  async holdsOutstanding(): Promise<number> {
    const [row] = await this.#run(this.#sql`SELECT count(*) AS n FROM ledger
      WHERE status = 'held'`);
    return Number(row.n);
  }

  async available(accountId: number): Promise<number> {
    const [row] = await this.#run(this.#sql`
      SELECT least(balance - held, ${MAX_BALANCE}::bigint) AS available FROM accounts
      WHERE id = ${accountId}`);
    return row ? Number(row.available) : 0;
  }

  async reserve(h: NewHold): Promise<number | null> {
    checkHold(h);
    const token = crypto.randomUUID();
    const [row] = await this.#run(this.#sql`
      WITH a AS (
        UPDATE accounts SET held = held + ${h.reserve}::bigint
        WHERE id = ${h.accountId} AND (${h.reserve}::bigint = 0 OR balance - held >= ${h.reserve})
        RETURNING id
      )
      INSERT INTO ledger (kind, status, request_id, key_id, account_id, endpoint, model, provider,
                          upstream_model, reserved, amount, estimate, owner, token,
                          created_at)
      SELECT 'charge', 'held', ${h.requestId}, ${h.keyId}, id, ${h.endpoint}, ${h.model},
             ${h.provider}, ${h.upstreamModel ?? null}, ${h.reserve}, 0,
             ${this.#json(h.estimate)}, ${this.#owner}, ${token}, ${Date.now()}
      FROM a RETURNING id`).catch((error) => {
      // The hold may have been written before the connection went: the call is refused (503),
      // so whatever it holds is released once the database is back.
      if (error instanceof StoreUnavailable && error.mayHaveRun) this.#defer({ token });
      throw error;
    });
    return row ? Number(row.id) : null;
  }

  /**
   * A limited hold, in one transaction: the account's row, then its budget rows and the key's row
   * are locked — in the order a limited settlement takes them too, so the two never deadlock —
   * the decision is `planHold`'s (see `limits.ts`), and the hold is written with its mark.
   */
  async reserveLimited(h: NewHold, at: HoldLimits): Promise<LimitedHold | LimitRefusal> {
    checkHold(h);
    const token = crypto.randomUUID();
    return await this.#run(this.#sql.begin(async (tx) => {
      const [account] = await tx`
        SELECT balance, held FROM accounts WHERE id = ${h.accountId} FOR UPDATE`;
      if (!account) return { refused: "balance", needed: h.reserve } as const;
      const rows = (await tx`
        SELECT ${tx.unsafe(BUDGET)} FROM budgets
        WHERE owner IN (${keyOwner(h.keyId)}, ${accountOwner(h.accountId)})
        ORDER BY owner, period FOR UPDATE`).map(toBudgetRow);
      const [key] = await tx`
        SELECT limits, in_flight, tpm_minute, tpm_tokens FROM keys WHERE id = ${h.keyId}
        FOR UPDATE`;
      const available = Number(toTotal(account.balance)) - Number(toTotal(account.held));
      const plan = planHold(h.reserve, available, keyLimitsOf(key?.limits), rows, {
        inFlight: Number(key?.in_flight ?? 0),
        tpmMinute: Number(key?.tpm_minute ?? 0),
        tpmTokens: Number(key?.tpm_tokens ?? 0),
      }, at);
      if ("refused" in plan) return plan;
      await tx`UPDATE accounts SET held = held + ${h.reserve}::bigint WHERE id = ${h.accountId}`;
      const [row] = await tx`
        INSERT INTO ledger (kind, status, request_id, key_id, account_id, endpoint, model,
                            provider, upstream_model, reserved, amount, estimate, owner, token,
                            created_at, limits)
        VALUES ('charge', 'held', ${h.requestId}, ${h.keyId}, ${h.accountId}, ${h.endpoint},
                ${h.model}, ${h.provider}, ${h.upstreamModel ?? null}, ${h.reserve}, 0,
                ${this.#json(h.estimate)}, ${this.#owner}, ${token}, ${Date.now()},
                ${this.#json(plan.mark)})
        RETURNING id`;
      for (const b of plan.budgets) {
        await tx`UPDATE budgets SET held = ${b.held}, window_start = ${b.windowStart},
                        window_spent = ${b.windowSpent}
                 WHERE owner = ${b.owner} AND period = ${b.period}`;
      }
      if (key && (plan.mark.c || plan.mark.t !== undefined)) {
        const c = plan.counts;
        await tx`UPDATE keys SET in_flight = ${c.inFlight}, tpm_minute = ${c.tpmMinute},
                        tpm_tokens = ${c.tpmTokens}
                 WHERE id = ${h.keyId}`;
      }
      return { id: Number(row.id), ...(plan.tokens ? { tokens: plan.tokens } : {}) };
    })).catch((error) => {
      if (error instanceof StoreUnavailable && error.mayHaveRun) this.#defer({ token });
      throw error;
    });
  }

  /**
   * Settles now, or — the database being away — queues the settlement (resolving true: it will
   * be written once, when the database is back).
   */
  async settle(id: number, charge: Charge | null, windows?: BudgetWindows): Promise<boolean> {
    checkCharge(charge); // before anything is written, or queued
    const at = windows ?? utcWindows(Date.now());
    try {
      return await this.#settle(id, charge, at);
    } catch (error) {
      if (!(error instanceof StoreUnavailable)) throw error;
      this.#defer({ id, charge, windows: at });
      return true;
    }
  }

  /**
   * One statement for a hold that counted nothing; a limited hold (found when that statement
   * settles nothing) in a transaction of its own (see `#settleLimited`).
   */
  async #settle(id: number, charge: Charge | null, windows?: BudgetWindows): Promise<boolean> {
    if (await this.#settlePlain(id, charge)) return true;
    return await this.#run(
      this.#sql.begin((tx) =>
        this.#settleLimited(tx, id, charge, windows ?? utcWindows(Date.now()))
      ),
    );
  }

  /**
   * Settles a limited hold in `tx` (false when it is not held): the ledger row, the account's,
   * then its budget rows and its key's — the order `reserveLimited` locks them in.
   */
  async #settleLimited(
    tx: postgres.TransactionSql,
    id: number,
    charge: Charge | null,
    windows: BudgetWindows,
  ): Promise<boolean> {
    const now = Date.now();
    const [row] = charge
      ? await tx`
        UPDATE ledger SET status = 'settled', amount = ${charge.amount}::bigint,
                          units = ${this.#json(charge.units)}, estimated = ${charge.estimated},
                          settled_at = ${now}
        WHERE id = ${id} AND status = 'held' RETURNING account_id, reserved, key_id, limits`
      : await tx`
        DELETE FROM ledger WHERE id = ${id} AND status = 'held'
        RETURNING account_id, reserved, key_id, limits`;
    if (!row) return false;
    const amount = charge?.amount ?? 0;
    await tx`
      UPDATE accounts SET held = held - ${row.reserved}::bigint,
                          balance = balance - ${amount}::bigint, spent = spent + ${amount}::bigint
      WHERE id = ${row.account_id}`;
    const mark = markOf(row.limits);
    if (!mark) return true;
    await this.#giveBack(tx, mark, String(row.key_id), Number(row.reserved), charge, windows);
    return true;
  }

  /** Gives back what a limited hold counted (see `Store.settle`), in `tx`. */
  async #giveBack(
    tx: postgres.TransactionSql,
    mark: HoldMark,
    keyId: string,
    reserved: number,
    charge: Charge | null,
    windows: BudgetWindows,
  ): Promise<void> {
    for (const name of [...mark.b].sort()) {
      const at = name.lastIndexOf("|");
      const [found] = await tx`
        SELECT ${tx.unsafe(BUDGET)} FROM budgets
        WHERE owner = ${name.slice(0, at)} AND period = ${name.slice(at + 1)} FOR UPDATE`;
      if (!found) continue; // the budget was removed meanwhile
      const b = settledBudget(toBudgetRow(found), reserved, charge?.amount ?? 0, windows);
      await tx`UPDATE budgets SET held = ${b.held}, window_start = ${b.windowStart},
                      window_spent = ${b.windowSpent}
               WHERE owner = ${b.owner} AND period = ${b.period}`;
    }
    if (mark.c) {
      await tx`UPDATE keys SET in_flight = greatest(0, in_flight - 1) WHERE id = ${keyId}`;
    }
    if (mark.t !== undefined && mark.m !== undefined) {
      const used = charge ? chargedTokens(charge.units) : 0;
      await tx`UPDATE keys SET tpm_tokens = greatest(0, tpm_tokens + ${used - mark.t})
               WHERE id = ${keyId} AND tpm_minute = ${mark.m}`;
    }
  }

  /** The one-statement settlement of a hold that counted nothing; false when there is none. */
  async #settlePlain(id: number, charge: Charge | null): Promise<boolean> {
    const now = Date.now();
    const [row] = charge
      ? await this.#run(this.#sql`
        WITH l AS (
          UPDATE ledger SET status = 'settled', amount = ${charge.amount}::bigint,
                            units = ${this.#json(charge.units)},
                            estimated = ${charge.estimated}, settled_at = ${now}
          WHERE id = ${id} AND status = 'held' AND limits IS NULL RETURNING account_id, reserved
        ), a AS (
          UPDATE accounts SET held = accounts.held - l.reserved,
                              balance = accounts.balance - ${charge.amount}::bigint,
                              spent = accounts.spent + ${charge.amount}::bigint
          FROM l WHERE accounts.id = l.account_id RETURNING 1
        )
        SELECT count(*) AS n FROM a`)
      : await this.#run(this.#sql`
        WITH l AS (
          DELETE FROM ledger WHERE id = ${id} AND status = 'held' AND limits IS NULL
          RETURNING account_id, reserved
        ), a AS (
          UPDATE accounts SET held = accounts.held - l.reserved
          FROM l WHERE accounts.id = l.account_id RETURNING 1
        )
        SELECT count(*) AS n FROM a`);
    return Number(row.n) === 1;
  }

  #defer(settlement: Deferred): void {
    const bound = this.#options.maxQueued ?? MAX_QUEUED;
    if (this.#deferred.length < bound || !this.#options.spoolFile) {
      this.#deferred.push(settlement);
    } else {
      // Past the bound: to disk, so neither memory nor the charge is lost.
      Deno.writeTextFileSync(this.#options.spoolFile, JSON.stringify(settlement) + "\n", {
        append: true,
      });
      this.#spooled = true;
    }
    if (this.#deferred.length === 1) {
      log("warn", "settlements queued until the store is back", { queued: 1 });
    }
  }

  /** Writes the spool files an earlier run's threads left beside this store's own. */
  async #replayLeftovers(): Promise<void> {
    const file = this.#options.spoolFile;
    if (!file) return;
    const dir = file.includes("/") ? file.slice(0, file.lastIndexOf("/")) : ".";
    for (const entry of Deno.readDirSync(dir)) {
      if (!/^settlements.*\.spool$/.test(entry.name)) continue;
      const path = `${dir}/${entry.name}`;
      if (path === file) continue;
      await this.#replayFile(path);
    }
  }

  /** Writes what a spool file holds, then removes it. */
  async #replayFile(path: string): Promise<void> {
    const lines = Deno.readTextFileSync(path).split("\n").filter((line) => line);
    for (const line of lines) await this.#apply(JSON.parse(line) as Deferred);
    Deno.removeSync(path);
    if (lines.length) log("info", "spooled settlements written", { settlements: lines.length });
  }

  /**
   * Writes the queued and spooled writes (each once: only a held row is settled, a job inserted
   * once), one replay at a time: a call while one is under way gets that one.
   */
  #replay(): Promise<void> {
    return this.#replaying ??= this.#replayOnce().finally(() => this.#replaying = null);
  }

  async #replayOnce(): Promise<void> {
    while (this.#deferred.length) {
      await this.#apply(this.#deferred[0]);
      this.#deferred.shift();
    }
    const file = this.#options.spoolFile;
    if (!file || !this.#spooled) return;
    // The file is renamed before it is read, so that writes spooled meanwhile go to a new one.
    const taken = `${file}.replaying.spool`;
    if (exists(taken)) await this.#replayFile(taken); // a replay cut short earlier
    if (exists(file)) {
      Deno.renameSync(file, taken);
      await this.#replayFile(taken);
    }
    this.#spooled = exists(file);
  }

  async #apply(deferred: Deferred): Promise<void> {
    if ("id" in deferred) {
      await this.#settle(deferred.id, deferred.charge, deferred.windows);
      return;
    }
    if ("job" in deferred) {
      await this.#insertVideoJob(deferred.job);
      return;
    }
    const [row] = await this.#run(this.#sql`
      SELECT id FROM ledger WHERE token = ${deferred.token} AND status = 'held'`);
    if (row) await this.#settle(Number(row.id), null);
  }

  async pendingHolds(): Promise<PendingHold[]> {
    const rows = await this.#run(
      this.#sql`
      SELECT l.id, l.account_id, l.estimate, l.owner FROM ledger l
      WHERE l.status = 'held' AND l.kind = 'charge'
        AND NOT EXISTS (SELECT 1 FROM video_jobs v WHERE v.ledger_id = l.id
                          AND v.status = 'pending')
      ORDER BY l.id`,
      REPORT_TIMEOUT_MS,
    );
    const gone = new Map<number, boolean>();
    for (const row of rows) {
      if (row.owner === null || Number(row.owner) === this.#owner) continue;
      const owner = Number(row.owner);
      if (!gone.has(owner)) gone.set(owner, await this.#ownerGone(owner));
    }
    return rows
      .filter((row) => row.owner === null || gone.get(Number(row.owner)))
      .map((row) => ({
        id: Number(row.id),
        accountId: Number(row.account_id),
        estimate: row.estimate as PendingHold["estimate"],
      }));
  }

  /**
   * Whether owner `id`'s process is gone: not seen for `OWNER_STALE_MS` — since the database last
   * started, or, when it has not been seen since, on a database up for that long (after a restart
   * every owner needs a moment to take its lock again) — and its lock can be taken (it is given
   * back at once).
   */
  async #ownerGone(id: number): Promise<boolean> {
    const [seen] = await this.#run(this.#session`
      SELECT coalesce(seen_at, 0) < ${this.#session.unsafe(NOW_MS)} - ${OWNER_STALE_MS}
             AND (seen_epoch = ${this.#session.unsafe(EPOCH)}
                  OR pg_postmaster_start_time() < now() - ${OWNER_STALE_MS} * interval '1 ms')
             AS stale
      FROM (SELECT NULL) AS one LEFT JOIN owners ON owners.id = ${id}`);
    if (seen.stale !== true) return false;
    const [row] = await this.#run(this.#session`
      SELECT pg_try_advisory_lock(${LOCKS.OWNER}, ${id}) AS free`);
    if (!row.free) return false;
    await this.#run(this.#session`SELECT pg_advisory_unlock(${LOCKS.OWNER}, ${id})`);
    return true;
  }

  /**
   * Records the job; while the database is away, the record waits with the settlements (its
   * upstream job exists and its funds are held, so the client gets its id all the same).
   */
  async insertVideoJob(job: VideoJob): Promise<void> {
    checkVideoJob(job);
    try {
      await this.#insertVideoJob(job);
    } catch (error) {
      if (!(error instanceof StoreUnavailable)) throw error;
      this.#defer({ job });
    }
  }

  async #insertVideoJob(job: VideoJob): Promise<void> {
    await this.#run(this.#sql`
      INSERT INTO video_jobs (id, upstream_id, account_id, key_id, ledger_id, model, provider,
                              upstream_key, rate, held_seconds, status, created_at)
      VALUES (${job.id}, ${job.upstreamId}, ${job.accountId}, ${job.keyId}, ${job.ledgerId},
              ${job.model}, ${job.provider}, ${job.upstreamKey ?? null}, ${job.rate},
              ${job.heldSeconds}, 'pending', ${job.createdAt})
      ON CONFLICT (id) DO NOTHING`);
  }

  async videoJob(id: string): Promise<VideoJob | undefined> {
    const [row] = await this.#run(this.#sql`SELECT * FROM video_jobs WHERE id = ${id}`);
    return row && toVideoJob(row);
  }

  async pendingVideoJobs(limit: number): Promise<VideoJob[]> {
    const rows = await this.#run(this.#sql`
      SELECT * FROM video_jobs WHERE status = 'pending' ORDER BY created_at LIMIT ${limit}`);
    return rows.map(toVideoJob);
  }

  /** One statement: the job, its ledger row and the account's funds move together, once. */
  async finishVideoJob(
    id: string,
    outcome: VideoOutcome,
    windows?: BudgetWindows,
  ): Promise<boolean> {
    checkVideoOutcome(outcome);
    const done = outcome.status === "done";
    const amount = done ? outcome.charge?.amount ?? 0 : null;
    const now = Date.now();
    const [limited] = await this.#run(this.#sql`
      SELECT 1 FROM video_jobs j JOIN ledger l ON l.id = j.ledger_id
      WHERE j.id = ${id} AND j.status = 'pending' AND l.limits IS NOT NULL`);
    if (limited) {
      // A limited hold gives back what it counted, in one transaction with the job.
      return await this.#run(this.#sql.begin(async (tx) => {
        const [job] = await tx`
          UPDATE video_jobs SET status = ${outcome.status},
                 billed_seconds = ${done ? outcome.billedSeconds ?? 0 : null},
                 amount = ${amount}::bigint, result = ${outcome.result}, finished_at = ${now}
          WHERE id = ${id} AND status = 'pending' RETURNING ledger_id`;
        if (!job) return false;
        const charge = done ? outcome.charge! : null;
        await this.#settleLimited(tx, Number(job.ledger_id), charge, windows ?? utcWindows(now));
        return true;
      }));
    }
    const finish = this.#sql`
      UPDATE video_jobs SET status = ${outcome.status},
             billed_seconds = ${done ? outcome.billedSeconds ?? 0 : null},
             amount = ${amount}::bigint, result = ${outcome.result}, finished_at = ${now}
      WHERE id = ${id} AND status = 'pending' RETURNING ledger_id`;
    const [row] = done
      ? await this.#run(this.#sql`
        WITH j AS (${finish}), l AS (
          UPDATE ledger SET status = 'settled', amount = ${amount}::bigint,
                 units = ${this.#json(outcome.charge?.units ?? [])},
                 estimated = ${outcome.charge?.estimated ?? false}, settled_at = ${now}
          WHERE id IN (SELECT ledger_id FROM j) AND status = 'held'
          RETURNING account_id, reserved
        ), a AS (
          UPDATE accounts SET held = accounts.held - l.reserved,
                              balance = accounts.balance - ${amount}::bigint,
                              spent = accounts.spent + ${amount}::bigint
          FROM l WHERE accounts.id = l.account_id RETURNING 1
        )
        SELECT (SELECT count(*) FROM j) AS n, (SELECT count(*) FROM a) AS moved`)
      : await this.#run(this.#sql`
        WITH j AS (${finish}), l AS (
          DELETE FROM ledger WHERE id IN (SELECT ledger_id FROM j) AND status = 'held'
          RETURNING account_id, reserved
        ), a AS (
          UPDATE accounts SET held = accounts.held - l.reserved
          FROM l WHERE accounts.id = l.account_id RETURNING 1
        )
        SELECT (SELECT count(*) FROM j) AS n, (SELECT count(*) FROM a) AS moved`);
    return Number(row.n) === 1;
  }

  async recordObject(o: UpstreamObject): Promise<void> {
    checkTokens("an upstream object", o.contextTokens);
    await this.#run(this.#sql`
      INSERT INTO upstream_objects (id, account_id, kind, context_tokens, provider, created_at)
      VALUES (${o.id}, ${o.accountId}, ${o.kind}, ${o.contextTokens}, ${o.provider ?? null},
              ${Date.now()})
      ON CONFLICT (id) DO NOTHING`);
  }

  async upstreamObject(id: string): Promise<UpstreamObject | undefined> {
    const [row] = await this.#run(this.#sql`
      SELECT id, account_id, kind, context_tokens, provider FROM upstream_objects
      WHERE id = ${id}`);
    return row && toUpstreamObject(row);
  }

  async pruneObjects(before: number): Promise<number> {
    const result = await this.#run(
      this.#sql`
      DELETE FROM upstream_objects WHERE created_at < ${before}`,
      REPORT_TIMEOUT_MS,
    );
    return result.count;
  }

  async saveResponse(r: StoredResponse): Promise<void> {
    checkTokens("a conversation step", r.contextTokens);
    await this.#run(this.#sql`
      INSERT INTO stored_responses (id, account_id, previous_id, items, context_tokens,
                                    created_at)
      VALUES (${r.id}, ${r.accountId}, ${r.previousId}, ${r.items}, ${r.contextTokens},
              ${r.createdAt})
      ON CONFLICT (id) DO NOTHING`);
  }

  async responseChain(id: string, bound: ChainBound): Promise<StoredResponse[]> {
    const rows = await this.#run(this.#sql`
      WITH RECURSIVE chain (id, previous_id, n, bytes) AS (
        SELECT id, previous_id, 1, length(items)::bigint FROM stored_responses WHERE id = ${id}
        UNION ALL
        SELECT s.id, s.previous_id, c.n + 1, c.bytes + length(s.items)
        FROM chain c JOIN stored_responses s ON s.id = c.previous_id
        WHERE c.n < ${bound.steps} AND c.bytes <= ${bound.bytes}
      )
      SELECT s.id, s.account_id, s.previous_id, s.items, s.context_tokens, s.created_at
      FROM chain c JOIN stored_responses s ON s.id = c.id ORDER BY c.n`);
    return rows.map(toStoredResponse);
  }

  async pruneResponses(before: number): Promise<number> {
    const result = await this.#run(
      this.#sql`
      DELETE FROM stored_responses WHERE created_at < ${before}`,
      REPORT_TIMEOUT_MS,
    );
    return result.count;
  }

  async usage(accountId: number): Promise<UsageSummary> {
    const sql = this.#sql;
    const settled = sql`l.account_id = ${accountId} AND l.kind = 'charge'
      AND l.status = 'settled'`;
    const [accounts, requests, units, models, held] = await this.#run(
      Promise.all([
        sql`SELECT ${sql.unsafe(ACCOUNT)} FROM accounts WHERE id = ${accountId}`,
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
    // Built from entries: a client-chosen name (`__proto__`) stays an ordinary key.
    const byUnit: UsageSummary["byUnit"] = Object.fromEntries(
      units.map((
        row,
      ) => [String(row.unit), { quantity: toTotal(row.quantity), amount: toTotal(row.amount) }]),
    );
    // Built from entries: a client-chosen name (`__proto__`) stays an ordinary key.
    const byModel: UsageSummary["byModel"] = Object.fromEntries(
      models.map((
        row,
      ) => [String(row.model), { requests: Number(row.requests), amount: toTotal(row.amount) }]),
    );
    // Built from entries: a client-chosen name (`__proto__`) stays an ordinary key.
    const heldByUnit: UsageSummary["heldByUnit"] = Object.fromEntries(
      held.map((
        row,
      ) => [String(row.unit), { quantity: toTotal(row.quantity), amount: toTotal(row.amount) }]),
    );
    return {
      account: toAccount(accounts[0]),
      requests: Number(requests[0].n),
      byUnit,
      byModel,
      heldByUnit,
    };
  }

  async usageByDay(accountId: number, since: number): Promise<DayUsage[]> {
    const rows = await this.#run(
      this.#sql`
      SELECT ${this.#sql.unsafe(DAY)} AS day, count(*) AS requests, sum(amount) AS amount
      FROM ledger WHERE account_id = ${accountId} AND kind = 'charge' AND status = 'settled'
        AND created_at >= ${since}
      GROUP BY 1 ORDER BY 1`,
      REPORT_TIMEOUT_MS,
    );
    return rows.map(toDay);
  }

  async totalUsageByDay(since: number): Promise<DayUsage[]> {
    const rows = await this.#run(
      this.#sql`
      SELECT ${this.#sql.unsafe(DAY)} AS day, count(*) AS requests, sum(amount) AS amount
      FROM ledger WHERE kind = 'charge' AND status = 'settled' AND created_at >= ${since}
      GROUP BY 1 ORDER BY 1`,
      REPORT_TIMEOUT_MS,
    );
    return rows.map(toDay);
  }

  async ledgerPage(
    page: { accountId?: number; before?: number; limit: number },
  ): Promise<LedgerEntry[]> {
    const sql = this.#sql;
    const before = page.before ?? Number.MAX_SAFE_INTEGER;
    const account = page.accountId === undefined
      ? sql``
      : sql`AND l.account_id = ${page.accountId}`;
    const rows = await this.#run(
      sql`
      SELECT ${sql.unsafe(ENTRY)} FROM ledger l JOIN accounts a ON a.id = l.account_id
      WHERE l.id < ${before} ${account} ORDER BY l.id DESC LIMIT ${page.limit}`,
      REPORT_TIMEOUT_MS,
    );
    return rows.map((row) => ({
      id: Number(row.id),
      kind: String(row.kind) as LedgerEntry["kind"],
      status: String(row.status) as LedgerEntry["status"],
      account: String(row.account),
      requestId: text(row.request_id),
      keyId: text(row.key_id),
      endpoint: text(row.endpoint),
      model: text(row.model),
      provider: text(row.provider),
      upstreamModel: text(row.upstream_model),
      amount: toTotal(row.amount),
      units: row.units as LedgerEntry["units"],
      estimated: row.estimated === true,
      note: text(row.note),
      createdAt: Number(row.created_at),
      settledAt: row.settled_at === null ? null : Number(row.settled_at),
    }));
  }

  async raiseAlert(alert: NewAlert): Promise<number | null> {
    // Inserted only when absent (an id is drawn from the sequence only then); ON CONFLICT for
    // the race of two raising it at once.
    const [row] = await this.#run(this.#sql`
      INSERT INTO alerts (type, owner, period, window_start, threshold, account_id, key_id,
                          payload, status, next_attempt_at, created_at)
      SELECT ${alert.type}, ${alert.owner}, ${alert.period}, ${alert.windowStart},
             ${alert.threshold}, ${alert.accountId}, ${alert.keyId}, ${this.#json(alert.payload)},
             ${alert.status}, ${alert.status === "pending" ? alert.createdAt : null},
             ${alert.createdAt}
      WHERE NOT EXISTS (
        SELECT 1 FROM alerts WHERE type = ${alert.type} AND owner = ${alert.owner}
          AND period = ${alert.period} AND window_start = ${alert.windowStart}
          AND threshold = ${alert.threshold})
      ON CONFLICT DO NOTHING RETURNING id`);
    return row ? Number(row.id) : null;
  }

  async alertsDue(now: number, limit: number): Promise<Alert[]> {
    const rows = await this.#run(this.#sql`
      SELECT ${this.#sql.unsafe(ALERT)} FROM alerts
      WHERE status = 'pending' AND next_attempt_at <= ${now}
      ORDER BY next_attempt_at, id LIMIT ${limit}`);
    return rows.map(toAlert);
  }

  async markAlert(id: number, outcome: AlertOutcome): Promise<boolean> {
    const result = await this.#run(this.#sql`
      UPDATE alerts SET status = ${outcome.status}, attempts = attempts + 1,
        last_attempt_at = ${outcome.at},
        next_attempt_at = ${outcome.status === "pending" ? outcome.nextAttemptAt : null},
        last_error = ${outcome.status === "delivered" ? null : outcome.error},
        delivered_at = ${outcome.status === "delivered" ? outcome.at : null}
      WHERE id = ${id} AND status = 'pending'`);
    return result.count === 1;
  }

  async listAlerts(
    page: { limit: number; before?: number; accountId?: number },
  ): Promise<Alert[]> {
    const sql = this.#sql;
    const account = page.accountId === undefined ? sql`` : sql`AND account_id = ${page.accountId}`;
    const rows = await this.#run(
      sql`
      SELECT ${sql.unsafe(ALERT)} FROM alerts
      WHERE id < ${page.before ?? Number.MAX_SAFE_INTEGER} ${account}
      ORDER BY id DESC LIMIT ${page.limit}`,
      REPORT_TIMEOUT_MS,
    );
    return rows.map(toAlert);
  }

  async spentBudgets(
    percent: number,
    of?: { keyIds: string[]; accountIds: number[] },
  ): Promise<SpentBudget[]> {
    const sql = this.#sql;
    const owners = of
      ? sql`AND b.owner = ANY(${[
        ...of.keyIds.map(keyOwner),
        ...of.accountIds.map(accountOwner),
      ]}::text[])`
      : sql``;
    // A key's budget row names the key (`key:<id>`), an account's the account (`account:<id>`).
    const rows = await this.#run(
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
  }

  async lowBalances(amount: number, accountIds?: number[]): Promise<LowBalance[]> {
    const sql = this.#sql;
    const only = accountIds ? sql`AND a.id = ANY(${accountIds}::bigint[])` : sql``;
    // Since the account's last credit (or debit): a top-up starts a low balance afresh.
    const rows = await this.#run(
      sql`
      SELECT a.id, a.name, a.balance, a.held,
             coalesce((SELECT max(l.created_at) FROM ledger l
                       WHERE l.account_id = a.id AND l.kind = 'credit'), a.created_at) AS since
      FROM accounts a WHERE a.balance < ${amount} ${only}
      ORDER BY a.id`,
      REPORT_TIMEOUT_MS,
    );
    return rows.map(toLowBalance);
  }

  async expiringKeys(after: number, until: number): Promise<KeyRecord[]> {
    const rows = await this.#run(
      this.#sql`
      SELECT ${this.#sql.unsafe(KEY)} FROM keys k JOIN accounts a ON a.id = k.account_id
      WHERE k.revoked_at IS NULL AND k.disabled_at IS NULL AND k.expires_at IS NOT NULL
        AND k.expires_at > ${after} AND k.expires_at <= ${until}
      ORDER BY k.expires_at, k.id`,
      REPORT_TIMEOUT_MS,
    );
    return rows.map(toKey);
  }

  /** One statement per request: the key's window is shared by every replica. */
  async countRequest(keyId: string, limit: number): Promise<RateDecision> {
    const [row] = await this.#run(this.#sql`
      SELECT allowed, remaining, reset_ms FROM switchyard_count_request(${keyId}, ${limit})`);
    return {
      allowed: row.allowed === true,
      limit,
      remaining: Number(row.remaining),
      resetMs: Number(row.reset_ms),
    };
  }

  /** Whether this process holds (or just took) the leader lock; false when it cannot ask. */
  async leading(): Promise<boolean> {
    try {
      const [row] = await this.#run(
        this.#session`SELECT ${this.#heldOrTaken(LOCKS.GATEWAY, LOCKS.LEADER)} AS lead`,
      );
      return row.lead === true;
    } catch (error) {
      if (error instanceof StoreUnavailable) return false;
      throw error;
    }
  }

  async close(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    try {
      while (this.#deferred.length || this.#spooled) await this.#replay();
    } catch {
      // Still away: what is in memory goes to the spool file, for the next start.
      const file = this.#options.spoolFile;
      if (file && this.#deferred.length) {
        const lines = this.#deferred.map((d) => JSON.stringify(d) + "\n").join("");
        Deno.writeTextFileSync(file, lines, { append: true });
        this.#deferred = [];
      } else if (this.#deferred.length) {
        log("error", "settlements lost: no spool file and the store is away", {
          settlements: this.#deferred.length,
        });
      }
    }
    if (this.#owner !== null) {
      // Stopped cleanly: whatever it still holds may be recovered at once.
      await this.#run(this.#sql`UPDATE owners SET seen_at = 0 WHERE id = ${this.#owner}`)
        .catch(() => {});
    }
    await this.#unlisten?.().catch(() => {});
    await Promise.all([this.#sql.end({ timeout: 2 }), this.#session.end({ timeout: 2 })]);
  }
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}
