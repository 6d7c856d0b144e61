/**
 * An opt-in report of a serving thread's memory, for measuring what an open stream costs (the
 * benchmark's memory scenario, `BENCH_MEMORY_DETAIL=1`): with `SWITCHYARD_MEMORY_REPORT_MS=N` in
 * the environment, each serving thread logs one `memory` line every N ms with `Deno.memoryUsage()`
 * — the process's resident memory (`rss`), the thread's JavaScript heap (`heap_used`,
 * `heap_total`) and the memory outside it that its objects hold (`external`: array buffers and
 * other native backing stores). When the process runs with `--v8-flags=--expose-gc`, the heap is
 * collected first, so the figures are what is live, not what awaits collection. Off (nothing
 * started) without the variable.
 */
import { log } from "../log.ts";

/** The environment variable that turns the report on: its interval, in milliseconds. */
export const MEMORY_REPORT_ENV = "SWITCHYARD_MEMORY_REPORT_MS";

/** One report's figures, in bytes. */
export interface MemoryFigures {
  rss: number;
  heap_used: number;
  heap_total: number;
  external: number;
}

/** The thread's memory now, collected first when the garbage collector is exposed. */
export function memoryFigures(): MemoryFigures {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc === "function") gc();
  const m = Deno.memoryUsage();
  return { rss: m.rss, heap_used: m.heapUsed, heap_total: m.heapTotal, external: m.external };
}

/** The report's interval from the environment, or 0 (off) when unset or not a positive number. */
export function reportInterval(env: (name: string) => string | undefined): number {
  let ms: number;
  try {
    ms = Number(env(MEMORY_REPORT_ENV) ?? "");
  } catch {
    return 0; // no permission to read the environment: off
  }
  return Number.isFinite(ms) && ms > 0 ? ms : 0;
}

/** Starts the report when the environment asks for it (see the module's doc); returns its stop. */
export function startMemoryReport(
  env: (name: string) => string | undefined,
  thread: number,
): () => void {
  const ms = reportInterval(env);
  if (!ms) return () => {};
  const timer = setInterval(() => log("info", "memory", { thread, ...memoryFigures() }), ms);
  Deno.unrefTimer(timer);
  return () => clearInterval(timer);
}
