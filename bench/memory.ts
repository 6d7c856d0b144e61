/**
 * The memory scenario (issue #14): a fresh gateway's resident memory at idle; its peak with
 * 10,000 concurrent streams open (a slow upstream, clients reading them); then after those end,
 * and after a burst of 6,000 malformed requests, how close it comes back to idle (the bar:
 * within 50 MB).
 */
import { connectionsTo, fdLimit, listeningPids, memoryMiB, openFds, type Server } from "./procs.ts";
import { startWrk, wrk } from "./wrk.ts";
import type { MemoryPoint, MemoryReports } from "./memory_detail.ts";

/** The upstream and the load: what every server the slow streams are opened on shares. */
export interface StreamLoad {
  emulator: Server;
  emulatorUrl: string;
  /** Concurrent streams asked for. */
  streams: number;
  /** Connections of the warm-up. */
  concurrency: number;
}

/** What the scenario needs to know. */
export interface MemoryInput extends StreamLoad {
  gateway: Server;
  key: string;
  /** The gateway's own memory reports (BENCH_MEMORY_DETAIL=1), for the breakdown. */
  reports?: MemoryReports;
}

/**
 * A server the slow streams are opened on, and the Responses call that opens one there: the
 * gateway's own, or the upstream's call through a proxy.
 */
export interface StreamTarget {
  server: Server;
  url: string;
  headers: Record<string, string>;
  /** The model id the target takes. */
  model: string;
}

/** What a server that has only served the warm-up holds with the slow streams open (MiB of VmRSS). */
export interface StreamCost {
  /** After the warm-up, before the streams. */
  idle: number;
  /** While they were open. */
  peakRss: number;
  /** Streams attempted: fewer than asked when open-file limits do not allow them all. */
  streams: number;
  limitNote?: string;
  /** Most streams open upstream at once (the emulator's count). */
  peakOpen: number;
  /** Most client connections at once. */
  peakConnections: number;
  /** Non-2xx responses and socket errors while the streams ran. */
  streamErrors: number;
  /** The emulator's open streams before them (other targets' leftovers). */
  baseline: number;
}

/** KiB of resident memory per open stream: the peak over idle, over the streams open at once. */
export function perOpenStream(cost: StreamCost): number {
  return cost.peakOpen > 0 ? (cost.peakRss - cost.idle) * 1024 / cost.peakOpen : NaN;
}

/** The gateway's own figures (BENCH_MEMORY_DETAIL=1), each right after a full collection. */
export interface MemoryDetail {
  /** At idle, before the streams. */
  idle?: MemoryPoint;
  /** With the streams open (at the end of the hold). */
  open?: MemoryPoint;
  /** Once RSS settled after the streams were dropped. */
  afterStreams?: MemoryPoint;
}

/** RSS once it settled, how long that took (the wait stops at `SETTLE_SECONDS`). */
export interface Settled {
  rss: number;
  seconds: number;
  /** Upstream streams of the scenario still open then (the gateway has not let go of them). */
  stillOpen: number;
}

/**
 * The scenario's figures (MiB of VmRSS, summed over the gateway's processes); `idle`, after a
 * short warm-up, is the starting point the bars are measured from.
 */
export interface MemoryResult extends StreamCost {
  /** Before any request. */
  cold: number;
  streamsAsked: number;
  afterStreams: Settled;
  malformedRequests: number;
  /** Malformed requests that were not refused (should be 0). */
  malformedAccepted: number;
  afterMalformed: Settled;
  detail?: MemoryDetail;
}

/** The bars, 500 MB at peak and back within 50 MB of idle, in MiB. */
export const PEAK_BAR_MIB = 500e6 / 2 ** 20;
/** Back within 50 MB of idle. */
export const SETTLE_BAR_MIB = 50e6 / 2 ** 20;
const SETTLE_SECONDS = 60;
/** The slow stream: one event a second, ~130 events, so none ends while the phase runs. */
const SLOW_PROMPT = "[[emulate delay=1000 words=120]] Keep this stream open.";
const MALFORMED_REQUESTS = 6000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the memory scenario against a gateway no other load has touched. */
export async function memoryScenario(input: MemoryInput): Promise<MemoryResult> {
  await sleep(1000);
  const cold = memoryMiB(input.gateway.pid, "VmRSS");
  const detail: MemoryDetail | undefined = input.reports ? {} : undefined;
  const cost = await streamCost(
    gatewayTarget(input),
    input,
    detail && {
      idle: async () => void (detail.idle = await input.reports!.fresh()),
      open: async () => void (detail.open = await input.reports!.fresh()),
    },
  );
  const afterStreams = await settle(input, cost.idle, cost.baseline);
  if (detail) detail.afterStreams = await input.reports!.fresh();
  const malformed = await malformedBurst(input);
  const afterMalformed = await settle(input, cost.idle, cost.baseline);
  return {
    ...cost,
    cold,
    streamsAsked: input.streams,
    afterStreams,
    malformedRequests: malformed.requests,
    malformedAccepted: malformed.requests - malformed.non2xx,
    afterMalformed,
    detail,
  };
}

/**
 * Warms `target` up, then opens the slow streams on it (see `openStreams`) and tells its RSS
 * before and while they were open; `at` is called at idle and with the streams open.
 */
export async function streamCost(
  target: StreamTarget,
  load: StreamLoad,
  at?: { idle(): Promise<void>; open(): Promise<void> },
): Promise<StreamCost> {
  await warmUp(target, load.concurrency);
  await sleep(3000);
  const idle = memoryMiB(target.server.pid, "VmRSS");
  progress(`idle RSS ${idle.toFixed(1)} MiB`);
  await at?.idle();
  const { streams, note } = await streamCapacity(target.server, load);
  if (note) progress(note);
  const baseline = await openUpstream(load.emulatorUrl);
  const phase = await openStreams(target, load, streams, baseline, at?.open);
  return { idle, streams, limitNote: note, baseline, ...phase };
}

function progress(text: string): void {
  console.error(`  memory: ${text}`);
}

function gatewayTarget(input: MemoryInput): StreamTarget {
  return {
    server: input.gateway,
    url: `http://127.0.0.1:${input.gateway.port}/v1/responses`,
    headers: { "content-type": "application/json", authorization: `Bearer ${input.key}` },
    model: "gpt-bench",
  };
}

/** A short run of ordinary streams, so that "idle" is a server that has served. */
async function warmUp(target: StreamTarget, concurrency: number): Promise<void> {
  const body = JSON.stringify({ model: target.model, input: "Warm up.", stream: true });
  await wrk(
    { url: target.url, headers: target.headers, body },
    { threads: 2, connections: concurrency, seconds: 2 },
  );
}

/**
 * How many streams the open-file limits allow: each takes two descriptors in the server (client
 * and upstream sockets), one in the emulator and one in wrk.
 */
async function streamCapacity(
  server: Server,
  input: StreamLoad,
): Promise<{ streams: number; note?: string }> {
  const spare = (pid: number) => fdLimit(pid) - openFds(pid) - 64;
  const serving = await listeningPids(server.port);
  const pids = serving.length ? serving : [server.pid];
  // Connections spread over several processes sharing the port unevenly: keep 10% in reserve.
  const share = pids.length > 1 ? 0.9 : 1;
  const gateway = Math.floor(share * pids.reduce((n, pid) => n + spare(pid) / 2, 0));
  const emulator = spare(input.emulator.pid);
  const client = fdLimit("self", "hard") - 64;
  const streams = Math.max(1, Math.min(input.streams, gateway, emulator, client));
  if (streams === input.streams) return { streams };
  return {
    streams,
    note: `open-file limits allow ${streams} streams, not ${input.streams} ` +
      `(server ${pids.length} process(es), ${fdLimit(pids[0])} files each, 2 per stream; ` +
      `emulator ${fdLimit(input.emulator.pid)}; wrk ${fdLimit("self", "hard")})`,
  };
}

async function openUpstream(emulatorUrl: string): Promise<number> {
  try {
    const s = await (await fetch(`${emulatorUrl}/_emulator/stats`)).json();
    return s.streamsStarted - s.streamsCompleted - s.streamsCancelled;
  } catch {
    return NaN;
  }
}

/** Samples the gateway's RSS every 200 ms until stopped; returns the peak. */
function sampleRss(pid: number): { stop: () => number } {
  let peak = memoryMiB(pid, "VmRSS");
  const timer = setInterval(() => peak = Math.max(peak, memoryMiB(pid, "VmRSS")), 200);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, memoryMiB(pid, "VmRSS"));
    },
  };
}

/**
 * Opens `streams` slow streams with wrk (one connection each, reading), holds them for 5 s once
 * (nearly) all are open — or once their number stops growing, or after 60 s — then ends wrk, which
 * drops them all at once.
 */
async function openStreams(
  target: StreamTarget,
  input: StreamLoad,
  streams: number,
  baseline: number,
  atOpen?: () => Promise<void>,
) {
  const body = JSON.stringify({ model: target.model, input: SLOW_PROMPT, stream: true });
  const rss = sampleRss(target.server.pid);
  const run = startWrk(
    { url: target.url, headers: target.headers, body },
    { threads: 2, connections: streams, seconds: 600, timeoutSeconds: 600 },
  );
  let peakOpen = 0, peakConnections = 0, grewAt = Date.now(), fullAt = 0;
  const started = Date.now();
  while (Date.now() - started < 60_000 && (!fullAt || Date.now() - fullAt < 5000)) {
    await sleep(1000);
    const open = (await openUpstream(input.emulatorUrl)) - baseline;
    peakConnections = Math.max(peakConnections, await connectionsTo(target.server.port));
    if (open > peakOpen) [peakOpen, grewAt] = [open, Date.now()];
    const plateau = peakOpen > 0 && Date.now() - grewAt >= 5000;
    if (!fullAt && (peakOpen >= 0.99 * streams || plateau)) fullAt = Date.now();
    progress(`${open} streams open, ${peakConnections} connections at most so far`);
  }
  await atOpen?.();
  run.interrupt();
  const result = await run.result;
  const peakRss = rss.stop();
  progress(`peak RSS ${peakRss.toFixed(1)} MiB; wrk ended, the streams are dropped`);
  return {
    peakOpen,
    peakConnections,
    peakRss,
    streamErrors: result.non2xx + result.socketErrors,
  };
}

/**
 * Waits up to SETTLE_SECONDS, sampling every 500 ms, for RSS to come within the bar of idle (there
 * is no forcing a GC from outside).
 */
async function settle(input: MemoryInput, idle: number, baseline: number): Promise<Settled> {
  const started = Date.now();
  for (;;) {
    const rss = memoryMiB(input.gateway.pid, "VmRSS");
    const seconds = (Date.now() - started) / 1000;
    if (rss - idle <= SETTLE_BAR_MIB || seconds >= SETTLE_SECONDS) {
      return { rss, seconds, stillOpen: (await openUpstream(input.emulatorUrl)) - baseline };
    }
    await sleep(500);
  }
}

/** Bodies the gateway must refuse: truncated or unparseable JSON and wrong types. */
function malformedBodies(): string[] {
  return [
    '{"model":"gpt-bench","input":"Hello, are you',
    '{"model":"gpt-bench","input":' + "[".repeat(5000),
    '{"model":"gpt-bench","input":"' + "y".repeat(50_000),
    JSON.stringify({ model: "gpt-bench", input: "x", max_output_tokens: "many" }),
    JSON.stringify({ model: "gpt-bench", input: 42, stream: "yes" }),
    JSON.stringify({ model: "unknown-" + "z".repeat(200), input: "x" }),
  ];
}

async function malformedBurst(input: MemoryInput) {
  progress(`${MALFORMED_REQUESTS} malformed requests`);
  const { url, headers } = gatewayTarget(input);
  return await wrk(
    { url, headers, body: malformedBodies() },
    {
      threads: 2,
      connections: input.concurrency,
      seconds: 120,
      responsesPerThread: MALFORMED_REQUESTS / 2,
    },
  );
}
