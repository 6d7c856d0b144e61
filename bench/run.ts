/**
 * `deno task bench`: the same load — `wrk`, 2 threads — against the emulator directly, a bare
 * Deno.serve + fetch proxy, the floor proxy (the least a gateway with our guarantees does: see
 * `floor_proxy.ts`) and the full gateway (auth, RPM, validation, reservation, ledger, access
 * log), one gateway process per `serve --workers N` setting, in every scenario; then the memory
 * scenario. Prints requests/s, p50/p99 latency, errors, the gateway's CPU time per request, the
 * gateway/bare-proxy ratios, the latency the gateway adds at one connection, its peak RSS and the
 * memory figures. Settings (environment): see `settings.ts` and docs/benchmark.md.
 */
import { estimateSeconds, SETTINGS } from "./settings.ts";
import { type Call, FLOOR_KEY, type Scenario, scenarios, UPSTREAM_HEADERS } from "./scenarios.ts";
import { type Gateway, type Setup, startGateway, startSetup, workersFlagMissing } from "./stack.ts";
import { measure, type Measurement, median, type Target } from "./measure.ts";
import { memoryScenario } from "./memory.ts";
import {
  addedLatencyLines,
  limitLines,
  memoryLines,
  ratioLines,
  type Row,
  table,
} from "./report.ts";
import { memoryMiB, stopServer } from "./procs.ts";
import { wrk } from "./wrk.ts";

async function requireWrk(): Promise<void> {
  try {
    await new Deno.Command("wrk", { args: ["--version"], stdout: "null", stderr: "null" })
      .output();
  } catch {
    console.error("deno task bench needs wrk (Debian: apt-get install -y wrk).");
    Deno.exit(1);
  }
}

function progress(text: string): void {
  console.error(`… ${text}`);
}

/** One target of a scenario, as a table row stands for it. */
interface Subject {
  row: Omit<Row, "scenario" | "load" | "p50AtOne">;
  target: Target;
}

function targetOf(base: string, call: Call, extra: Record<string, string>, pid?: number): Target {
  return {
    url: base + call.path,
    headers: { "content-type": "application/json", ...extra, ...call.headers },
    body: JSON.stringify(call.body),
    pid,
  };
}

function subjects(scenario: Scenario, setup: Setup, gateways: Gateway[]): Subject[] {
  const local = (port: number) => `http://127.0.0.1:${port}`;
  return [
    {
      row: { target: "emulator direct" },
      target: targetOf(setup.emulatorUrl, scenario.upstream, UPSTREAM_HEADERS),
    },
    {
      row: { target: "bare proxy" },
      target: targetOf(local(setup.proxy.port), scenario.upstream, {}, setup.proxy.pid),
    },
    {
      row: { target: "floor proxy" },
      target: targetOf(
        local(setup.floor.port),
        scenario.upstream,
        { authorization: `Bearer ${FLOOR_KEY}` },
        setup.floor.pid,
      ),
    },
    ...gateways.map((g) => ({
      row: { target: "gateway" as const, workers: g.workers },
      target: targetOf(local(g.server.port), scenario.gateway, {}, g.server.pid),
    })),
  ];
}

/**
 * Warms each target up, then measures them in turn, BENCH_RUNS times (interleaved, so that a
 * disturbance hits all targets alike), then at one connection; the medians make the rows.
 */
async function runScenario(scenario: Scenario, setup: Setup, gateways: Gateway[]) {
  const all = subjects(scenario, setup, gateways);
  const load = { threads: 2, connections: SETTINGS.concurrency, seconds: SETTINGS.seconds };
  const one = { threads: 1, connections: 1, seconds: SETTINGS.latencySeconds };
  for (const s of all) await wrk(s.target, { ...load, seconds: SETTINGS.warmupSeconds });
  const runs = all.map(() => [] as Measurement[]);
  const atOne = all.map(() => [] as Measurement[]);
  for (let run = 0; run < SETTINGS.runs; run++) {
    for (const [i, s] of all.entries()) runs[i].push(await measure(s.target, load));
    for (const [i, s] of all.entries()) {
      if (s.row.target !== "emulator direct") atOne[i].push(await measure(s.target, one));
    }
  }
  return all.map((s, i): Row => ({
    ...s.row,
    scenario: scenario.name,
    load: median(runs[i]),
    p50AtOne: atOne[i].length ? median(atOne[i]).p50 : undefined,
  }));
}

/** One gateway per BENCH_WORKERS entry (just one, flagless, while `serve` lacks --workers). */
async function* eachGateway(setup: Setup, profile?: string): AsyncGenerator<Gateway> {
  let started = 0;
  for (const workers of SETTINGS.workers) {
    if (workersFlagMissing() && started) {
      console.log(`note: workers=${workers} skipped (no --workers flag)`);
      continue;
    }
    progress(`starting a gateway, workers=${workers}`);
    yield await startGateway(setup, workers, profile);
    started++;
  }
}

async function throughput(setup: Setup, selected: Scenario[]): Promise<string[]> {
  const gateways: Gateway[] = [];
  for await (const g of eachGateway(setup, SETTINGS.profile)) gateways.push(g);
  try {
    const rows: Row[] = [];
    for (const [i, scenario] of selected.entries()) {
      progress(`[${i + 1}/${selected.length}] ${scenario.name}`);
      rows.push(...await runScenario(scenario, setup, gateways));
    }
    const peaks = gateways.map((g) =>
      `workers=${g.workers} ${memoryMiB(g.server.pid, "VmHWM").toFixed(1)} MiB`
    );
    return [
      table(rows),
      "",
      ...ratioLines(rows),
      ...limitLines(rows),
      ...addedLatencyLines(rows),
      `gateway peak RSS (VmHWM, summed over its processes): ${peaks.join(", ")}`,
    ];
  } finally {
    await Promise.all(gateways.map((g) => stopServer(g.server)));
  }
}

async function memory(setup: Setup): Promise<string[]> {
  const lines: string[] = [];
  for await (const gateway of eachGateway(setup)) {
    progress(`memory scenario, workers=${gateway.workers}`);
    try {
      const result = await memoryScenario({
        gateway: gateway.server,
        emulator: setup.emulator,
        emulatorUrl: setup.emulatorUrl,
        key: setup.key,
        streams: SETTINGS.streams,
        concurrency: SETTINGS.concurrency,
      });
      lines.push("", ...memoryLines(gateway.workers, result));
    } finally {
      await stopServer(gateway.server);
    }
  }
  return lines;
}

function header(selected: Scenario[], withMemory: boolean): string {
  const s = SETTINGS;
  const minutes = Math.ceil(estimateSeconds(selected.length, withMemory) / 60);
  return `${s.seconds} s per run, median of ${s.runs}, ${s.concurrency} connections (wrk -t2), ` +
    `${s.warmupSeconds} s warm-up per target, ${s.latencySeconds} s at one connection; ` +
    `gateway workers ${s.workers.join(",")}; store ${s.store}; key rpm ${s.rpm || "unlimited"}; ` +
    `${selected.length} scenarios` +
    (withMemory ? ` + memory (${s.streams} streams)` : "") + `; about ${minutes} min`;
}

async function main(): Promise<void> {
  await requireWrk();
  const setup = await startSetup();
  try {
    const selected = scenarios(setup.key, setup.limitedKey).filter((s) =>
      s.name.includes(SETTINGS.only)
    );
    const withMemory = "memory".includes(SETTINGS.only);
    console.log(header(selected, withMemory) + "\n");
    const lines = selected.length ? await throughput(setup, selected) : [];
    if (withMemory) lines.push(...await memory(setup));
    console.log(lines.join("\n"));
  } finally {
    await Promise.all([setup.proxy, setup.floor, setup.emulator].map(stopServer));
    await setup.postgres?.stop();
    await Deno.remove(setup.dir, { recursive: true });
  }
}

await main();
