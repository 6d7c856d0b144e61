/**
 * Client-chosen label values cannot grow the process: one tenant sends 10,000 distinct model ids
 * of 256 characters through an open pattern (`local-*`, which passes the client's id upstream) to
 * a gateway on two serving threads. `/metrics` stays under 1 MB with every id past the cap
 * counted under `other` (the folds counted exactly, the spend still equal to the ledger's), and
 * the process's resident memory, read once it is quiet and while it is scraped, stays within
 * 60 MB of what it was before the ids.
 *
 * Without the bounds, on a loaded 2-core machine: /metrics was 79 MB (4 s a scrape) and the process
 * 830 MB above its start while scraped. With them: ~800 KB in tens of ms, and ~10-40 MB. The test
 * takes ~20-30 s there (two bursts of 10,000 calls, then waits for the process to go quiet).
 */
import assert from "node:assert/strict";
import { eventually, startStack, usageOf } from "./helpers/setup.ts";
import { DEFAULT_METRICS_MODELS } from "../src/config/schema.ts";

const ADMIN = "metric-bounds-admin-token-0123456789";
const IDS = 10_000;
const CONCURRENCY = 24;
/** Calls on one id first: the heap grows to its working size for this load. */
const WARM = IDS;
/** The longest model id a client may send (`MAX_MODEL_ID`). */
const ID_LENGTH = 256;
/** Resident memory the ids may add, MB (GC timing on a loaded machine moves it by ~40 MB). */
const RSS_GROWTH_MB = 60;

const skip = Deno.build.os !== "linux";

/** A process's resident memory, MB. */
async function rssOf(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** RSS once it has held within 2 MB for 3 s (at most 45 s). */
async function stillRss(pid: number): Promise<number> {
  let last = await rssOf(pid);
  let still = Date.now();
  for (const until = Date.now() + 45_000; Date.now() < until && Date.now() - still < 3000;) {
    await sleep(250);
    const now = await rssOf(pid);
    if (Math.abs(now - last) > 2) still = Date.now();
    last = now;
  }
  return last;
}

/**
 * RSS once the quiet process is at most `below` MB, or 45 s on: the memory trim (`memory_trim.ts`)
 * and V8's collection of an idle heap give back what a burst used within seconds.
 */
async function rssDownTo(pid: number, below: number): Promise<number> {
  let now = await rssOf(pid);
  for (const until = Date.now() + 45_000; now > below && Date.now() < until;) {
    await sleep(250);
    now = await rssOf(pid);
  }
  return now;
}

/** The `i`th distinct id: 256 characters, distinct in the first 128 (the kept part of a label). */
function idOf(i: number): string {
  const head = `local-${i}-`;
  return head + "m".repeat(ID_LENGTH - head.length);
}

/** Parses the exposition text into `name{labels}` → value (labels as written). */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** The values of label `label` in the series of `family` (its `_bucket`s and all). */
function labelValues(values: Map<string, number>, family: string, label: string): Set<string> {
  const out = new Set<string>();
  const pattern = new RegExp(`[{,]${label}="([^"]*)"`);
  for (const series of values.keys()) {
    if (!series.startsWith(family)) continue;
    const found = pattern.exec(series);
    if (found) out.add(found[1]);
  }
  return out;
}

/** The sum of every series of `family` whose labels include `labels`. */
function sum(values: Map<string, number>, family: string, labels = ""): number {
  let total = 0;
  for (const [series, n] of values) {
    if (series.startsWith(`${family}{`) && series.includes(labels)) total += n;
  }
  return total;
}

Deno.test({
  name:
    "10,000 distinct model ids through an open pattern: /metrics under 1 MB, the rest folded and counted, RSS bounded",
  ignore: skip,
  async fn() {
    const stack = await startStack({
      workers: 2,
      admin: { token: ADMIN },
      models: { "local-*": { provider: "local", price: { input: 1, output: 2 } } },
    });
    try {
      const { gateway } = stack;
      const { key } = await gateway.createKey("bounds-tenant", "--credit", "100", "--rpm", "0");
      const scrape = async () => {
        const res = await fetch(`${gateway.url}/metrics`, {
          headers: { authorization: `Bearer ${ADMIN}` },
        });
        assert.equal(res.status, 200);
        return await res.text();
      };
      const call = async (model: string) => {
        const res = await fetch(`${gateway.url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
        });
        await res.body?.cancel();
        return res.status;
      };
      /** `count` calls, `CONCURRENCY` at a time; the statuses seen, with how many of each. */
      const burst = async (count: number, model: (i: number) => string) => {
        const statuses: Record<number, number> = {};
        let next = 0;
        const lane = async () => {
          while (next < count) {
            const status = await call(model(next++));
            statuses[status] = (statuses[status] ?? 0) + 1;
          }
        };
        await Promise.all(Array.from({ length: CONCURRENCY }, lane));
        return statuses;
      };
      // The process at its working size first: as many calls on the catalog's own id, a scrape.
      assert.deepEqual(await burst(WARM, () => "local-test"), { 200: WARM });
      await scrape();
      const start = await stillRss(gateway.pid);

      const started = Date.now();
      assert.deepEqual(await burst(IDS, idOf), { 200: IDS });
      const sendMs = Date.now() - started;
      const quiet = await rssDownTo(gateway.pid, start + RSS_GROWTH_MB / 3);

      // Three scrapes (as Prometheus makes), the process's memory read every 50 ms meanwhile.
      let peak = quiet;
      let scraping = true;
      const sampler = (async () => {
        while (scraping) {
          peak = Math.max(peak, await rssOf(gateway.pid));
          await sleep(50);
        }
      })();
      let text = "";
      const scrapeStarted = Date.now();
      try {
        for (let i = 0; i < 3; i++) text = await scrape();
      } finally {
        scraping = false;
        await sampler;
      }
      const scrapeMs = (Date.now() - scrapeStarted) / 3;
      peak = Math.max(peak, await rssOf(gateway.pid));
      console.log(
        `${IDS} ids in ${sendMs} ms; /metrics ${text.length} bytes in ${scrapeMs.toFixed(0)} ms; ` +
          `RSS ${start.toFixed(0)} MB before, ${quiet.toFixed(0)} after, ${
            peak.toFixed(0)
          } at most while scraped`,
      );

      // 100 ids of their own, each at most ~8 KB of text (two histograms of 17 lines): < 1 MB.
      assert.ok(text.length < 1024 * 1024, `/metrics is ${text.length} bytes`);
      const values = parse(text);
      // Besides the open ids: the catalog's, other, and none (requests no model was resolved for).
      const expected = new Set(["local-test", "other", ""]);
      const models = labelValues(values, "switchyard_requests_total", "model");
      for (const family of ["switchyard_requests_total", "switchyard_upstream_ttfb_seconds"]) {
        const seen = labelValues(values, family, "model");
        const open = [...seen].filter((model) => !expected.has(model));
        assert.equal(open.length, DEFAULT_METRICS_MODELS, `${family}: ${seen.size} models`);
        assert.ok(open.every((model) => model === idOf(Number(model.split("-")[1])).slice(0, 128)));
        assert.ok(seen.has("other"));
      }
      models.delete("");
      assert.deepEqual(labelValues(values, "switchyard_spend_nanousd_total", "model"), models);

      // Every observation past the cap is counted as folded: one per call in each family by
      // model (two in tokens: input and output).
      const folded = (family: string) =>
        values.get(
          `switchyard_metric_labels_folded_total{family="${family}",label="model"}`,
        );
      const past = IDS - DEFAULT_METRICS_MODELS;
      assert.equal(folded("switchyard_requests_total"), past);
      assert.equal(folded("switchyard_upstream_ttfb_seconds"), past);
      assert.equal(folded("switchyard_upstream_duration_seconds"), past);
      assert.equal(folded("switchyard_spend_nanousd_total"), past);
      assert.equal(folded("switchyard_tokens_total"), 2 * past);
      const other =
        'switchyard_requests_total{route="/v1/chat/completions",protocol="openai",model="other",provider="local",status="200"}';
      assert.equal(values.get(other), past);
      // Folded, not lost: the account's spend over every model is still the ledger's.
      const usage = await usageOf(gateway, key);
      await eventually(async () =>
        sum(parse(await scrape()), "switchyard_spend_nanousd_total", 'account="bounds-tenant"') ===
          usage.spent_nanousd
      );

      assert.ok(
        quiet - start < RSS_GROWTH_MB,
        `RSS ${quiet.toFixed(0)} MB once quiet, ${(quiet - start).toFixed(0)} MB above its start`,
      );
      assert.ok(
        peak - start < RSS_GROWTH_MB,
        `RSS ${peak.toFixed(0)} MB while scraped, ${(peak - start).toFixed(0)} MB above its start`,
      );
    } finally {
      await stack.stop();
    }
  },
});

Deno.test("server.metricsModels sets the cap; the catalog's own ids are kept past it", async () => {
  const stack = await startStack({
    admin: { token: ADMIN },
    server: { maxBodyBytes: 65536, metricsModels: 3 },
    models: { "local-*": { provider: "local", price: { input: 1, output: 2 } } },
  });
  try {
    const { gateway } = stack;
    const { key } = await gateway.createKey("bounds-small", "--credit", "10", "--rpm", "0");
    const call = async (model: string) => {
      const res = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
      });
      await res.body?.cancel();
      assert.equal(res.status, 200);
    };
    for (let i = 0; i < 5; i++) await call(`local-small-${i}`);
    // Past the cap, an id of the catalog (never called before) still has its own series.
    await call("local-test");
    const res = await fetch(`${gateway.url}/metrics`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    const values = parse(await res.text());
    assert.deepEqual(
      [...labelValues(values, "switchyard_requests_total", "model")].sort(),
      ["local-small-0", "local-small-1", "local-small-2", "local-test", "other"],
    );
    assert.equal(
      values.get(
        'switchyard_metric_labels_folded_total{family="switchyard_requests_total",label="model"}',
      ),
      2,
    );
  } finally {
    await stack.stop();
  }
});
