/** One measurement of one target: wrk's figures plus the server's CPU time per request. */
import { cpuSeconds } from "./procs.ts";
import { type Load, wrk } from "./wrk.ts";

/** Something to load: a URL with its request, and the process whose CPU is counted (if any). */
export interface Target {
  url: string;
  headers: Record<string, string>;
  body: string;
  pid?: number;
}

/** A run's figures (latencies in ms). */
export interface Measurement {
  rps: number;
  p50: number;
  p99: number;
  /** Non-2xx responses and socket errors. */
  errors: number;
  /** User + system CPU of the target's process tree per request, µs (NaN when not counted). */
  cpuUs: number;
}

/** Loads the target once and measures. */
export async function measure(target: Target, load: Load): Promise<Measurement> {
  const before = target.pid ? cpuSeconds(target.pid) : NaN;
  const r = await wrk(target, load);
  const cpu = target.pid ? cpuSeconds(target.pid) - before : NaN;
  return {
    rps: r.rps,
    p50: r.p50,
    p99: r.p99,
    errors: r.non2xx + r.socketErrors,
    cpuUs: r.requests ? (cpu * 1e6) / r.requests : NaN,
  };
}

/** The median of `values`, NaN left out (NaN when none is left). */
export function medianOf(values: number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (!sorted.length) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Each figure's median over the runs. */
export function median(runs: Measurement[]): Measurement {
  const of = (field: keyof Measurement) => medianOf(runs.map((r) => r[field]));
  return {
    rps: of("rps"),
    p50: of("p50"),
    p99: of("p99"),
    errors: of("errors"),
    cpuUs: of("cpuUs"),
  };
}
