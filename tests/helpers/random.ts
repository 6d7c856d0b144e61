/** Seeded randomness for property and fuzz tests, so that a failing case can be replayed. */

/** A generator of numbers in [0, 1). */
export type Rand = () => number;

/** mulberry32: a small seeded generator. */
export function random(seed: number): Rand {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One of `items`. */
export const pick = <T>(rand: Rand, items: readonly T[]): T =>
  items[Math.floor(rand() * items.length)];

/** An integer from `min` to `max`, both included. */
export const int = (rand: Rand, min: number, max: number): number =>
  min + Math.floor(rand() * (max - min + 1));
