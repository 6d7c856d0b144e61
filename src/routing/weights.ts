/**
 * Weighted round robin, pure: the order in which items of integer weights take turns over one
 * cycle (the sum of the weights), spread out rather than bunched — nginx's smooth weighted round
 * robin. A shared counter walks it, so every thread of a process follows the same cycle.
 */

/** One cycle of turns for `weights` (each ≥ 1): item indexes, item `i` appearing `weights[i]` times. */
export function schedule(weights: readonly number[]): number[] {
  const total = weights.reduce((sum, w) => sum + w, 0);
  const current = weights.map(() => 0);
  const turns: number[] = [];
  for (let turn = 0; turn < total; turn++) {
    let best = 0;
    for (let i = 0; i < weights.length; i++) {
      current[i] += weights[i];
      if (current[i] > current[best]) best = i;
    }
    current[best] -= total;
    turns.push(best);
  }
  return turns;
}

/**
 * The items in the order a call tries them: the one whose turn `counter` is first, then the others
 * in the order their next turns come (each once).
 */
export function turnOrder(turns: readonly number[], counter: number, items: number): number[] {
  const order: number[] = [];
  const start = ((counter % turns.length) + turns.length) % turns.length;
  for (let step = 0; step < turns.length && order.length < items; step++) {
    const item = turns[(start + step) % turns.length];
    if (!order.includes(item)) order.push(item);
  }
  return order;
}
