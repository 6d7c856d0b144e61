/**
 * The SQLite file as the store's parts share it: one connection, its writes — group-committed
 * (queued during an event-loop turn and written at its end in one short transaction) or in a
 * transaction of their own — under the process's write lock when several threads share the file,
 * the checkpoints of a serving process (its checkpointer thread, or a timer of its one thread), and
 * the owner lock its held calls are marked with.
 */
import { setImmediate } from "node:timers";
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { Row } from "./rows.ts";
import type { OwnerLock } from "./owners.ts";
import type { Serving } from "./store.ts";
import { WriteLock } from "./write_lock.ts";
import type { CheckpointerStart } from "./checkpointer.ts";

/**
 * WAL pages after which a connection checkpoints inside its own commit when another thread does
 * the checkpoints (a safety net should that thread stop): about 400 MB.
 */
export const FALLBACK_CHECKPOINT_PAGES = 100_000;

/** How often a serving process checkpoints the log (its checkpointer thread or its one thread). */
const CHECKPOINT_MS = 100;

/**
 * The checkpointer thread's module. `deno compile` embeds a Web Worker's module only when it is
 * passed with `--include` (the `compile` task does).
 */
const CHECKPOINTER = new URL("./checkpointer.ts", import.meta.url);

/** A write waiting for the turn's flush, and who waits for its result. */
interface Queued {
  run: () => unknown;
  done: PromiseWithResolvers<unknown>;
}

/** The connection and what comes with it (see the module's note). */
export class SqliteConnection {
  readonly db: DatabaseSync;
  readonly path: string;
  /** This process's owner id when it serves calls (its holds are marked with it). */
  readonly owner: string | null;
  /** The owner locks of the file's serving processes (none for `:memory:`). */
  readonly locks: OwnerLock | null;
  /** This event-loop turn's writes, flushed in one transaction when the turn ends. */
  #queued: Queued[] = [];
  /** Held around every write transaction when threads share the file (else null). */
  #writeLock: WriteLock | null;
  /** The checkpointer thread this store started (see `prepareForServing`). */
  #checkpointer: Worker | null = null;
  /** The timer of the checkpoints this thread runs itself, when it serves alone. */
  #checkpoints: ReturnType<typeof setInterval> | null = null;
  #checkpointsFailed?: (message: string) => void;
  readonly #onCommit: ((seconds: number) => void) | undefined;
  /** Prepared once: the group commit runs these on every write of the hot path. */
  readonly #begin: StatementSync;
  readonly #commit: StatementSync;
  readonly #savepoint: StatementSync;
  readonly #release: StatementSync;
  readonly #rollbackTo: StatementSync;

  constructor(
    db: DatabaseSync,
    path: string,
    owner: string | null,
    locks: OwnerLock | null,
    writeLock: WriteLock | null,
    onCommit?: (seconds: number) => void,
  ) {
    this.db = db;
    this.path = path;
    this.owner = owner;
    this.locks = locks;
    this.#writeLock = writeLock;
    this.#onCommit = onCommit;
    this.#begin = db.prepare(`BEGIN IMMEDIATE`);
    this.#commit = db.prepare(`COMMIT`);
    this.#savepoint = db.prepare(`SAVEPOINT op`);
    this.#release = db.prepare(`RELEASE op`);
    this.#rollbackTo = db.prepare(`ROLLBACK TO op`);
  }

  /**
   * Prepares a part's statements; `money` names those that read amounts or sums of them, which
   * are read as bigints, then as numbers where they are safe (`toTotal`): a balance, a lifetime
   * spend or a sum past 2^53 reads exactly (as a number, node:sqlite would throw).
   */
  prepare<K extends string>(
    statements: Record<K, string>,
    money: readonly NoInfer<K>[] = [],
  ): Record<K, StatementSync> {
    const prepared = {} as Record<K, StatementSync>;
    for (const name in statements) prepared[name] = this.db.prepare(statements[name]);
    for (const name of money) prepared[name].setReadBigInts(true);
    return prepared;
  }

  /**
   * Prepares the file for serving (see `Store.prepareForServing`), so that no commit on the request
   * path copies the log back into the file: commits do that only past `FALLBACK_CHECKPOINT_PAGES`.
   * - Shared by serving threads: the write lock is created and this store takes it from then on,
   *   and a checkpointer thread starts (see `checkpointer.ts`; stopped by `close`). Returns the
   *   lock for the threads' stores.
   * - Served by this one thread: this thread checkpoints the log itself, between event-loop turns,
   *   every `CHECKPOINT_MS` (passive: a reader from another process is never waited for). A
   *   thread of its own would hold a whole JavaScript runtime (about 12 MiB of RSS) for this.
   *   With no other connection reading, each checkpoint copies the whole log and the next commit
   *   starts it over.
   */
  prepareForServing(serving: Serving): SharedArrayBuffer | undefined {
    this.#checkpointsFailed = serving.onError;
    this.db.exec(`PRAGMA wal_autocheckpoint = ${FALLBACK_CHECKPOINT_PAGES};`);
    if (!serving.shared) {
      if (this.#checkpoints === null) this.#checkpoints = this.#checkpointHere();
      return this.#writeLock?.buffer;
    }
    if (this.#writeLock && this.#checkpointer) return this.#writeLock.buffer;
    this.#writeLock ??= new WriteLock();
    const checkpointer = new Worker(CHECKPOINTER.href, { type: "module" });
    checkpointer.onerror = (event) => {
      // The connections' own checkpoints (past FALLBACK_CHECKPOINT_PAGES) take over.
      event.preventDefault();
      this.#checkpointsFailed?.(event.message);
    };
    checkpointer.postMessage(
      {
        path: this.path,
        writeLock: this.#writeLock.buffer,
        everyMs: CHECKPOINT_MS,
      } satisfies CheckpointerStart,
    );
    this.#checkpointer = checkpointer;
    return this.#writeLock.buffer;
  }

  /**
   * This thread's checkpoints. A checkpoint that another connection keeps from finishing says so
   * in its row (`busy`), not by throwing: one that throws failed (I/O, a transaction left open),
   * and is reported once until a checkpoint succeeds again. Each tick tries again meanwhile.
   */
  #checkpointHere(): ReturnType<typeof setInterval> {
    const passive = this.db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
    let failing = false;
    const timer = setInterval(() => {
      try {
        passive.get();
        failing = false;
      } catch (error) {
        if (!failing) this.#checkpointsFailed?.(String(error));
        failing = true;
      }
    }, CHECKPOINT_MS);
    Deno.unrefTimer(timer);
    return timer;
  }

  /** Runs `work` in a transaction of its own, now (after the turn's queued writes). */
  tx<T>(work: () => T): T {
    this.flush(); // a direct transaction never nests in the turn's
    this.#writeLock?.acquire();
    try {
      this.db.exec("BEGIN IMMEDIATE");
      try {
        const result = work();
        this.db.exec("COMMIT");
        return result;
      } catch (error) {
        this.db.exec("ROLLBACK");
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
  write<T>(op: () => T, atomic = false): Promise<T> {
    if (!this.#queued.length) {
      // After this turn's I/O callbacks, not a timer tick later (setTimeout(0) waits ≥ 1 ms).
      setImmediate(() => this.flush());
    }
    const done = Promise.withResolvers<unknown>();
    done.promise.catch(() => {}); // observed by whoever awaits it
    const run = atomic ? () => this.#atomically(op) : op;
    this.#queued.push({ run, done });
    return done.promise as Promise<T>;
  }

  #atomically<T>(op: () => T): T {
    this.#savepoint.run();
    try {
      const result = op();
      this.#release.run();
      return result;
    } catch (error) {
      this.#rollbackTo.run();
      this.#release.run();
      throw error;
    }
  }

  /** Writes the queued ops in one transaction (under the write lock) and answers their callers. */
  flush(): void {
    const queued = this.#queued;
    if (!queued.length) return;
    this.#queued = [];
    const outcomes: { ok: boolean; value: unknown }[] = [];
    this.#writeLock?.acquire();
    const began = performance.now();
    try {
      this.#begin.run();
      for (const { run } of queued) {
        try {
          outcomes.push({ ok: true, value: run() });
        } catch (error) {
          // Some errors (disk full, I/O) roll the whole transaction back: then none of the
          // turn's writes happened, and the rest must not run outside a transaction.
          if (!this.db.isTransaction) throw error;
          outcomes.push({ ok: false, value: error });
        }
      }
      this.#commit.run();
      this.#onCommit?.((performance.now() - began) / 1000);
    } catch (error) {
      try {
        this.db.exec("ROLLBACK");
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

  /** Writes what is queued, stops the checkpointer, closes the file and gives up the owner lock. */
  close(): void {
    this.flush();
    this.#checkpointer?.terminate();
    if (this.#checkpoints !== null) clearInterval(this.#checkpoints);
    this.db.close();
    this.locks?.release();
  }
}

/**
 * What a synchronous read or write gives, as the interface's promise (a throw: a rejection). A
 * write's own promise is returned as it is (`Promise.resolve` of a promise is that promise).
 */
export function answer<T>(work: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * A page of rows, newest first: at most `page.limit`, with ids below `page.before` when given, of
 * one account when given — read by `all` (before, limit) or `ofAccount` (account, before, limit).
 */
export function newestFirst(
  all: StatementSync,
  ofAccount: StatementSync,
  page: { accountId?: number; before?: number; limit: number },
): Row[] {
  const before = page.before ?? Number.MAX_SAFE_INTEGER;
  const rows = page.accountId === undefined
    ? all.all(before, page.limit)
    : ofAccount.all(page.accountId, before, page.limit);
  return rows as Row[];
}

/**
 * The statement forgetting a table's rows created before `?1` (ms since epoch), for a table kept
 * in insertion (rowid) order: the expired rows are the rowids before the first live one, a range
 * at the start deleted without scanning the rest.
 */
export function inOrderPrune(table: string): string {
  return `DELETE FROM ${table} WHERE rowid < coalesce(
         (SELECT rowid FROM ${table} WHERE created_at >= ?1 ORDER BY rowid LIMIT 1),
         (SELECT max(rowid) + 1 FROM ${table}))`;
}
