/**
 * The routing state every serving thread of a process shares: a fixed table of slots in one
 * `SharedArrayBuffer`, each claimed by a name (`key:openai:…`, `target:anthropic/claude-…`) and
 * read and written with `Atomics`. A key cooled in one thread is cooled in all, a circuit opened
 * by one is open for all, and a deployment's `maxConcurrent` counts every thread's calls.
 *
 * A slot is 16 32-bit integers and 4 64-bit times (milliseconds since the epoch); what each field
 * means is up to the module that names the slot (`keys.ts`, `circuit.ts`, `limits.ts`). Names are
 * stable across reloads, so state outlives a config reload (refused keys end by a generation,
 * see `keys.ts`). After the slots, the same buffer holds where conversations' prompt caches are
 * (`affinity.ts`).
 */
import { CLAIMING, hashesOf } from "../name_hash.ts";
import { AFFINITY_BYTES, AffinityTable } from "./affinity.ts";

/** Slots in the table; names past it get a slot of their own thread (not shared). */
const SLOTS = 4096;
/** A lone slot's buffer, for a name that found the table full. */
const ONE_SLOT_BYTES = 16 * 4 + 4 * 8;
const INTS = 16;
const TIMES = 4;
/** Integer fields 0 and 1 hold the name's two hashes; the others are the users'. */
const HASH_A = 0;
const HASH_B = 1;

/** The bytes of the named slots (and the claim count after them). */
const SLOTS_BYTES = SLOTS * (INTS * 4 + TIMES * 8) + 8;
/** The bytes a board takes: its slots, then the conversations' placements (`affinity.ts`). */
export const BOARD_BYTES = SLOTS_BYTES + AFFINITY_BYTES;

/** One named slot: integer fields 2–15 and time fields 0–3. */
export class Slot {
  constructor(
    private readonly ints: Int32Array,
    private readonly times: BigInt64Array,
    private readonly at: number,
  ) {}

  get(field: number): number {
    return Atomics.load(this.ints, this.at * INTS + field);
  }
  set(field: number, value: number): void {
    Atomics.store(this.ints, this.at * INTS + field, value);
  }
  /** Adds `n`; returns the value before. */
  add(field: number, n: number): number {
    return Atomics.add(this.ints, this.at * INTS + field, n);
  }
  /** Sets `field` to `value` if it holds `expected`; returns whether it did. */
  swap(field: number, expected: number, value: number): boolean {
    return Atomics.compareExchange(this.ints, this.at * INTS + field, expected, value) === expected;
  }
  time(field: number): number {
    return Number(Atomics.load(this.times, this.at * TIMES + field));
  }
  setTime(field: number, ms: number): void {
    Atomics.store(this.times, this.at * TIMES + field, BigInt(Math.round(ms)));
  }
  /** Sets time `field` to `ms` if it holds `expected`; returns whether it did. */
  swapTime(field: number, expected: number, ms: number): boolean {
    const e = BigInt(Math.round(expected));
    return Atomics.compareExchange(
      this.times,
      this.at * TIMES + field,
      e,
      BigInt(Math.round(ms)),
    ) ===
      e;
  }
}

/** The shared table; each thread holds one over the same buffer. */
export class Board {
  readonly buffer: SharedArrayBuffer;
  readonly #ints: Int32Array;
  readonly #times: BigInt64Array;
  readonly #found = new Map<string, Slot>();
  /** Names found unclaimed, with the table's claim count then (see `find`). */
  readonly #absent = new Map<string, number>();
  /** One cell after the slots: how many names were ever claimed. */
  readonly #claims: Int32Array;
  /** Where conversations' prompt caches are (see `affinity.ts`). */
  readonly affinity: AffinityTable;

  constructor(buffer = new SharedArrayBuffer(BOARD_BYTES)) {
    this.buffer = buffer;
    this.#times = new BigInt64Array(buffer, 0, SLOTS * TIMES);
    this.#ints = new Int32Array(buffer, SLOTS * TIMES * 8, SLOTS * INTS);
    this.#claims = new Int32Array(buffer, SLOTS * (TIMES * 8 + INTS * 4), 1);
    this.affinity = new AffinityTable(buffer, SLOTS_BYTES);
  }

  /** The slot named `name`, claimed on first use by any thread. */
  slot(name: string): Slot {
    return this.#lookup(name, true)!;
  }

  /**
   * The slot named `name` if some thread claimed it (reading never claims a slot). A name found
   * unclaimed is not looked for again until some thread claims any name.
   */
  find(name: string): Slot | undefined {
    const known = this.#found.get(name);
    if (known) return known;
    const claims = Atomics.load(this.#claims, 0);
    if (this.#absent.get(name) === claims) return undefined;
    const slot = this.#lookup(name, false);
    if (!slot) {
      if (this.#absent.size >= SLOTS) this.#absent.clear();
      this.#absent.set(name, claims);
    }
    return slot;
  }

  #lookup(name: string, claim: boolean): Slot | undefined {
    const known = this.#found.get(name);
    if (known) return known;
    const [a, b] = hashesOf(name);
    let slot: Slot | undefined;
    let free = false;
    for (let probe = 0; probe < SLOTS && !slot && !free; probe++) {
      // Hashes are odd (see `name_hash.ts`): their upper bits pick the first slot.
      const at = ((a >>> 1) + probe) % SLOTS;
      const cell = at * INTS;
      for (;;) {
        const held = Atomics.load(this.#ints, cell + HASH_A);
        if (held === 0 && !claim) {
          free = true; // the name would have been claimed here: nobody has it
        } else if (held === 0) {
          if (Atomics.compareExchange(this.#ints, cell + HASH_A, 0, CLAIMING) !== 0) continue;
          Atomics.store(this.#ints, cell + HASH_B, b);
          Atomics.store(this.#ints, cell + HASH_A, a);
          Atomics.add(this.#claims, 0, 1);
          slot = new Slot(this.#ints, this.#times, at);
        } else if (held === CLAIMING) {
          continue; // another thread is writing this slot's name: a few instructions
        } else if (held === a && Atomics.load(this.#ints, cell + HASH_B) === b) {
          slot = new Slot(this.#ints, this.#times, at);
        }
        break;
      }
    }
    if (!slot && !claim) return undefined;
    // A full table: this thread's own state for the name.
    slot ??= lone();
    if (this.#found.size >= SLOTS * 4) this.#found.clear();
    this.#found.set(name, slot);
    return slot;
  }
}

/** A slot outside the table (not shared). */
function lone(): Slot {
  const buffer = new SharedArrayBuffer(ONE_SLOT_BYTES);
  return new Slot(new Int32Array(buffer, TIMES * 8, INTS), new BigInt64Array(buffer, 0, TIMES), 0);
}
