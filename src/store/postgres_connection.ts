/**
 * The PostgreSQL database as the store's parts share it: a pool of connections and a session of
 * its own (for the advisory locks that last as long as it does), every statement under a deadline,
 * and the tell between a statement the database refused and a database that cannot serve now —
 * which makes the store unreachable until a statement succeeds again (`StoreUnavailable`, a 503).
 */
import postgres from "postgres";
import { StoreUnavailable } from "./store.ts";
import { toTotal } from "./amounts.ts";
import { log } from "../log.ts";
import { deadline } from "../http/deadlines.ts";

/** A pool (or the session) of the driver. */
export type Sql = postgres.Sql<Record<string, never>>;
/** A transaction of the driver. */
export type Tx = postgres.TransactionSql;

/** Seconds to wait for a connection before the database counts as unreachable. */
const CONNECT_TIMEOUT_S = 3;
/** How long a call's statement may take before the database counts as unreachable. */
const QUERY_TIMEOUT_MS = 5_000;
/** The same for reports (usage, ledger pages), which may read much. */
export const REPORT_TIMEOUT_MS = 60_000;

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
export function outage(error: unknown): { mayHaveRun: boolean } | null {
  if (error instanceof Deno.errors.ConnectionRefused) return { mayHaveRun: false };
  if (error instanceof Deno.errors.ConnectionReset) return { mayHaveRun: true };
  if (error instanceof Deno.errors.TimedOut) return { mayHaveRun: true };
  const code = String((error as { code?: unknown } | null)?.code ?? "");
  // Class 53: insufficient resources (too many connections, out of memory or disk).
  if (NOT_RUN.has(code) || code.startsWith("53")) return { mayHaveRun: false };
  if (LOST.has(code) || code.startsWith("08")) return { mayHaveRun: true };
  return null;
}

/** A connection failure as a log line can show it (never the URL or its password). */
export function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return code ? `the database is unreachable (${String(code)})` : "the database is unreachable";
}

/**
 * A connection pool; `session`: one connection kept for good (never recycled by the driver), as
 * the advisory locks taken on it last only as long as it does.
 */
export function connect(url: string, max: number, session = false): Sql {
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

/** A statement the database did not answer in time. */
class QueryTimeout extends Error {}

/** The pool and the session, and whether the database can be reached (see the module's note). */
export class PgConnection {
  readonly sql: Sql;
  /** The connection session state (the owner and leader locks) lives on. */
  readonly session: Sql;
  #down: string | null = null;

  constructor(sql: Sql, session: Sql) {
    this.sql = sql;
    this.session = session;
  }

  /**
   * Runs a query; a database that cannot serve it (or does not answer within `timeoutMs`) marks
   * the store unreachable, and the query fails with `StoreUnavailable`.
   */
  async run<T>(query: Promise<T>, timeoutMs = QUERY_TIMEOUT_MS): Promise<T> {
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
      const cause = error instanceof QueryTimeout
        ? { mayHaveRun: true, late: query.then(() => true, () => false) }
        : outage(error);
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

  /** Why the database cannot be reached now (the last statement's outage), or null. */
  unreachable(): string | null {
    return this.#down;
  }

  /**
   * Runs a statement built as text (with `$1`… parameters, see `chains.ts`), prepared as the
   * tagged ones are.
   */
  query(text: string, parameters: (string | number | null)[]): Promise<Record<string, unknown>[]> {
    return this.run(this.sql.unsafe(text, parameters, { prepare: true }));
  }

  /**
   * Forgets the rows of `table` whose `column` (ms since epoch) is before `before`, under the
   * reports' deadline (a prune may delete much); returns how many.
   */
  async prune(table: string, column: string, before: number): Promise<number> {
    const { sql } = this;
    const result = await this.run(
      sql`DELETE FROM ${sql.unsafe(table)} WHERE ${sql.unsafe(column)} < ${before}`,
      REPORT_TIMEOUT_MS,
    );
    return result.count;
  }

  /** A `jsonb` parameter. */
  json(value: unknown) {
    return this.sql.json(value as postgres.JSONValue);
  }

  /** A `jsonb` parameter, or null for an empty object. */
  jsonOrNull(value: object | undefined) {
    return value && Object.keys(value).length ? this.json(value) : null;
  }
}
