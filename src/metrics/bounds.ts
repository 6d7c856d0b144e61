/**
 * The bounds on a registry's series that hold for the process as a whole: how many series each
 * family may have, and which distinct values each capped label has admitted (at most its `max`).
 * Kept in one `SharedArrayBuffer` that every serving thread's registry uses, read and written with
 * `Atomics`, so the threads' values added up by a scrape are within the bounds — not N threads
 * times them. Nothing here grows: the buffer's size is fixed when it is made.
 *
 * A label's table is open addressing over twice its `max` cells, each two 32-bit hashes of a
 * value (a value is never stored, nor ever removed). Two values with the same 64 bits of hash
 * count as one: they share a series' admission, nothing else.
 */
import { CLAIMING, EMPTY, hashesOf } from "../name_hash.ts";

/** A table's cells: a power of two, at least twice `max`. */
function cellsFor(max: number): number {
  let cells = 2;
  while (cells < 2 * max) cells *= 2;
  return cells;
}

/** Where each part of the buffer is, in 32-bit integers. */
interface Layout {
  /** One count per family, from 0. */
  families: number;
  /** Per label: its count's index and its first cell's. */
  labels: { count: number; cells: number; size: number; max: number }[];
  ints: number;
}

function layout(seriesMax: readonly number[], labelMax: readonly number[]): Layout {
  let at = seriesMax.length;
  const labels = labelMax.map((max) => {
    const size = cellsFor(max);
    const entry = { count: at, cells: at + 1, size, max };
    at += 1 + size * 2;
    return entry;
  });
  return { families: seriesMax.length, labels, ints: at };
}

/** Series and label-value bounds shared by the threads (see the module's note). */
export class Bounds {
  readonly buffer: SharedArrayBuffer;
  readonly #ints: Int32Array;
  readonly #layout: Layout;

  /**
   * `seriesMax[i]`: the series family `i` may have; `labelMax[j]`: the distinct values label `j`
   * may admit. Threads that share `buffer` must give the same numbers.
   */
  constructor(
    readonly seriesMax: readonly number[],
    labelMax: readonly number[],
    buffer?: SharedArrayBuffer,
  ) {
    this.#layout = layout(seriesMax, labelMax);
    const bytes = this.#layout.ints * 4;
    if (buffer && buffer.byteLength !== bytes) {
      throw new Error(`metric bounds: a buffer of ${buffer.byteLength} bytes, ${bytes} expected`);
    }
    this.buffer = buffer ?? new SharedArrayBuffer(bytes);
    this.#ints = new Int32Array(this.buffer);
  }

  /** Takes room for one more series of family `family`; false when it has all it may. */
  takeSeries(family: number): boolean {
    const max = this.seriesMax[family];
    for (;;) {
      const held = Atomics.load(this.#ints, family);
      if (held >= max) return false;
      if (Atomics.compareExchange(this.#ints, family, held, held + 1) === held) return true;
    }
  }

  /** Gives back the room of `n` series of family `family` (series that were dropped). */
  giveSeries(family: number, n: number): void {
    if (n > 0) Atomics.sub(this.#ints, family, n);
  }

  /** Series of family `family` in every thread (a series several threads have counts for each). */
  series(family: number): number {
    return Atomics.load(this.#ints, family);
  }

  /** Distinct values label `label` admitted so far. */
  admitted(label: number): number {
    return Math.min(Atomics.load(this.#ints, this.#layout.labels[label].count), this.max(label));
  }

  /** The most distinct values label `label` admits. */
  max(label: number): number {
    return this.#layout.labels[label].max;
  }

  /**
   * Whether `value` of label `label` has a series of its own: it was admitted before (by any
   * thread), or is now while the label has room. A value is refused only once `max` values are
   * in, so a value refused once is refused for good, in every thread.
   */
  admit(label: number, value: string): boolean {
    const { count, cells, size, max } = this.#layout.labels[label];
    const ints = this.#ints;
    const [a, b] = hashesOf(value);
    for (let probe = 0; probe < size; probe++) {
      const cell = cells + (((a >>> 1) + probe) & (size - 1)) * 2;
      for (;;) {
        const held = Atomics.load(ints, cell);
        if (held === CLAIMING) continue; // another thread is writing this cell: a few steps away
        if (held === EMPTY) {
          // Not admitted (values are never removed, so it would be here): take the cell, then
          // room. Room is only taken with a cell, so a refusal means `max` values are in.
          if (Atomics.load(ints, count) >= max) return false;
          if (Atomics.compareExchange(ints, cell, EMPTY, CLAIMING) !== EMPTY) continue;
          if (Atomics.add(ints, count, 1) >= max) {
            Atomics.sub(ints, count, 1);
            Atomics.store(ints, cell, EMPTY);
            return false;
          }
          Atomics.store(ints, cell + 1, b);
          Atomics.store(ints, cell, a);
          return true;
        }
        if (held === a && Atomics.load(ints, cell + 1) === b) return true;
        break;
      }
    }
    return false;
  }
}
