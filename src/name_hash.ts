/**
 * How the tables in shared memory (`routing/board.ts`, `metrics/bounds.ts`) know a name: by two
 * 32-bit FNV-1a hashes of it, each odd — so never `EMPTY` (0, a free cell) nor `CLAIMING` (-1, a
 * cell another thread is writing). Their upper bits pick a name's first cell.
 */

/** A free cell. */
export const EMPTY = 0;
/** A cell another thread is taking: its name's hashes are on their way. */
export const CLAIMING = -1;

function fnv1a(text: string, seed: number): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  // Never EMPTY nor CLAIMING.
  return (h | 1) === CLAIMING ? 1 : h | 1;
}

/** The two hashes of `text`, each odd (see the module's note). */
export function hashesOf(text: string): [number, number] {
  return [fnv1a(text, 0x811c9dc5), fnv1a(text, 0x050c5d1f)];
}
