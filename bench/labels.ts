/**
 * `deno run -A bench/labels.ts`: what many distinct client-chosen model ids cost the gateway.
 * Starts the emulator and a gateway (`tests/helpers/setup.ts`) whose catalog has an open pattern,
 * `local-*` (the emulator's keyless `local` provider answers any id). It first sends `WARM` calls
 * naming one id, so the process is at its working size, then `IDS` calls naming distinct ids, on
 * `/v1/chat/completions`, `CONCURRENCY` at a time; and prints, as one JSON line: the gateway's
 * resident memory (MB, `/proc/<pid>/status`, read once it held still for `QUIET_MS`, so after the
 * trim of `serve/memory_trim.ts`) before the distinct ids, at their peak, after them and after a
 * scrape of `/metrics`; the scrape's size, lines and time; and the folded-label counts.
 *
 * Environment: `IDS` (10000), `ID_LENGTH` (256, the longest id a client may send), `CONCURRENCY`
 * (24), `WARM` (as many as `IDS`), `WORKERS` (serving threads, 1), `QUIET_MS` (6000), `SAME=1`
 * (the control: every call names the same id).
 */
import { startStack } from "../tests/helpers/setup.ts";

const ADMIN = "labels-bench-admin-token-0123456789";
const IDS = Number(Deno.env.get("IDS") ?? 10_000);
const ID_LENGTH = Number(Deno.env.get("ID_LENGTH") ?? 256);
const CONCURRENCY = Number(Deno.env.get("CONCURRENCY") ?? 24);
const WORKERS = Number(Deno.env.get("WORKERS") ?? 1);
const QUIET_MS = Number(Deno.env.get("QUIET_MS") ?? 6000);
/** `SAME=1`: every call names one id (the control: a burst of as many calls, no distinct ids). */
const SAME = Deno.env.get("SAME") === "1";
const WARM = Number(Deno.env.get("WARM") ?? IDS);

/** A process's resident memory, MB. */
async function rssOf(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

/** RSS once it held within 2 MB for `QUIET_MS` (the trim after a burst has run), at most 60 s. */
async function settledRss(pid: number): Promise<number> {
  let last = await rssOf(pid);
  let stableSince = Date.now();
  const until = Date.now() + 60_000;
  while (Date.now() < until && Date.now() - stableSince < QUIET_MS) {
    await new Promise((r) => setTimeout(r, 500));
    const now = await rssOf(pid);
    if (Math.abs(now - last) > 2) stableSince = Date.now();
    last = now;
  }
  return last;
}

/** The `i`th distinct id: `local-<i>-` padded to `ID_LENGTH` characters. */
function idOf(i: number): string {
  const head = `local-${SAME ? 0 : i}-`;
  return head + "m".repeat(Math.max(0, ID_LENGTH - head.length));
}

const stack = await startStack({
  workers: WORKERS,
  admin: { token: ADMIN },
  models: { "local-*": { provider: "local", price: { input: 1, output: 2 } } },
});
try {
  const { gateway } = stack;
  const { key } = await gateway.createKey("labels-bench", "--credit", "1000", "--rpm", "0");
  const call = async (model: string) => {
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 8 }),
    });
    await res.body?.cancel();
    return res.status;
  };
  /** Sends `count` calls, `CONCURRENCY` at a time, the `i`th naming `model(i)`. */
  const burst = async (count: number, model: (i: number) => string) => {
    let next = 0;
    const lane = async () => {
      while (next < count) {
        const status = await call(model(next++));
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (next % 1000 === 0) peak = Math.max(peak, await rssOf(gateway.pid));
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  };
  const statuses = new Map<number, number>();
  let peak = 0;
  // Warm up on one id as many calls as the run's, so "before" is a process at its working size.
  await burst(WARM, () => idOf(0));
  statuses.clear();
  const before = await settledRss(gateway.pid);
  const started = performance.now();
  peak = before;
  await burst(IDS, idOf);
  const sendSeconds = (performance.now() - started) / 1000;
  const after = await settledRss(gateway.pid);
  const scrapeStarted = performance.now();
  const res = await fetch(`${gateway.url}/metrics`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  const body = await res.text();
  const scrapeMs = performance.now() - scrapeStarted;
  const afterScrape = await settledRss(gateway.pid);
  const folded = body.split("\n").filter((l) => l.startsWith("switchyard_metric_labels_folded"));
  console.log(JSON.stringify({
    ids: IDS,
    warm: WARM,
    idLength: ID_LENGTH,
    concurrency: CONCURRENCY,
    workers: WORKERS,
    statuses: Object.fromEntries(statuses),
    sendSeconds: Math.round(sendSeconds * 10) / 10,
    rssBeforeMB: Math.round(before),
    rssPeakMB: Math.round(peak),
    rssAfterMB: Math.round(after),
    rssAfterScrapeMB: Math.round(afterScrape),
    metricsBytes: body.length,
    metricsLines: body.split("\n").length,
    scrapeMs: Math.round(scrapeMs),
    folded,
  }));
} finally {
  await stack.stop();
}
