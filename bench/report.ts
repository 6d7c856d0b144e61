/**
 * The printed report: the table, the ratio lines (of the bare proxy, of the best peer),
 * added-latency lines, memory figures.
 */
import type { Measurement } from "./measure.ts";
import {
  type MemoryDetail,
  type MemoryResult,
  PEAK_BAR_MIB,
  perOpenStream,
  SETTLE_BAR_MIB,
  type Settled,
  type StreamCost,
} from "./memory.ts";
import { type MemoryPoint, perStream } from "./memory_detail.ts";

/** The figures of one target in one scenario. */
export interface Row {
  scenario: string;
  target:
    | "emulator direct"
    | "bare proxy"
    | "floor proxy"
    | "floor + features"
    | "gateway"
    | "peer";
  /** The gateway's workers (undefined for the other targets). */
  workers?: number;
  /** A peer's name and version (undefined for the other targets). */
  peer?: string;
  load: Measurement;
  /** p50 at one connection, ms (not measured for the emulator direct). */
  p50AtOne?: number;
  /** The peak RSS while the scenario ran (VmHWM summed over the processes), MiB. */
  peakMiB?: number;
}

const fixed = (value: number, digits: number) => Number.isNaN(value) ? "-" : value.toFixed(digits);

/** How a row's target is named in the report. */
const named = (r: Row) =>
  r.target === "peer" ? r.peer! : r.target === "gateway" ? `workers=${r.workers}` : r.target;

/** The peer of a scenario with the most requests/s (undefined without peers). */
function bestPeer(group: Row[]): Row | undefined {
  return group.filter((r) => r.target === "peer").sort((a, b) => b.load.rps - a.load.rps)[0];
}

/**
 * The big table: one line per scenario and target; the last column is the target's requests/s
 * over the best peer's, in the scenarios a peer ran.
 */
export function table(rows: Row[]): string {
  const head = ["scenario", "target", "workers", "req/s", "p50 ms", "p99 ms", "errors"];
  const lines = [[...head, "CPU µs/req", "peak RSS MiB", "× best peer"]];
  const best = new Map([...byScenario(rows)].map(([name, group]) => [name, bestPeer(group)]));
  for (const r of rows) {
    const peer = best.get(r.scenario);
    lines.push([
      r.scenario,
      r.target === "peer" ? r.peer! : r.target,
      r.workers === undefined ? "-" : String(r.workers),
      fixed(r.load.rps, 0),
      fixed(r.load.p50, 2),
      fixed(r.load.p99, 2),
      fixed(r.load.errors, 0),
      fixed(r.load.cpuUs, 0),
      fixed(r.peakMiB ?? NaN, 1),
      peer ? fixed(r.load.rps / peer.load.rps, 2) : "-",
    ]);
  }
  const widths = lines[0].map((_, i) => Math.max(...lines.map((l) => l[i].length)));
  const numeric = (i: number) => i >= 3;
  return lines.map((l) =>
    l.map((c, i) => numeric(i) ? c.padStart(widths[i]) : c.padEnd(widths[i])).join("  ")
  ).join("\n");
}

function byScenario(rows: Row[]): Map<string, Row[]> {
  const groups = new Map<string, Row[]>();
  for (const r of rows) groups.set(r.scenario, [...(groups.get(r.scenario) ?? []), r]);
  return groups;
}

const find = (rows: Row[], target: Row["target"]) => rows.find((r) => r.target === target);

/**
 * Per scenario: each gateway's req/s as a share of the bare proxy's (and of the direct run's), and
 * the floor proxy's share: the most a gateway with the same guarantees could reach here.
 */
export function ratioLines(rows: Row[]): string[] {
  const lines = [
    "gateway req/s as a share of the bare proxy's (of the emulator's, direct); the floor proxy's:",
  ];
  for (const [scenario, group] of byScenario(rows)) {
    const bare = find(group, "bare proxy")!.load.rps;
    const direct = find(group, "emulator direct")!.load.rps;
    const floor = find(group, "floor proxy");
    const shares = group.filter((r) => r.target === "gateway").map((r) =>
      `workers=${r.workers} ${fixed((100 * r.load.rps) / bare, 1)}% ` +
      `(${fixed((100 * r.load.rps) / direct, 1)}%)`
    );
    if (floor) shares.push(`floor proxy ${fixed((100 * floor.load.rps) / bare, 1)}%`);
    const features = find(group, "floor + features");
    if (features) {
      shares.push(`floor + features ${fixed((100 * features.load.rps) / bare, 1)}%`);
    }
    for (const peer of group.filter((r) => r.target === "peer")) {
      shares.push(`${peer.peer} ${fixed((100 * peer.load.rps) / bare, 1)}%`);
    }
    lines.push(`  ${scenario}: ${shares.join(", ")}`);
  }
  return lines;
}

/**
 * Per scenario a peer ran: each gateway against the best peer — requests/s, p50 and p99 under
 * load and peak RSS, as ratios (above 1: the gateway's figure is the larger).
 */
export function peerLines(rows: Row[]): string[] {
  const lines: string[] = [];
  for (const [scenario, group] of byScenario(rows)) {
    const peer = bestPeer(group);
    if (!peer) continue;
    const ratios = group.filter((r) => r.target === "gateway").map((r) =>
      `workers=${r.workers} ${fixed(r.load.rps / peer.load.rps, 2)}× req/s, ` +
      `p50 ${fixed(r.load.p50 / peer.load.p50, 2)}×, p99 ${
        fixed(r.load.p99 / peer.load.p99, 2)
      }×, ` +
      `peak RSS ${fixed((r.peakMiB ?? NaN) / (peer.peakMiB ?? NaN), 2)}×`
    );
    lines.push(
      `  ${scenario} (best peer ${peer.peer}: ${fixed(peer.load.rps, 0)} req/s, ` +
        `p50 ${fixed(peer.load.p50, 2)} ms, ${fixed(peer.peakMiB ?? NaN, 1)} MiB): ` +
        ratios.join("; "),
    );
  }
  return lines.length ? ["the gateway against the best peer (gateway ÷ peer):", ...lines] : [];
}

/** Each server's highest peak RSS over the scenarios, in the order the rows name them. */
export function peakLine(rows: Row[]): string {
  const peaks = new Map<string, number>();
  for (const r of rows) {
    if (r.peakMiB === undefined || Number.isNaN(r.peakMiB)) continue;
    peaks.set(named(r), Math.max(peaks.get(named(r)) ?? 0, r.peakMiB));
  }
  const list = [...peaks].map(([name, mib]) => `${name} ${fixed(mib, 1)} MiB`);
  return `peak RSS over the run (VmHWM, summed over each server's processes): ${list.join(", ")}`;
}

/** The suffix of a scenario run with the limited key (see `scenarios.ts`). */
export const LIMITED = " (limited key)";
/** The suffix of a scenario run on a model with two upstream keys (cache affinity at work). */
export const AFFINITY = " (2 keys, affinity)";

/** Each variant's suffix, and the line that introduces it (see `variantLines`). */
const VARIANTS: [string, string][] = [
  [LIMITED, "a key with two budgets, a model list and a TPM limit, against a key with none:"],
  [
    AFFINITY,
    "a model on two upstream keys (each call's conversation looked up and placed, see " +
    "docs/routing.md), against one on a single key (nothing to keep):",
  ],
];

/** Every variant's lines (see `variantLines`). */
export function limitLines(rows: Row[]): string[] {
  return VARIANTS.flatMap(([suffix, title]) => variantLines(rows, suffix, title));
}

/**
 * A variant against the plain scenario: for each scenario run both ways, the gateway's req/s in
 * the variant as a share of its req/s in the plain one, per gateway.
 */
function variantLines(rows: Row[], suffix: string, title: string): string[] {
  const lines: string[] = [];
  const groups = byScenario(rows);
  for (const [scenario, group] of groups) {
    if (!scenario.endsWith(suffix)) continue;
    const plain = groups.get(scenario.slice(0, -suffix.length));
    if (!plain) continue;
    const shares = group.filter((r) => r.target === "gateway").map((r) => {
      const base = plain.find((p) => p.target === "gateway" && p.workers === r.workers);
      return `workers=${r.workers} ${fixed(r.load.rps, 0)} vs ${fixed(base?.load.rps ?? NaN, 0)} ` +
        `req/s (${fixed((100 * r.load.rps) / (base?.load.rps ?? NaN), 1)}%)`;
    });
    lines.push(`  ${scenario}: ${shares.join(", ")}`);
  }
  return lines.length ? [title, ...lines] : [];
}

/** Per scenario: gateway (floor proxy, peer) p50 minus bare-proxy p50 at one connection. */
export function addedLatencyLines(rows: Row[]): string[] {
  const lines = ["added latency at one connection (gateway p50 − bare proxy p50):"];
  const measured = new Set<Row["target"]>(["gateway", "floor proxy", "floor + features", "peer"]);
  for (const [scenario, group] of byScenario(rows)) {
    const bare = find(group, "bare proxy")!.p50AtOne!;
    const added = group.filter((r) => measured.has(r.target)).map((r) =>
      `${named(r)} ${signed(r.p50AtOne! - bare, 3)} ms (${fixed(r.p50AtOne!, 3)} ms)`
    );
    lines.push(`  ${scenario}: ${added.join(", ")}; bare proxy p50 ${fixed(bare, 3)} ms`);
  }
  return lines;
}

const signed = (value: number, digits: number) => (value >= 0 ? "+" : "") + fixed(value, digits);

const mib = (value: number) => `${fixed(value, 1)} MiB`;

function settledLine(label: string, s: Settled, idle: number): string {
  const delta = s.rss - idle;
  return `  ${label}: ${mib(s.rss)} (${signed(delta, 1)} MiB vs idle, after ` +
    `${s.seconds.toFixed(1)} s; ${s.stillOpen} upstream streams still open) — within 50 MB: ` +
    (delta <= SETTLE_BAR_MIB ? "yes" : "NO");
}

/** The memory scenario's figures for one gateway. */
export function memoryLines(workers: number, m: MemoryResult): string[] {
  const count = (n: number) => n.toLocaleString("en-US");
  return [
    `memory, gateway workers=${workers} (fresh process; VmRSS summed over its processes):`,
    `  idle: ${mib(m.idle)} after a 2 s warm-up (${mib(m.cold)} before any request)`,
    `  streams: ${count(m.streams)} slow streams opened by wrk (${count(m.streamsAsked)} asked)` +
    (m.limitNote ? ` — ${m.limitNote}` : ""),
    `  open at once: ${count(m.peakOpen)} upstream streams, ` +
    `${count(m.peakConnections)} client connections; errors ${count(m.streamErrors)}`,
    `  peak RSS with the streams open: ${mib(m.peakRss)} — under 500 MB: ` +
    (m.peakRss < PEAK_BAR_MIB ? "yes" : "NO"),
    `  per open stream: ${perOpenStream(m).toFixed(1)} KiB (the peak over idle, per stream open)`,
    settledLine("after the streams were dropped", m.afterStreams, m.idle),
    `  malformed burst: ${count(m.malformedRequests)} requests, ` +
    `${count(m.malformedAccepted)} not refused`,
    settledLine("after the malformed burst", m.afterMalformed, m.idle),
    ...(m.detail ? detailLines(m.detail, m.peakOpen) : []),
  ];
}

/**
 * What each server held per open stream, the same slow streams on fresh processes (see
 * `memoryFloors` in `run.ts`): the least Deno holds, with and without JavaScript seeing the bytes.
 */
export function streamCostLines(costs: { label: string; cost: StreamCost }[]): string[] {
  const width = Math.max(...costs.map((c) => c.label.length));
  return [
    "memory per open stream, the same slow streams on fresh processes with the gateway's V8 flags " +
    "(VmRSS: the peak over idle, per stream open):",
    ...costs.map(({ label, cost }) =>
      `  ${label.padEnd(width)}  ${perOpenStream(cost).toFixed(1).padStart(6)} KiB  ` +
      `(${cost.peakOpen.toLocaleString("en-US")} open of ${
        cost.streams.toLocaleString("en-US")
      }; ` +
      `idle ${mib(cost.idle)}, peak ${mib(cost.peakRss)}; errors ${cost.streamErrors})`
    ),
    ...[...new Set(costs.map(({ cost }) => cost.limitNote).filter(Boolean))]
      .map((note) => `  note: ${note}`),
  ];
}

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

function pointLine(name: string, p: MemoryPoint | undefined): string {
  if (!p) return `  ${name}: no report`;
  return `  ${name}: rss ${mb(p.rss)}, JS heap used ${mb(p.heapUsed)} (of ${mb(p.heapTotal)}), ` +
    `external ${mb(p.external)}`;
}

/** The gateway's own figures (BENCH_MEMORY_DETAIL=1) and what one open stream costs of each. */
function detailLines(d: MemoryDetail, open: number): string[] {
  const lines = [
    "  the gateway's own report, after a full collection:",
    pointLine("idle", d.idle),
    pointLine(`${open.toLocaleString("en-US")} streams open`, d.open),
    pointLine("after the streams", d.afterStreams),
  ];
  if (d.idle && d.open && open > 0) {
    const s = perStream(d.idle, d.open, open);
    lines.push(
      `  per open stream: rss ${kb(s.rss)} = JS heap ${kb(s.heapUsed)} + external ` +
        `(array buffers) ${kb(s.external)} + the rest (native, heap slack) ${kb(s.rest)}`,
    );
  }
  return lines;
}
