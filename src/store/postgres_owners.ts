/**
 * Serving processes on the PostgreSQL store: each registers as an owner and holds the advisory
 * lock `(OWNER, id)` on its session while it lives, saying every second that it is alive, so the
 * calls it holds are recovered by another only once it has died; and the replica holding the
 * leader lock runs the once-only background work.
 */
import { log } from "../log.ts";
import { StoreUnavailable } from "./store.ts";
import { LOCKS } from "./postgres_schema.ts";
import type { PgConnection } from "./postgres_connection.ts";

/**
 * An owner not seen for this long, whose lock is free, has died (an owner says it is alive every
 * second; a process that stops cleanly says it is gone at once).
 */
const OWNER_STALE_MS = 5_000;

/** The database's clock, ms since the epoch (one clock for every replica). */
const NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";
/** When the database (its postmaster) last started, as seconds since the epoch. */
const EPOCH = "extract(epoch FROM pg_postmaster_start_time())::float8";

/** This process as an owner (once registered), and what it can tell of the others. */
export class PgOwners {
  readonly #c: PgConnection;
  /** This process's owner id (`owners.id`) when it serves calls. */
  #id: number | null = null;

  constructor(c: PgConnection) {
    this.#c = c;
  }

  /** This process's owner id; null when it does not serve calls. */
  get id(): number | null {
    return this.#id;
  }

  /** Registers this process as an owner and takes its lock. */
  async register(): Promise<void> {
    const [row] = await this.#c.sql`INSERT INTO owners (pid, started_at)
      VALUES (${Deno.pid}, ${Date.now()}) RETURNING id`;
    this.#id = Number(row.id);
    await this.holdLock();
  }

  /** Takes (again, after a reconnect) this process's owner lock, and says it is alive. */
  async holdLock(): Promise<void> {
    if (this.#id === null) return;
    const [row] = await this.#c.run(this.#c.session`
      SELECT ${this.#heldOrTaken(LOCKS.OWNER, this.#id)} AS held`);
    const sql = this.#c.sql;
    await this.#c.run(sql`UPDATE owners SET seen_at = ${sql.unsafe(NOW_MS)},
                          seen_epoch = ${sql.unsafe(EPOCH)} WHERE id = ${this.#id}`);
    if (row.held !== true) {
      log("warn", "this process's owner lock is held elsewhere: retrying", { owner: this.#id });
    }
  }

  /** SQL: true when the session holds the advisory lock (a, b), else an attempt to take it. */
  #heldOrTaken(a: number, b: number) {
    return this.#c.session`coalesce(
      (SELECT true FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()
         AND classid = ${a} AND objid = ${b} AND objsubid = 2 AND granted),
      pg_try_advisory_lock(${a}, ${b}))`;
  }

  /**
   * Whether owner `id`'s process is gone: not seen for `OWNER_STALE_MS` — since the database last
   * started, or, when it has not been seen since, on a database up for that long (after a restart
   * every owner needs a moment to take its lock again) — and its lock can be taken (it is given
   * back at once).
   */
  async gone(id: number): Promise<boolean> {
    const session = this.#c.session;
    const [seen] = await this.#c.run(session`
      SELECT coalesce(seen_at, 0) < ${session.unsafe(NOW_MS)} - ${OWNER_STALE_MS}
             AND (seen_epoch = ${session.unsafe(EPOCH)}
                  OR pg_postmaster_start_time() < now() - ${OWNER_STALE_MS} * interval '1 ms')
             AS stale
      FROM (SELECT NULL) AS one LEFT JOIN owners ON owners.id = ${id}`);
    if (seen.stale !== true) return false;
    const [row] = await this.#c.run(session`
      SELECT pg_try_advisory_lock(${LOCKS.OWNER}, ${id}) AS free`);
    if (!row.free) return false;
    await this.#c.run(session`SELECT pg_advisory_unlock(${LOCKS.OWNER}, ${id})`);
    return true;
  }

  /** Whether this process holds (or just took) the leader lock; false when it cannot ask. */
  async leading(): Promise<boolean> {
    try {
      const [row] = await this.#c.run(
        this.#c.session`SELECT ${this.#heldOrTaken(LOCKS.GATEWAY, LOCKS.LEADER)} AS lead`,
      );
      return row.lead === true;
    } catch (error) {
      if (error instanceof StoreUnavailable) return false;
      throw error;
    }
  }

  /** Says this process stopped cleanly: whatever it still holds may be recovered at once. */
  async stopped(): Promise<void> {
    if (this.#id === null) return;
    await this.#c.run(this.#c.sql`UPDATE owners SET seen_at = 0 WHERE id = ${this.#id}`)
      .catch(() => {});
  }
}
