/**
 * `deno task bench`: the same load — `wrk`, 2 threads — against the emulator directly, a bare
 * Deno.serve + fetch proxy, the floor proxy (the least a gateway with our guarantees does: see
 * `floor_proxy.ts`) and the full gateway (auth, RPM, validation, reservation, ledger, access
 * log), one gateway process per `serve --workers N` setting, in every scenario, and the peer
 * gateways (`peers.ts`) in the scenarios whose job they do; then the start scenario
 * (`cold_start.ts`) and the memory scenario. Prints requests/s, p50/p99 latency, errors, CPU time
 * per request and peak RSS, the shares of the bare proxy's requests/s, the gateway against the
 * best peer, the latency added at one connection, the cold starts and the memory figures.
 * Settings (environment): see `settings.ts` and docs/benchmark.md.
 */
import { estimateSeconds, SETTINGS } from "./settings.ts";
import {
  type Call,
  FEATURES_KEY,
  FLOOR_KEY,
  type Scenario,
  scenarios,
  UPSTREAM_HEADERS,
  UPSTREAM_KEY,
} from "./scenarios.ts";
import {
  type Gateway,
  type GatewayOptions,
  MODELS,
  type Setup,
  startBareProxy,
  startFloorProxy,
  startGateway,
  startSetup,
  workersFlagMissing,
} from "./stack.ts";
import { MemoryReports } from "./memory_detail.ts";
import { measure, type Measurement, median, type Target } from "./measure.ts";
import { memoryScenario, type StreamCost, streamCost } from "./memory.ts";
import { startLines, type StartSubject, type StartTimes, timeStarts } from "./cold_start.ts";
import {
  addedLatencyLines,
  limitLines,
  memoryLines,
  peakLine,
  peerLines,
  ratioLines,
  type Row,
  streamCostLines,
  table,
} from "./report.ts";
import { memoryMiB, resetPeak, stopServer } from "./procs.ts";
import { type RunningPeer, startPeers } from "./peers.ts";
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
  row: Omit<Row, "scenario" | "load" | "p50AtOne" | "peakMiB">;
  target: Target;
}

/** The servers a scenario is run against, besides the emulator itself. */
interface Servers {
  setup: Setup;
  gateways: Gateway[];
  peers: RunningPeer[];
}

function targetOf(base: string, call: Call, extra: Record<string, string>, pid?: number): Target {
  return {
    url: base + call.path,
    headers: { "content-type": "application/json", ...extra, ...call.headers },
    body: JSON.stringify(call.body),
    pid,
  };
}

function subjects(scenario: Scenario, { setup, gateways, peers }: Servers): Subject[] {
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
    // JSON calls only (see `floor_features.ts`).
    ...(setup.features && scenario.name.endsWith(" JSON")
      ? [{
        row: { target: "floor + features" as const },
        target: targetOf(
          local(setup.features.port),
          scenario.upstream,
          { authorization: `Bearer ${FEATURES_KEY}` },
          setup.features.pid,
        ),
      }]
      : []),
    ...gateways.map((g) => ({
      row: { target: "gateway" as const, workers: g.workers },
      target: targetOf(local(g.server.port), scenario.gateway, {}, g.server.pid),
    })),
    ...peers.flatMap((p) => {
      const call = scenario.peers?.[p.id];
      return call
        ? [{
          row: { target: "peer" as const, peer: p.label },
          target: targetOf(local(p.server.port), call, {}, p.server.pid),
        }]
        : [];
    }),
  ];
}

/** Whether a peak RSS reset was refused (the peaks then count from each server's start). */
let peaksSinceStart = false;

/**
 * Warms each target up, then measures them in turn, BENCH_RUNS times (interleaved, so that a
 * disturbance hits all targets alike), then at one connection; the medians make the rows.
 */
async function runScenario(scenario: Scenario, servers: Servers) {
  const all = subjects(scenario, servers);
  for (const s of all) if (s.target.pid && !resetPeak(s.target.pid)) peaksSinceStart = true;
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
    peakMiB: s.target.pid ? memoryMiB(s.target.pid, "VmHWM") : undefined,
  }));
}

/** One gateway per BENCH_WORKERS entry (just one, flagless, while `serve` lacks --workers). */
async function* eachGateway(
  setup: Setup,
  options: GatewayOptions = {},
): AsyncGenerator<Gateway> {
  let started = 0;
  for (const workers of SETTINGS.workers) {
    if (workersFlagMissing() && started) {
      console.log(`note: workers=${workers} skipped (no --workers flag)`);
      continue;
    }
    progress(`starting a gateway, workers=${workers}`);
    yield await startGateway(setup, workers, options);
    started++;
  }
}

async function throughput(
  setup: Setup,
  peers: RunningPeer[],
  selected: Scenario[],
): Promise<string[]> {
  const gateways: Gateway[] = [];
  for await (const g of eachGateway(setup, { profile: SETTINGS.profile })) gateways.push(g);
  try {
    const rows: Row[] = [];
    for (const [i, scenario] of selected.entries()) {
      progress(`[${i + 1}/${selected.length}] ${scenario.name}`);
      rows.push(...await runScenario(scenario, { setup, gateways, peers }));
    }
    return [
      table(rows),
      "",
      ...ratioLines(rows),
      ...peerLines(rows),
      ...limitLines(rows),
      ...addedLatencyLines(rows),
      peakLine(rows),
      ...(peaksSinceStart
        ? ["note: Linux refused to reset a peak (clear_refs): some peaks count from the start"]
        : []),
    ];
  } finally {
    await Promise.all(gateways.map((g) => stopServer(g.server)));
  }
}

/**
 * The same slow streams on fresh proxies with the gateway's V8 flags: the bare proxy (Deno moves
 * the upstream body without JavaScript), the bare proxy with `--relay` (each chunk read and re-sent
 * from JavaScript, nothing else) and the floor proxy (the guarantees) — the floors under the
 * gateway's memory per open stream.
 */
async function memoryFloors(setup: Setup): Promise<string[]> {
  const flags = setup.permissions.filter((flag) => flag.startsWith("--v8-flags="));
  const { dir, emulatorUrl } = setup;
  const json = { "content-type": "application/json" };
  const floors = [
    {
      label: "bare proxy",
      headers: json,
      start: () => startBareProxy(dir, emulatorUrl, { flags }),
    },
    {
      label: "JS relay (bare proxy --relay)",
      headers: json,
      start: () => startBareProxy(dir, emulatorUrl, { flags, relay: true }),
    },
    {
      label: "floor proxy",
      headers: { ...json, authorization: `Bearer ${FLOOR_KEY}` },
      start: () => startFloorProxy(dir, emulatorUrl, "floor-memory", { flags }),
    },
  ];
  const costs: { label: string; cost: StreamCost }[] = [];
  for (const { label, headers, start } of floors) {
    progress(`memory per open stream: ${label}`);
    const server = await start();
    try {
      const target = {
        server,
        url: `http://127.0.0.1:${server.port}/openai/v1/responses`,
        headers,
        model: MODELS["gpt-bench"].upstream,
      };
      costs.push({ label, cost: await streamCost(target, memoryLoad(setup)) });
    } finally {
      await stopServer(server);
    }
  }
  return ["", ...streamCostLines(costs)];
}

function memoryLoad(setup: Setup) {
  return {
    emulator: setup.emulator,
    emulatorUrl: setup.emulatorUrl,
    streams: SETTINGS.streams,
    concurrency: SETTINGS.concurrency,
  };
}

async function memory(setup: Setup): Promise<string[]> {
  const lines = await memoryFloors(setup);
  const reports = SETTINGS.memoryDetail ? new MemoryReports() : undefined;
  for await (const gateway of eachGateway(setup, { reports })) {
    progress(`memory scenario, workers=${gateway.workers}`);
    reports?.clear();
    try {
      const result = await memoryScenario({
        ...memoryLoad(setup),
        gateway: gateway.server,
        key: setup.key,
        reports,
      });
      lines.push("", ...memoryLines(gateway.workers, result));
    } finally {
      await stopServer(gateway.server);
    }
  }
  return lines;
}

/**
 * The start scenario (`cold_start.ts`): the bare proxy, the floor proxy and each gateway started
 * afresh, each timed to its first answered chat JSON call.
 */
async function starts(setup: Setup, chatJson: Scenario): Promise<string[]> {
  const { dir, emulatorUrl } = setup;
  const upstreamCall = (extra: Record<string, string>) => targetOf("", chatJson.upstream, extra);
  let floors = 0;
  const subjects: StartSubject[] = [
    {
      label: "bare proxy",
      start: () => startBareProxy(dir, emulatorUrl),
      call: upstreamCall({}),
    },
    {
      label: "floor proxy",
      start: () => startFloorProxy(dir, emulatorUrl, `floor-start-${++floors}`),
      call: upstreamCall({ authorization: `Bearer ${FLOOR_KEY}` }),
    },
    ...SETTINGS.workers.map((workers): StartSubject => ({
      label: `gateway workers=${workers}`,
      start: async () => (await startGateway(setup, workers)).server,
      call: targetOf("", chatJson.gateway, {}),
    })),
  ];
  const results: StartTimes[] = [];
  for (const subject of subjects) {
    progress(`cold start: ${subject.label}, ${SETTINGS.starts} times`);
    results.push(await timeStarts(subject, SETTINGS.starts));
  }
  return ["", ...startLines(results)];
}

function header(
  selected: Scenario[],
  peers: RunningPeer[],
  withMemory: boolean,
  withStarts: boolean,
): string {
  const s = SETTINGS;
  const peerRuns = selected.reduce((n, sc) => n + peers.filter((p) => sc.peers?.[p.id]).length, 0);
  const minutes = Math.ceil(
    estimateSeconds(selected.length, peerRuns, withMemory, withStarts) / 60,
  );
  return `${s.seconds} s per run, median of ${s.runs}, ${s.concurrency} connections (wrk -t2), ` +
    `${s.warmupSeconds} s warm-up per target, ${s.latencySeconds} s at one connection; ` +
    `gateway workers ${s.workers.join(",")}; store ${s.store}; key rpm ${s.rpm || "unlimited"}; ` +
    `peers ${peers.map((p) => p.label).join(", ") || "none"}; ${selected.length} scenarios` +
    (withMemory ? ` + memory (${s.streams} streams)` : "") +
    (withStarts ? ` + cold start (${s.starts} starts each)` : "") + `; about ${minutes} min`;
}

async function main(): Promise<void> {
  await requireWrk();
  const setup = await startSetup();
  let peers: RunningPeer[] = [];
  try {
    const all = scenarios(setup.key, setup.limitedKey, setup.emulatorUrl);
    const selected = all.filter((s) => s.name.includes(SETTINGS.only));
    const wanted = SETTINGS.peers.filter((id) => selected.some((s) => s.peers?.[id]));
    if (wanted.length) progress(`installing (first time only) and starting ${wanted.join(", ")}`);
    const started = await startPeers(
      wanted,
      { url: setup.emulatorUrl, key: UPSTREAM_KEY },
      setup.dir,
    );
    peers = started.peers;
    for (const note of started.notes) console.log(`note: ${note}`);
    const withMemory = "memory".includes(SETTINGS.only);
    const withStarts = "start".includes(SETTINGS.only);
    console.log(header(selected, peers, withMemory, withStarts) + "\n");
    const lines = selected.length ? await throughput(setup, peers, selected) : [];
    if (withStarts) lines.push(...await starts(setup, all.find((s) => s.name === "chat JSON")!));
    if (withMemory) lines.push(...await memory(setup));
    console.log(lines.join("\n"));
  } finally {
    const proxies = [setup.proxy, setup.floor, ...(setup.features ? [setup.features] : [])];
    await Promise.all([...proxies, setup.emulator, ...peers.map((p) => p.server)].map(stopServer));
    await setup.postgres?.stop();
    await Deno.remove(setup.dir, { recursive: true });
  }
}

await main();
