/**
 * Where conversations' prompt caches are, shared by every serving thread of a process: a fixed
 * table in shared memory (part of the board's buffer, see `board.ts`) from a conversation — its
 * account and its 64-bit hash: two accounts' never meet, even should their hashes — to the
 * deployment and upstream key that served it last, until when the provider keeps its cache,
 * and when the table last agreed with the store (several replicas share placements through it,
 * see `pipeline/affinity.ts`).
 *
 * The table is set-associative — `BUCKETS` buckets of `WAYS` entries — so its memory is bounded:
 * a conversation takes the entry holding it, else an expired one, else the one whose cache runs
 * out first (the least recently used of equal TTLs). Each entry is written under a sequence lock
 * (odd while a thread writes it): a reader retries a torn read, a writer that finds the entry
 * being written gives up (a placement is a preference; the next call writes it again).
 */

/** Buckets (a power of two) and entries per bucket: 32,768 conversations at most. */
const BUCKETS = 4096;
const WAYS = 8;
const ENTRIES = BUCKETS * WAYS;
/**
 * Integer fields: the sequence lock, the hash's two halves, the account, the placement's names,
 * the prefix the provider holds a cache of.
 */
const [SEQ, HASH_A, HASH_B, ACCOUNT, TARGET, KEY, CACHED] = [0, 1, 2, 3, 4, 5, 6];
const INTS = 8;
/** Time fields (ms since the epoch): cache expiry, last agreement with the store, expiry stored. */
const [EXPIRES, SYNCED, STORED] = [0, 1, 2];
const TIMES = 4;

/** The bytes the table takes (8-aligned). */
export const AFFINITY_BYTES = ENTRIES * (INTS * 4 + TIMES * 8);

/** A conversation's placement: 32-bit hashes of its deployment's name and its key's id. */
export interface Placement {
  target: number;
  key: number;
  /** When its cache runs out (ms since the epoch). */
  expires: number;
  /** When the table last agreed with the store (0: never read from it). */
  synced: number;
  /** The expiry the store holds for it (0: none written). */
  stored: number;
  /**
   * The hash of the client's prefix its last call left in the provider's cache (a read or a write
   * reported), where the gateway tracks it (see `pipeline/affinity.ts`); 0: none known.
   */
  cached?: number;
}

/** The table over `buffer` from `offset` (see the module's doc). */
export class AffinityTable {
  readonly #ints: Int32Array;
  readonly #times: BigInt64Array;

  constructor(buffer: SharedArrayBuffer, offset: number) {
    this.#times = new BigInt64Array(buffer, offset, ENTRIES * TIMES);
    this.#ints = new Int32Array(buffer, offset + ENTRIES * TIMES * 8, ENTRIES * INTS);
  }

  /**
   * The live placement of conversation `(a, b)` (two nonzero 32-bit halves of its hash) of
   * `account`.
   */
  find(a: number, b: number, account: number, now: number): Placement | undefined {
    const at = this.#entryOf(a, b, account);
    if (at < 0) return undefined;
    for (let tries = 0; tries < 4; tries++) {
      const seq = Atomics.load(this.#ints, at * INTS + SEQ);
      if (seq & 1) continue;
      const placement = this.#read(at);
      const same = Atomics.load(this.#ints, at * INTS + HASH_A) === a &&
        Atomics.load(this.#ints, at * INTS + HASH_B) === b &&
        Atomics.load(this.#ints, at * INTS + ACCOUNT) === account;
      if (Atomics.load(this.#ints, at * INTS + SEQ) !== seq) continue;
      return same && placement.expires > now ? placement : undefined;
    }
    return undefined;
  }

  /** Places conversation `(a, b)` of `account` (see the module's doc for which entry it takes). */
  put(a: number, b: number, account: number, placement: Placement, now: number): void {
    const held = this.#entryOf(a, b, account);
    const at = held >= 0 ? held : this.#victim(a, now);
    const cell = at * INTS;
    const seq = Atomics.load(this.#ints, cell + SEQ);
    if (seq & 1 || Atomics.compareExchange(this.#ints, cell + SEQ, seq, seq + 1) !== seq) return;
    Atomics.store(this.#ints, cell + HASH_A, a);
    Atomics.store(this.#ints, cell + HASH_B, b);
    Atomics.store(this.#ints, cell + ACCOUNT, account);
    Atomics.store(this.#ints, cell + TARGET, placement.target);
    Atomics.store(this.#ints, cell + KEY, placement.key);
    Atomics.store(this.#ints, cell + CACHED, placement.cached ?? 0);
    this.#setTime(at, EXPIRES, placement.expires);
    this.#setTime(at, SYNCED, placement.synced);
    this.#setTime(at, STORED, placement.stored);
    Atomics.store(this.#ints, cell + SEQ, seq + 2);
  }

  /**
   * Notes on the live placement of `(a, b)` of `account`, if it still names `target` and `key`,
   * the prefix its provider now holds a cache of (see `Placement.cached`).
   */
  markCached(a: number, b: number, account: number, target: number, key: number, prefix: number) {
    const at = this.#entryOf(a, b, account);
    if (at < 0) return;
    const cell = at * INTS;
    const seq = Atomics.load(this.#ints, cell + SEQ);
    if (seq & 1 || Atomics.compareExchange(this.#ints, cell + SEQ, seq, seq + 1) !== seq) return;
    const same = Atomics.load(this.#ints, cell + HASH_A) === a &&
      Atomics.load(this.#ints, cell + HASH_B) === b &&
      Atomics.load(this.#ints, cell + ACCOUNT) === account &&
      Atomics.load(this.#ints, cell + TARGET) === target &&
      Atomics.load(this.#ints, cell + KEY) === key;
    if (same) Atomics.store(this.#ints, cell + CACHED, prefix);
    Atomics.store(this.#ints, cell + SEQ, seq + 2);
  }

  /** The entry holding `(a, b)` of `account`, or -1. */
  #entryOf(a: number, b: number, account: number): number {
    const first = (a >>> 1) % BUCKETS * WAYS;
    for (let at = first; at < first + WAYS; at++) {
      if (
        Atomics.load(this.#ints, at * INTS + HASH_A) === a &&
        Atomics.load(this.#ints, at * INTS + HASH_B) === b &&
        Atomics.load(this.#ints, at * INTS + ACCOUNT) === account
      ) return at;
    }
    return -1;
  }

  /** The entry a new conversation takes in its bucket: a free or expired one, else the oldest. */
  #victim(a: number, now: number): number {
    const first = (a >>> 1) % BUCKETS * WAYS;
    let oldest = first;
    for (let at = first; at < first + WAYS; at++) {
      const expires = this.#time(at, EXPIRES);
      if (expires <= now) return at;
      if (expires < this.#time(oldest, EXPIRES)) oldest = at;
    }
    return oldest;
  }

  #read(at: number): Placement {
    return {
      target: Atomics.load(this.#ints, at * INTS + TARGET),
      key: Atomics.load(this.#ints, at * INTS + KEY),
      expires: this.#time(at, EXPIRES),
      synced: this.#time(at, SYNCED),
      stored: this.#time(at, STORED),
      cached: Atomics.load(this.#ints, at * INTS + CACHED),
    };
  }

  #time(at: number, field: number): number {
    return Number(Atomics.load(this.#times, at * TIMES + field));
  }

  #setTime(at: number, field: number, ms: number): void {
    Atomics.store(this.#times, at * TIMES + field, BigInt(Math.round(ms)));
  }
}
