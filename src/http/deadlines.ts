/**
 * Deadlines on the request path (request bodies, upstream headers, JSON answers, stream idle and
 * duration limits): one shared timer, checking every 100 ms, instead of a timer per request.
 */

/** Deadlines in force: one timer checks them all, not one per read. */
const reads = new Set<{ until: number; expire: () => void }>();
let sweeper: ReturnType<typeof setInterval> | undefined;

function sweep(): void {
  const now = Date.now();
  for (const read of reads) {
    if (now < read.until) continue;
    reads.delete(read);
    read.expire();
  }
  if (!reads.size) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
}

/** Calls `expire` once `ms` have passed (within 100 ms), unless the returned function is called. */
export function deadline(ms: number, expire: () => void): () => void {
  const read = { until: Date.now() + ms, expire };
  reads.add(read);
  sweeper ??= setInterval(sweep, 100);
  return () => reads.delete(read);
}
