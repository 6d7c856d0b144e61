/**
 * The embedded store: one SQLite file through `node:sqlite`, in WAL mode so the CLI can write
 * while the server runs. Every money change commits in one transaction with its ledger entry;
 * hot-path writes are group-committed: queued during an event-loop turn and written at its end in
 * one short transaction, under the process's write lock when several threads share the file
 * (see `sqlite_connection.ts`). The store's parts, by job: accounts and keys
 * (`sqlite_accounts.ts`), holds and video jobs (`sqlite_holds.ts`), reports from the ledger
 * (`sqlite_reports.ts`), upstream objects and kept conversations (`sqlite_objects.ts`), Messages
 * threads (`sqlite_threads.ts`), alerts (`sqlite_alerts.ts`); the schema is `sqlite_schema.ts`.
 */
import { DatabaseSync } from "node:sqlite";
import { OwnerLock } from "./owners.ts";
import { WriteLock } from "./write_lock.ts";
import type { KeyRecord, Serving, Store } from "./store.ts";
import { migrate } from "./sqlite_schema.ts";
import { FALLBACK_CHECKPOINT_PAGES, SqliteConnection } from "./sqlite_connection.ts";
import { sqliteAccounts } from "./sqlite_accounts.ts";
import { sqliteHolds } from "./sqlite_holds.ts";
import { sqliteReports } from "./sqlite_reports.ts";
import { sqliteObjects } from "./sqlite_objects.ts";
import { sqliteThreads } from "./sqlite_threads.ts";
import { sqliteAlerts } from "./sqlite_alerts.ts";

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

/**
 * The SQLite implementation of `Store`: keys are found at once (from memory, or a read of the
 * file), preparing for serving is always possible, and closing is synchronous.
 */
export type SqliteStore = Omit<Store, "findKey" | "prepareForServing" | "close"> & {
  findKey(id: string): KeyRecord | undefined;
  prepareForServing(serving: Serving): SharedArrayBuffer | undefined;
  close(): void;
};

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
  // SQLite's default 2 MiB of page cache, set here so that no build changes it. Billed calls append
  // to the ledger, so under load the cache fills with pages just written, seldom read again: a
  // larger one only holds memory (8 MiB took 8–10 MiB more peak RSS under the benchmark's load,
  // 32 MiB 24–38 MiB, and neither was faster).
  db.exec("PRAGMA cache_size = -2048;");
  db.exec("PRAGMA foreign_keys = ON;");
  migrate(db);
  if (options.writeLock) db.exec(`PRAGMA wal_autocheckpoint = ${FALLBACK_CHECKPOINT_PAGES};`);
  const lock = path === ":memory:" ? null : new OwnerLock(`${dir}/owners`);
  const writeLock = options.writeLock ? new WriteLock(options.writeLock) : null;
  const owner = options.owner && lock ? lock.acquire() : null;
  const c = new SqliteConnection(db, path, owner, lock, writeLock, options.onCommit);
  return {
    ...sqliteAccounts(c),
    ...sqliteHolds(c),
    ...sqliteReports(c),
    ...sqliteObjects(c),
    ...sqliteThreads(c),
    ...sqliteAlerts(c),
    prepareForServing: (serving) => c.prepareForServing(serving),
    close: () => c.close(),
  };
}
