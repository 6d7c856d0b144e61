/**
 * Opens the configured store: the SQLite file (the default), or PostgreSQL when `store.url` is
 * set — whose module, and its driver, are loaded only then.
 */
import { type Config, storeDir } from "../config/load.ts";
import { openSqliteStore } from "./sqlite.ts";
import type { Store } from "./store.ts";

/** How a process uses the store (see `SqliteOptions`, `PostgresOptions`). */
export interface OpenOptions {
  /** This process serves calls (it owns the holds it writes). */
  owner?: boolean;
  /** SQLite: the write lock the process's threads share. */
  writeLock?: SharedArrayBuffer;
  /** The serving thread's number (absent: the main thread). */
  thread?: number;
  /** SQLite: told how long each write transaction took (seconds), for the metrics. */
  onCommit?: (seconds: number) => void;
}

/** The store `config` names, opened (and migrated). */
export async function openStore(
  config: Pick<Config, "dbPath" | "dbUrl" | "dbPoolSize">,
  options: OpenOptions = {},
): Promise<Store> {
  if (config.dbUrl === null) return openSqliteStore(config.dbPath, options);
  const { openPostgresStore } = await import("./postgres.ts");
  const dir = storeDir(config.dbPath);
  await Deno.mkdir(dir, { recursive: true });
  const own = options.thread === undefined ? "" : `-${options.thread}`;
  return await openPostgresStore(config.dbUrl, {
    owner: options.owner,
    poolSize: config.dbPoolSize,
    spoolFile: `${dir}/settlements${own}.spool`,
    replaySpools: options.owner && options.thread === undefined,
  });
}

/** The store as logs and `config check` name it: the file, or the database without credentials. */
export function storeName(config: Pick<Config, "dbPath" | "dbUrl">): string {
  if (config.dbUrl === null) return config.dbPath;
  try {
    const url = new URL(config.dbUrl);
    return `postgres://${url.host}${url.pathname}`;
  } catch {
    return "postgres";
  }
}
