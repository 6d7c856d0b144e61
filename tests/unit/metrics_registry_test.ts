/** The metrics registry: counters, cumulative histogram buckets, merging threads, label escaping. */
import assert from "node:assert/strict";
import { type Family, MAX_SERIES, merge, Registry, render } from "../../src/metrics/registry.ts";

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

Deno.test("a family keeps a bounded number of label sets; long values are cut", () => {
  const r = new Registry([COUNT]);
  for (let i = 0; i < MAX_SERIES + 5; i++) r.add(COUNT, [`k${i}`, "v"]);
  assert.equal(Object.keys(r.samples.c_total).length, MAX_SERIES + 1);
  assert.equal(r.samples.c_total["other\u0000other"], 5);
  const long = new Registry([COUNT]);
  long.add(COUNT, ["y".repeat(1000), "v"]);
  assert.equal(Object.keys(long.samples.c_total)[0], `${"y".repeat(128)}\u0000v`);
});
