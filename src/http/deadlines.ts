/**
 * Deadlines on the request path (request bodies, upstream headers, JSON answers, stream idle and
 * duration limits): one shared timer, checking every 100 ms, instead of a timer per request. The
 * deadlines in force are a `LiveList`, not a `Set`: one that churns with every request would keep
 * requests' objects alive past their end (see `live_list.ts`).
 */
import { LiveList } from "./live_list.ts";

/** Deadlines in force: one timer checks them all, not one per read. */
const reads = new LiveList<{ until: number; expire: () => void }>();
let sweeper: ReturnType<typeof setInterval> | undefined;

function sweep(): void {
  const now = Date.now();
  const due = reads.entries().filter(([, read]) => now >= read.until);
  // An expiry may end another deadline that is due too: that one is not expired.
  for (const [entry, read] of due) if (entry.remove()) read.expire();
  if (!reads.size) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
}

/** Calls `expire` once `ms` have passed (within 100 ms), unless the returned function is called. */
export function deadline(ms: number, expire: () => void): () => void {
  const entry = reads.add({ until: Date.now() + ms, expire });
  sweeper ??= setInterval(sweep, 100);
  return () => void entry.remove();
}
