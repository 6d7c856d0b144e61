/**
 * When each key was last used, kept to about a minute: uses are noted in memory on the request
 * path and written in batches (see `Store.touchKeys`), so a busy key costs one write a minute,
 * not one a call.
 */
import type { Store } from "../store/store.ts";

/** How stale a key's recorded last use may get. */
const PRECISION_MS = 60_000;
/** Keys whose last use waits to be written, at most (more are written at once). */
const MAX_PENDING = 10_000;

/** A thread's record of key uses not yet written. */
export class LastUsed {
  readonly #pending = new Map<string, number>();
  readonly #written = new Map<string, number>();

  /** Notes a use of `keyId` at `now` (ms since the epoch). */
  note(keyId: string, now: number): void {
    const written = this.#written.get(keyId);
    if (written !== undefined && now - written < PRECISION_MS) return;
    this.#pending.set(keyId, now);
    this.#written.set(keyId, now);
    if (this.#written.size > MAX_PENDING * 4) this.#written.clear();
  }

  /** Whether enough waits to be written now. */
  get full(): boolean {
    return this.#pending.size >= MAX_PENDING;
  }

  /** Writes what waits (errors are the caller's: nothing is lost but a minute's precision). */
  async flush(store: Store): Promise<void> {
    if (!this.#pending.size) return;
    const used = new Map(this.#pending);
    this.#pending.clear();
    await store.touchKeys(used);
  }
}

/** This thread's record (one per serving thread: the module is loaded once per thread). */
export const lastUsed = new LastUsed();
