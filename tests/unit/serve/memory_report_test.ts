/** The opt-in memory report: its interval from the environment, its figures. */
import assert from "node:assert/strict";
import {
  MEMORY_REPORT_ENV,
  memoryFigures,
  reportInterval,
  startMemoryReport,
} from "../../../src/serve/memory_report.ts";

const env = (value?: string) => (name: string) => name === MEMORY_REPORT_ENV ? value : undefined;

Deno.test("the report is off unless the environment gives a positive interval", () => {
  assert.equal(reportInterval(env()), 0);
  assert.equal(reportInterval(env("")), 0);
  assert.equal(reportInterval(env("soon")), 0);
  assert.equal(reportInterval(env("-5")), 0);
  assert.equal(reportInterval(env("1000")), 1000);
  const denied = () => {
    throw new Deno.errors.NotCapable("no env");
  };
  assert.equal(reportInterval(denied), 0, "no permission to read it: off");
});

Deno.test("the figures are the thread's memory in bytes", () => {
  const f = memoryFigures();
  assert.ok(f.rss > 0 && f.heap_used > 0 && f.heap_total >= f.heap_used && f.external >= 0);
});

Deno.test("started without the variable, nothing runs; with it, one timer, which its stop clears", () => {
  const real = { set: globalThis.setInterval, clear: globalThis.clearInterval };
  const started: (number | undefined)[] = [];
  const cleared: number[] = [];
  globalThis.setInterval = ((run: () => void, ms?: number) => {
    started.push(ms);
    return real.set(run, ms);
  }) as typeof setInterval;
  globalThis.clearInterval = ((id: number) => {
    cleared.push(id);
    real.clear(id);
  }) as typeof clearInterval;
  try {
    startMemoryReport(env(), 0)();
    assert.deepEqual(started, [], "no variable: no timer");
    const stop = startMemoryReport(env("60000"), 0);
    assert.deepEqual(started, [60000]);
    assert.deepEqual(cleared, []);
    stop();
    assert.equal(cleared.length, 1, "stopped");
  } finally {
    globalThis.setInterval = real.set;
    globalThis.clearInterval = real.clear;
  }
});
