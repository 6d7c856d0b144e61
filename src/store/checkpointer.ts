/**
 * The WAL checkpointer thread of a process whose serving threads share the store (see
 * `prepareForServing` in `sqlite_connection.ts`): it copies the write-ahead log back into the
 * database file, so that no serving thread does it inside a commit while the others wait for the
 * write lock.
 * Passive checkpoints run beside the writers; when the log has grown long anyway (writers never
 * paused), one restarting checkpoint under the write lock lets it start over from the beginning.
 */
import { DatabaseSync } from "node:sqlite";
import { WriteLock } from "./write_lock.ts";

/** What the checkpointer is started with. */
export interface CheckpointerStart {
  path: string;
  writeLock: SharedArrayBuffer;
  /** How often the log is checkpointed. */
  everyMs: number;
}

/** Log pages (4 KiB) from which the log is restarted under the write lock: about 64 MiB. */
const RESTART_PAGES = 16_384;

const scope = self as unknown as {
  onmessage: ((event: MessageEvent<CheckpointerStart>) => void) | null;
};

scope.onmessage = ({ data }) => {
  const db = new DatabaseSync(data.path);
  db.exec("PRAGMA busy_timeout = 5000;");
  const lock = new WriteLock(data.writeLock);
  const passive = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  const restart = db.prepare("PRAGMA wal_checkpoint(RESTART)");
  setInterval(() => {
    const { log } = passive.get() as { log: number };
    if (log < RESTART_PAGES) return;
    lock.acquire();
    try {
      restart.get();
    } finally {
      lock.release();
    }
  }, data.everyMs);
};
