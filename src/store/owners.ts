/**
 * Which serving processes are alive, for crash recovery on a store several processes share
 * (overlapping restarts, blue/green). Each serving process holds an exclusive SQLite lock on its
 * own lock file, `owners/<id>.lock` beside the store; the operating system releases it the moment
 * the process dies, however it dies. A process is alive while its lock cannot be taken.
 */
import { DatabaseSync } from "node:sqlite";

const LOCK_NAME = /^[0-9a-z]{10}\.lock$/;
/** A lock file being taken (`acquire`), left behind if its process died at that moment. */
const TEMPORARY_NAME = /^\.[0-9a-z]{10}\.new$/;
/** A temporary lock file older than this was abandoned. */
const ABANDONED_MS = 60_000;

/** The owner locks of one store. */
export class OwnerLock {
  #held: { id: string; db: DatabaseSync } | null = null;

  constructor(private readonly dir: string) {}

  /**
   * Takes this process's lock; returns its owner id. The file is locked under a temporary name and
   * then renamed, so no other process ever sees it unlocked (and sweeps it away).
   */
  acquire(): string {
    Deno.mkdirSync(this.dir, { recursive: true });
    // Short, as every held ledger row carries it: 50 random bits in base 36.
    const random = crypto.getRandomValues(new Uint32Array(2));
    const id = ((random[0] & 0x3ffff) * 2 ** 32 + random[1]).toString(36).padStart(10, "0");
    const temporary = `${this.dir}/.${id}.new`;
    const db = new DatabaseSync(temporary);
    db.exec("PRAGMA journal_mode = DELETE; BEGIN EXCLUSIVE;");
    Deno.renameSync(temporary, this.#path(id));
    this.#held = { id, db };
    return id;
  }

  /** Whether the process that took `id`'s lock is still alive. */
  alive(id: string): boolean {
    if (this.#held?.id === id) return true;
    const path = this.#path(id);
    try {
      Deno.statSync(path);
    } catch {
      return false; // never taken here, or already cleared: gone
    }
    const probe = new DatabaseSync(path);
    try {
      probe.exec("PRAGMA busy_timeout = 0");
      probe.exec("BEGIN EXCLUSIVE");
      probe.exec("ROLLBACK");
      return false;
    } catch {
      return true; // the owner holds it
    } finally {
      probe.close();
    }
  }

  /** Whether any process holding a lock here is alive (one serves the store). */
  anyAlive(): boolean {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(this.dir)];
    } catch {
      return false;
    }
    return entries.some((entry) =>
      entry.isFile && LOCK_NAME.test(entry.name) && this.alive(entry.name.slice(0, -5))
    );
  }

  /** Removes the lock files of processes that are gone (all but `live` and this one's). */
  sweep(live: Set<string>): void {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(this.dir)];
    } catch {
      return;
    }
    for (const entry of entries) {
      if (entry.isFile && TEMPORARY_NAME.test(entry.name)) {
        this.#removeAbandoned(`${this.dir}/${entry.name}`);
        continue;
      }
      if (!entry.isFile || !LOCK_NAME.test(entry.name)) continue;
      const id = entry.name.slice(0, -5);
      if (live.has(id) || this.alive(id)) continue;
      try {
        Deno.removeSync(this.#path(id));
      } catch { /* another process cleared it */ }
    }
  }

  #removeAbandoned(path: string): void {
    try {
      const age = Date.now() - (Deno.statSync(path).mtime?.getTime() ?? Date.now());
      if (age > ABANDONED_MS) Deno.removeSync(path);
    } catch { /* renamed into place, or already removed */ }
  }

  /** Gives this process's lock up (a clean shutdown). */
  release(): void {
    if (!this.#held) return;
    const { id, db } = this.#held;
    this.#held = null;
    try {
      db.exec("ROLLBACK");
      db.close();
      Deno.removeSync(this.#path(id));
    } catch { /* already gone */ }
  }

  #path(id: string): string {
    return `${this.dir}/${id}.lock`;
  }
}
