/**
 * The PostgreSQL store, for several gateway replicas on one database (`store.url`). Every money
 * change is one statement (or one statement of data-modifying CTEs) that cannot overdraw, or a
 * transaction that locks what it counts (see `postgres_holds.ts`). Requests per minute are counted
 * in the database for the key as a whole (`switchyard_count_request`). Keys are cached per process
 * and dropped when any replica changes a key (`LISTEN/NOTIFY`, and a check every second should
 * that connection drop). Each serving process holds an advisory lock as the owner of its calls, so
 * a replica that dies has its held calls settled by another; background work runs on the replica
 * holding the leader lock (`postgres_owners.ts`). While the database cannot be reached, new calls
 * are refused (`StoreUnavailable`, a 503) and settlements are queued — in memory up to a bound,
 * then in a local spool file — and written once it is back (`postgres_spool.ts`).
 *
 * This module opens the store, puts its parts together — accounts and keys, holds and video jobs,
 * reports, objects, threads, alerts, conversations' placements (`postgres_*.ts`) — and runs a
 * serving process's housekeeping. The driver (`npm:postgres`, pure JavaScript) is loaded only by
 * these modules, which `open.ts` imports only when a PostgreSQL URL is configured.
 */
import { log } from "../log.ts";
import { type RateDecision, type Store, StoreUnavailable } from "./store.ts";
import { KEYS_CHANNEL, migrate } from "./postgres_schema.ts";
import { connect, describe, outage, PgConnection } from "./postgres_connection.ts";
import { PgOwners } from "./postgres_owners.ts";
import { Spool } from "./postgres_spool.ts";
import { KeyCache, postgresAccounts } from "./postgres_accounts.ts";
import { postgresHolds } from "./postgres_holds.ts";
import { postgresReports } from "./postgres_reports.ts";
import { postgresObjects } from "./postgres_objects.ts";
import { postgresThreads } from "./postgres_threads.ts";
import { postgresAlerts } from "./postgres_alerts.ts";
import { postgresAffinity } from "./postgres_affinity.ts";

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

/** How often key changes are checked without a notification, and queued settlements retried. */
const TICK_MS = 1_000;

/**
 * Opens the store at `url`: connects, migrates (once, under an advisory lock, whichever replica
 * comes first), and for a serving process registers it as an owner and replays its spool.
 */
export async function openPostgresStore(
  url: string,
  options: PostgresOptions = {},
): Promise<Store> {
  const sql = connect(url, options.poolSize ?? 2);
  // Session state — the owner and leader locks — lives on a connection of its own.
  const session = connect(url, 1, true);
  try {
    await migrate(sql);
    const c = new PgConnection(sql, session);
    const owners = new PgOwners(c);
    const keys = new KeyCache();
    const spool = new Spool(options.spoolFile, options.maxQueued);
    // The holds first: they tell the spool how to write what it holds.
    const holds = postgresHolds(c, owners, spool);
    const serving = options.owner ? await serve(c, owners, keys, spool, options) : null;
    return {
      ...postgresAccounts(c, keys),
      ...holds,
      ...postgresReports(c),
      ...postgresObjects(c),
      ...postgresThreads(c),
      ...postgresAlerts(c),
      ...postgresAffinity(c),
      countRequest: (keyId, limit) => countRequest(c, keyId, limit),
      leading: () => owners.leading(),
      unreachable: () => c.unreachable(),
      async close(): Promise<void> {
        await serving?.stop();
        await spool.close();
        await owners.stopped();
        await serving?.unlisten();
        await Promise.all([sql.end({ timeout: 2 }), session.end({ timeout: 2 })]);
      },
    };
  } catch (error) {
    await Promise.all([sql.end({ timeout: 1 }), session.end({ timeout: 1 })]);
    if (outage(error)) throw new StoreUnavailable(describe(error));
    throw error;
  }
}

/**
 * A serving process's side of the store: registers it as an owner, replays what earlier runs
 * spooled, and — until stopped — watches key changes (announced, and counted every second) and
 * keeps its owner lock and the queued writes going every second.
 */
async function serve(
  c: PgConnection,
  owners: PgOwners,
  keys: KeyCache,
  spool: Spool,
  options: PostgresOptions,
) {
  await owners.register();
  await spool.start(options.replaySpools ?? false);
  const listening = await c.sql.listen(
    KEYS_CHANNEL,
    () => keys.changed(),
    // (Re)connected: a change may have been missed meanwhile.
    () => keys.changed(),
  );
  let ticking = false;
  /** Every second: key changes, the owner lock, queued settlements. */
  const tick = async () => {
    if (ticking) return;
    ticking = true;
    try {
      const [row] = await c.run(c.sql`SELECT n FROM key_changes`);
      keys.counted(Number(row.n));
      await owners.holdLock();
      // In the background: a long replay must not hold up the key and owner checks.
      if (spool.waiting) {
        spool.replay().catch((error) => {
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
      ticking = false;
    }
  };
  const timer = setInterval(() => void tick(), TICK_MS);
  Deno.unrefTimer(timer);
  await tick();
  return {
    stop: () => clearInterval(timer),
    unlisten: () => listening.unlisten().catch(() => {}),
  };
}

/** One statement per request: the key's window is shared by every replica. */
async function countRequest(c: PgConnection, keyId: string, limit: number): Promise<RateDecision> {
  const [row] = await c.run(c.sql`
    SELECT allowed, remaining, reset_ms FROM switchyard_count_request(${keyId}, ${limit})`);
  return {
    allowed: row.allowed === true,
    limit,
    remaining: Number(row.remaining),
    resetMs: Number(row.reset_ms),
  };
}
