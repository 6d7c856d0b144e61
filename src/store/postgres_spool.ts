/**
 * What the PostgreSQL store writes later, while the database cannot be reached: settlements, the
 * release of holds whose answer was lost with the connection, submitted video jobs. They queue in
 * memory up to a bound, then in a local spool file (one per serving thread), and are written once
 * the database is back — each exactly once, as a settlement applies only to a held row and a job
 * is inserted once. What is still queued when the store closes goes to the spool file, for the
 * next start.
 */
import { log } from "../log.ts";
import type { BudgetWindows, Charge, VideoJob } from "./store.ts";

/**
 * A write waiting for the database: the settlement of a held entry, the release of a hold whose
 * answer was lost with the connection (by the token it was written with), or a submitted video
 * job (its upstream job exists and its funds are held: it must be recorded).
 */
export type Deferred =
  | { id: number; charge: Charge | null; windows?: BudgetWindows }
  | { token: string }
  | { job: VideoJob };

/** Settlements kept in memory while the database is away; later ones go to the spool file. */
const MAX_QUEUED = 10_000;

/** The queue and its spool file (see the module's note). */
export class Spool {
  readonly #file: string | undefined;
  readonly #maxQueued: number;
  #queued: Deferred[] = [];
  /** The spool file may hold writes. */
  #spooled = false;
  /** The replay under way (one at a time, see `replay`). */
  #replaying: Promise<void> | null = null;
  /** Writes one deferred write (see `writeWith`). */
  #write: (deferred: Deferred) => Promise<void> = () => Promise.reject(new Error("no writer"));

  /** `file`: where writes spool past `maxQueued` (default 10,000); none: all stay in memory. */
  constructor(file?: string, maxQueued = MAX_QUEUED) {
    this.#file = file;
    this.#maxQueued = maxQueued;
  }

  /** Sets how a deferred write is written once the database is back. */
  writeWith(write: (deferred: Deferred) => Promise<void>): void {
    this.#write = write;
  }

  /** Whether anything waits to be written (in memory or in the spool file). */
  get waiting(): boolean {
    return this.#queued.length > 0 || this.#spooled;
  }

  /** Queues a write for when the database is back. */
  defer(deferred: Deferred): void {
    if (this.#queued.length < this.#maxQueued || !this.#file) {
      this.#queued.push(deferred);
    } else {
      // Past the bound: to disk, so neither memory nor the charge is lost.
      Deno.writeTextFileSync(this.#file, JSON.stringify(deferred) + "\n", { append: true });
      this.#spooled = true;
    }
    if (this.#queued.length === 1) {
      log("warn", "settlements queued until the store is back", { queued: 1 });
    }
  }

  /**
   * At the start of a serving process: writes what an earlier run left — with `leftovers`, the
   * spool files its other threads left beside this one's too.
   */
  async start(leftovers: boolean): Promise<void> {
    if (leftovers) await this.#replayLeftovers();
    this.#spooled = this.#file !== undefined && exists(this.#file);
    if (this.#spooled) await this.replay();
  }

  /** Writes the spool files an earlier run's threads left beside this store's own. */
  async #replayLeftovers(): Promise<void> {
    const file = this.#file;
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
    for (const line of lines) await this.#write(JSON.parse(line) as Deferred);
    Deno.removeSync(path);
    if (lines.length) log("info", "spooled settlements written", { settlements: lines.length });
  }

  /**
   * Writes the queued and spooled writes (each once: only a held row is settled, a job inserted
   * once), one replay at a time: a call while one is under way gets that one.
   */
  replay(): Promise<void> {
    return this.#replaying ??= this.#replayOnce().finally(() => this.#replaying = null);
  }

  async #replayOnce(): Promise<void> {
    while (this.#queued.length) {
      await this.#write(this.#queued[0]);
      this.#queued.shift();
    }
    const file = this.#file;
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

  /**
   * At close: writes what waits, or — the database still away — puts what is in memory in the
   * spool file, for the next start (lost, and logged, when there is none).
   */
  async close(): Promise<void> {
    try {
      while (this.waiting) await this.replay();
    } catch {
      // Still away: what is in memory goes to the spool file, for the next start.
      const file = this.#file;
      if (file && this.#queued.length) {
        const lines = this.#queued.map((d) => JSON.stringify(d) + "\n").join("");
        Deno.writeTextFileSync(file, lines, { append: true });
        this.#queued = [];
      } else if (this.#queued.length) {
        log("error", "settlements lost: no spool file and the store is away", {
          settlements: this.#queued.length,
        });
      }
    }
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
