/**
 * A lock the threads of one process share (a `SharedArrayBuffer` cell, `Atomics`): a thread that
 * wants to write waits for the microseconds another thread's flush takes, where SQLite's own busy
 * handler would sleep for milliseconds. Other processes (the CLI) are still kept out by SQLite.
 */
export class WriteLock {
  /** The shared cell, to hand to the other threads. */
  readonly buffer: SharedArrayBuffer;
  readonly #cell: Int32Array;

  constructor(buffer = new SharedArrayBuffer(4)) {
    this.buffer = buffer;
    this.#cell = new Int32Array(buffer);
  }

  /** Blocks this thread until it holds the lock. Not reentrant. */
  acquire(): void {
    while (Atomics.compareExchange(this.#cell, 0, 0, 1) !== 0) {
      // Woken by `release`; the timeout only bounds a missed wake-up.
      Atomics.wait(this.#cell, 0, 1, 10);
    }
  }

  release(): void {
    Atomics.store(this.#cell, 0, 0);
    Atomics.notify(this.#cell, 0, 1);
  }
}
