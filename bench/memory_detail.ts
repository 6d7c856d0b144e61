/**
 * The memory scenario's breakdown (BENCH_MEMORY_DETAIL=1): the gateway is started with
 * `SWITCHYARD_MEMORY_REPORT_MS` and `--v8-flags=--expose-gc`, so each serving thread logs, every
 * `REPORT_MS`, its JavaScript heap and the memory its objects hold outside it (array buffers and
 * other backing stores) right after a full collection; this keeps the latest line of each thread
 * and tells what one stream costs of each, between two moments of the scenario.
 */

/** The report's interval asked of the gateway, ms. */
export const REPORT_MS = 1000;

/** A gateway's memory at one moment, bytes: heaps and external summed over its serving threads. */
export interface MemoryPoint {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
}

/** What the gateway needs to report its memory (see the module's doc). */
export const DETAIL_ENV = { SWITCHYARD_MEMORY_REPORT_MS: String(REPORT_MS) };
/** The V8 flag that lets the report collect the heap first. */
export const DETAIL_FLAG = "--v8-flags=--expose-gc";

/** The gateway's latest `memory` lines, one per serving thread. */
export class MemoryReports {
  readonly #latest = new Map<number, { at: number; figures: Record<string, number> }>();

  /** Forgets the reports so far (a new gateway starts). */
  clear(): void {
    this.#latest.clear();
  }

  /** A stdout line of the gateway (only its `memory` lines are kept). */
  onLine = (line: string): void => {
    if (!line.includes('"msg":"memory"')) return;
    try {
      const parsed = JSON.parse(line);
      this.#latest.set(Number(parsed.thread) || 0, { at: Date.now(), figures: parsed });
    } catch { /* not a whole JSON line */ }
  };

  /**
   * The latest figures once every thread has reported after now (waits up to 3 report intervals;
   * undefined when no report came).
   */
  async fresh(): Promise<MemoryPoint | undefined> {
    const asked = Date.now();
    const deadline = asked + 3 * REPORT_MS + 2000;
    while (Date.now() < deadline) {
      const all = [...this.#latest.values()];
      if (all.length && all.every((r) => r.at > asked)) return sum(all.map((r) => r.figures));
      await new Promise((r) => setTimeout(r, 100));
    }
    const all = [...this.#latest.values()];
    return all.length ? sum(all.map((r) => r.figures)) : undefined;
  }
}

function sum(lines: Record<string, number>[]): MemoryPoint {
  const total = (name: string) => lines.reduce((n, l) => n + (Number(l[name]) || 0), 0);
  return {
    rss: Math.max(...lines.map((l) => Number(l.rss) || 0)),
    heapUsed: total("heap_used"),
    heapTotal: total("heap_total"),
    external: total("external"),
  };
}

/** What one stream costs, bytes, between `from` (no streams) and `to` (`streams` open). */
export interface PerStream {
  heapUsed: number;
  external: number;
  /** The rest of the resident memory: native memory (sockets, HTTP state) and heap slack. */
  rest: number;
  rss: number;
}

/** The cost of one stream between two points. */
export function perStream(from: MemoryPoint, to: MemoryPoint, streams: number): PerStream {
  const per = (a: number, b: number) => (b - a) / Math.max(1, streams);
  const heapUsed = per(from.heapUsed, to.heapUsed);
  const external = per(from.external, to.external);
  const rss = per(from.rss, to.rss);
  return { heapUsed, external, rss, rest: rss - heapUsed - external };
}
