/**
 * The metrics registry: counters, cumulative histogram buckets, merging threads, label escaping;
 * its bounds: series per family, distinct values of a capped label (folded into `other` and
 * counted), shared by several threads' registries.
 */
import assert from "node:assert/strict";
import {
  ALL_LABELS,
  type Family,
  FOLDED,
  type LabelCap,
  linesPerSeries,
  MAX_LINES,
  merge,
  OTHER,
  Registry,
  render,
} from "../../../src/metrics/registry.ts";
import { Bounds } from "../../../src/metrics/bounds.ts";

const COUNT: Family = { name: "c_total", help: "A count.", type: "counter", labels: ["a", "b"] };
const TIME: Family = {
  name: "t_seconds",
  help: "A time.",
  type: "histogram",
  labels: ["a"],
  buckets: [0.1, 1],
};

Deno.test("counters and histograms render in the exposition format; threads add up", () => {
  const one = new Registry([COUNT, TIME]);
  const two = new Registry([COUNT, TIME]);
  one.add(COUNT, ["x", 'say "hi"\n']);
  two.add(COUNT, ["x", 'say "hi"\n'], 2);
  one.observe(TIME, ["x"], 0.05);
  two.observe(TIME, ["x"], 0.5);
  two.observe(TIME, ["x"], 5);
  const text = render([COUNT, TIME], merge([one.samples, two.samples]));
  assert.equal(
    text,
    [
      "# HELP c_total A count.",
      "# TYPE c_total counter",
      'c_total{a="x",b="say \\"hi\\"\\n"} 3',
      "# HELP t_seconds A time.",
      "# TYPE t_seconds histogram",
      't_seconds_bucket{a="x",le="0.1"} 1',
      't_seconds_bucket{a="x",le="1"} 2',
      't_seconds_bucket{a="x",le="+Inf"} 3',
      't_seconds_sum{a="x"} 5.55',
      't_seconds_count{a="x"} 3',
      "",
    ].join("\n"),
  );
  assert.equal(
    one.samples.c_total[`x\u0000say "hi"\n`],
    1,
    "merging leaves the parts as they were",
  );
});

/** A family's series: their label values, by key. */
function seriesOf(registry: Registry, family: Family): string[][] {
  return Object.keys(registry.samples[family.name]).map((key) => key.split("\u0000"));
}

/** What `FOLDED` counted for `family` and `label`. */
function folded(samples: Record<string, Record<string, unknown>>, family: Family, label: string) {
  return samples[FOLDED.name][`${family.name}\u0000${label}`] ?? 0;
}

Deno.test("a family keeps at most MAX_LINES lines of series; past them, label sets fold into other", () => {
  const r = new Registry([COUNT, TIME]);
  for (let i = 0; i < MAX_LINES + 5; i++) r.add(COUNT, [`k${i}`, "v"]);
  assert.equal(seriesOf(r, COUNT).length, MAX_LINES + 1);
  assert.equal(r.samples.c_total[`${OTHER}\u0000${OTHER}`], 5);
  assert.equal(folded(r.samples, COUNT, ALL_LABELS), 5);
  // A histogram series writes its buckets, +Inf, _sum and _count: fewer series fit.
  const histograms = Math.floor(MAX_LINES / linesPerSeries(TIME));
  assert.equal(linesPerSeries(TIME), 5);
  for (let i = 0; i < histograms + 3; i++) r.observe(TIME, [`k${i}`], 0.5);
  assert.equal(seriesOf(r, TIME).length, histograms + 1);
  assert.equal((r.samples.t_seconds[OTHER] as { count: number }).count, 3);
  assert.equal(folded(r.samples, TIME, ALL_LABELS), 3);
  // Existing series are still counted into.
  r.add(COUNT, ["k0", "v"], 2);
  assert.equal(r.samples.c_total["k0\u0000v"], 3);
  // Each family: its two comment lines, at most MAX_LINES of series and the `other` series.
  const lines = render([COUNT, TIME], r.samples).trimEnd().split("\n").length;
  const most = (2 + MAX_LINES + 1) + (2 + MAX_LINES + linesPerSeries(TIME));
  assert.ok(lines <= most, `${lines} lines, ${most} at most`);
});

Deno.test("long label values are cut to 128 characters", () => {
  const long = new Registry([COUNT]);
  long.add(COUNT, ["y".repeat(1000), "v"]);
  assert.equal(Object.keys(long.samples.c_total)[0], `${"y".repeat(128)}\u0000v`);
});

const MODEL_COUNT: Family = {
  name: "m_total",
  help: "By model and kind.",
  type: "counter",
  labels: ["model", "kind"],
};
const MODEL_TIME: Family = {
  name: "m_seconds",
  help: "By provider and model.",
  type: "histogram",
  labels: ["provider", "model"],
  buckets: [1],
};
const CAPS: LabelCap[] = [{ label: "model", max: 3, pinned: (id) => id.startsWith("catalog-") }];

Deno.test("a capped label keeps its first max values across families; later ones fold, counted", () => {
  const r = new Registry([MODEL_COUNT, MODEL_TIME], CAPS);
  for (let i = 0; i < 10; i++) r.add(MODEL_COUNT, [`open-${i}`, "input"], 100);
  // Pinned values (the catalog's own ids) are kept, and take none of the room.
  r.add(MODEL_COUNT, ["catalog-a", "input"], 7);
  r.add(MODEL_COUNT, ["catalog-b", "input"], 7);
  assert.deepEqual(
    seriesOf(r, MODEL_COUNT).map(([model]) => model).sort(),
    ["catalog-a", "catalog-b", "open-0", "open-1", "open-2", OTHER],
  );
  // Only the capped label is folded: the others keep their values.
  assert.equal(r.samples.m_total[`${OTHER}\u0000input`], 700);
  assert.equal(folded(r.samples, MODEL_COUNT, "model"), 7);
  r.add(MODEL_COUNT, ["open-9", "output"], 1);
  assert.equal(r.samples.m_total[`${OTHER}\u0000output`], 1);
  assert.equal(folded(r.samples, MODEL_COUNT, "model"), 8, "a folded value stays folded");
  // The cap is the label's, not the family's: the admitted values are kept in the histogram too,
  // the others folded there as well.
  r.observe(MODEL_TIME, ["p", "open-1"], 0.5);
  r.observe(MODEL_TIME, ["p", "open-5"], 0.5);
  r.observe(MODEL_TIME, ["p", "open-6"], 2);
  assert.deepEqual(seriesOf(r, MODEL_TIME).map(([, model]) => model).sort(), ["open-1", OTHER]);
  assert.deepEqual(r.samples.m_seconds[`p\u0000${OTHER}`], { buckets: [1], sum: 2.5, count: 2 });
  assert.equal(folded(r.samples, MODEL_TIME, "model"), 2);
  const text = render([MODEL_COUNT, MODEL_TIME, FOLDED], r.samples);
  assert.match(
    text,
    /^switchyard_metric_labels_folded_total\{family="m_total",label="model"\} 8$/m,
  );
  assert.match(text, /^m_seconds_count\{provider="p",model="other"\} 2$/m);
});

Deno.test("threads sharing their bounds keep the caps for their values added up", () => {
  const families = [MODEL_COUNT, MODEL_TIME];
  const one = new Registry(families, CAPS);
  const two = new Registry(families, CAPS);
  const three = new Registry(families, CAPS);
  two.share(CAPS, one.bounds);
  three.share(CAPS, one.bounds);
  one.add(MODEL_COUNT, ["open-a", "input"]);
  two.add(MODEL_COUNT, ["open-b", "input"]);
  three.add(MODEL_COUNT, ["open-c", "input"]);
  // The label has all its values: every thread folds the next ones, and keeps the others'.
  for (const [i, r] of [one, two, three].entries()) {
    r.add(MODEL_COUNT, [`open-new-${i}`, "input"]);
    r.add(MODEL_COUNT, ["open-a", "output"]);
    r.observe(MODEL_TIME, ["p", "open-c"], 0.5);
  }
  const all = merge([one.samples, two.samples, three.samples]);
  const models = new Set(Object.keys(all.m_total).map((key) => key.split("\u0000")[0]));
  assert.deepEqual([...models].sort(), ["open-a", "open-b", "open-c", OTHER]);
  assert.equal(all.m_total[`open-a\u0000output`], 3);
  assert.equal(all.m_total[`${OTHER}\u0000input`], 3);
  assert.equal(folded(all, MODEL_COUNT, "model"), 3);
  assert.deepEqual(all.m_seconds[`p\u0000open-c`], { buckets: [3], sum: 1.5, count: 3 });
  // Without sharing, each thread would have kept its own three.
  const alone = [new Registry(families, CAPS), new Registry(families, CAPS)];
  for (const [i, r] of alone.entries()) {
    for (let j = 0; j < 3; j++) r.add(MODEL_COUNT, [`open-${i}-${j}`, "input"]);
  }
  assert.equal(Object.keys(merge(alone.map((r) => r.samples)).m_total).length, 6);
});

Deno.test("the series bound is the threads' together; dropped series give their room back", () => {
  const one = new Registry([COUNT]);
  const two = new Registry([COUNT]);
  two.share([], one.bounds);
  const half = MAX_LINES / 2;
  for (let i = 0; i < half; i++) one.add(COUNT, [`a${i}`, "v"]);
  for (let i = 0; i < half + 10; i++) two.add(COUNT, [`b${i}`, "v"]);
  assert.equal(seriesOf(two, COUNT).length, half + 1);
  assert.equal(folded(two.samples, COUNT, ALL_LABELS), 10);
  one.add(COUNT, ["a-late", "v"]);
  assert.equal(one.samples.c_total[`${OTHER}\u0000${OTHER}`], 1, "full for every thread");
  // A thread that drops series (the recent window does) makes room for any thread's.
  one.retain(COUNT, ([name]) => !name.startsWith("a"));
  two.add(COUNT, ["b-late", "v"]);
  assert.equal(two.samples.c_total["b-late\u0000v"], 1);
});

Deno.test("a series dropped and added again is made again within the bounds, from zero", () => {
  const registry = new Registry([COUNT]);
  registry.add(COUNT, ["x", "y"], 5);
  registry.add(COUNT, ["x", "y"]);
  assert.equal(registry.samples.c_total["x\u0000y"], 6, "the same series, found by its values");
  registry.retain(COUNT, () => false);
  assert.deepEqual(seriesOf(registry, COUNT), []);
  // With the series bound full meanwhile, the values go to the one series a full family keeps.
  for (let i = 0; i < MAX_LINES; i++) registry.add(COUNT, [`f${i}`, "v"]);
  registry.add(COUNT, ["x", "y"], 2);
  assert.equal(registry.samples.c_total["x\u0000y"], undefined, "not made past the bound");
  assert.equal(registry.samples.c_total[`${OTHER}\u0000${OTHER}`], 2);
  // Room again: made anew, from zero.
  registry.retain(COUNT, () => false);
  registry.add(COUNT, ["x", "y"], 3);
  assert.equal(registry.samples.c_total["x\u0000y"], 3);
});

Deno.test("series recorded before the bounds are shared count against them", () => {
  const caps: LabelCap[] = [{ label: "model", max: 2 }];
  const early = new Registry([MODEL_COUNT], caps);
  early.add(MODEL_COUNT, ["open-early", "input"]);
  const other = new Registry([MODEL_COUNT], caps);
  other.add(MODEL_COUNT, ["open-x", "input"]);
  early.share(caps, other.bounds);
  early.add(MODEL_COUNT, ["open-y", "input"]);
  assert.deepEqual(
    seriesOf(early, MODEL_COUNT).map(([model]) => model).sort(),
    ["open-early", OTHER],
  );
  // Sharing the same bounds again counts nothing twice.
  early.share(caps, other.bounds);
  other.add(MODEL_COUNT, ["open-early", "output"]);
  assert.equal(other.samples.m_total["open-early\u0000output"], 1);
});

Deno.test("threads admitting values at once agree: exactly max values, the same in every thread", async () => {
  const max = 100;
  const bounds = new Bounds([], [max]);
  const values = Array.from({ length: 2000 }, (_, i) => `open-${i}-${"m".repeat(i % 200)}`);
  const go = new SharedArrayBuffer(4);
  const threads = Array.from({ length: 4 }, (_, t) => {
    const worker = new Worker(new URL("../../helpers/bounds_worker.ts", import.meta.url), {
      type: "module",
    });
    // Each thread in its own order: one forwards, one backwards, two from the middle.
    const order = t === 0
      ? values
      : t === 1
      ? [...values].reverse()
      : [...values.slice(t * 500), ...values.slice(0, t * 500)];
    const ready = Promise.withResolvers<void>();
    const admitted = new Promise<string[]>((resolve) => {
      worker.onmessage = (event) => event.data === "ready" ? ready.resolve() : resolve(event.data);
    });
    worker.postMessage({ buffer: bounds.buffer, max, values: order, go });
    return { worker, ready: ready.promise, admitted };
  });
  await Promise.all(threads.map((t) => t.ready));
  Atomics.store(new Int32Array(go), 0, 1);
  Atomics.notify(new Int32Array(go), 0);
  try {
    const admitted = await Promise.all(threads.map((t) => t.admitted));
    const union = new Set(admitted.flat());
    assert.equal(union.size, max);
    assert.equal(bounds.admitted(0), max);
    // A thread asked for every value: it found each value another thread admitted, and no value
    // it was refused was admitted anywhere.
    for (const own of admitted) assert.deepEqual(new Set(own), union);
    assert.equal(bounds.admit(0, "open-late"), false);
    assert.equal(bounds.admit(0, [...union][0]), true);
  } finally {
    for (const { worker } of threads) worker.terminate();
  }
});
