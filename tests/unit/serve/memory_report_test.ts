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

Deno.test("started without the variable, nothing runs; with it, a timer that stops", () => {
  startMemoryReport(env(), 0)();
  startMemoryReport(env("60000"), 0)();
});
