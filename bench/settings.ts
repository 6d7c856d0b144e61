/** The benchmark's settings, read from the environment (see docs/benchmark.md). */
import { PEER_IDS, type PeerId } from "./peers.ts";

function positiveInt(name: string, fallback: number): number {
  const raw = Deno.env.get(name);
  const value = raw === undefined || raw === "" ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 1) {
    console.error(`${name} must be a positive integer, not ${JSON.stringify(raw)}`);
    Deno.exit(2);
  }
  return value;
}

function workerCounts(): number[] {
  const raw = Deno.env.get("BENCH_WORKERS") || "1,2";
  const counts = raw.split(",").map((s) => Number(s.trim()));
  if (!counts.every((n) => Number.isInteger(n) && n >= 1)) {
    console.error(`BENCH_WORKERS must list positive integers, e.g. "1,2", not "${raw}"`);
    Deno.exit(2);
  }
  return [...new Set(counts)];
}

function storeKind(): "sqlite" | "postgres" {
  const raw = Deno.env.get("BENCH_STORE") || "sqlite";
  if (raw !== "sqlite" && raw !== "postgres") {
    console.error(`BENCH_STORE must be sqlite or postgres, not "${raw}"`);
    Deno.exit(2);
  }
  return raw;
}

/** BENCH_PEERS: a list of peer names, `all` (the default) or `none`. */
function peerList(): PeerId[] {
  const raw = (Deno.env.get("BENCH_PEERS") || "all").trim();
  if (raw === "all") return PEER_IDS;
  if (raw === "none") return [];
  const names = raw.split(",").map((s) => s.trim());
  const unknown = names.filter((n) => !(PEER_IDS as string[]).includes(n));
  if (unknown.length) {
    console.error(
      `BENCH_PEERS must be all, none or a list of ${PEER_IDS.join(", ")}, not "${raw}"`,
    );
    Deno.exit(2);
  }
  return PEER_IDS.filter((id) => names.includes(id));
}

/** Everything a run is told from outside. */
export const SETTINGS = {
  /** Seconds of each measured wrk run (BENCH_SECONDS). */
  seconds: positiveInt("BENCH_SECONDS", 10),
  /** Connections of the throughput runs (BENCH_CONCURRENCY). */
  concurrency: positiveInt("BENCH_CONCURRENCY", 64),
  /** Measurements per figure; the median is reported (BENCH_RUNS). */
  runs: positiveInt("BENCH_RUNS", 1),
  /** One gateway process per entry, started with `serve --workers N` (BENCH_WORKERS). */
  workers: workerCounts(),
  /** Only the scenarios whose name contains this (BENCH_ONLY; "memory" is one). */
  only: Deno.env.get("BENCH_ONLY") ?? "",
  /** A directory for the gateway's CPU profiles (BENCH_PROFILE). */
  profile: Deno.env.get("BENCH_PROFILE") || undefined,
  /**
   * The gateway's store (BENCH_STORE): `sqlite` (the default), or `postgres` — a throw-away
   * PostgreSQL server from the Debian package, as in the tests.
   */
  store: storeKind(),
  /** The bench key's requests per minute (BENCH_RPM; 0, the default, is unlimited). */
  rpm: Number(Deno.env.get("BENCH_RPM") || 0),
  /** The peer gateways measured where they do a scenario's job (BENCH_PEERS). */
  peers: peerList(),
  /**
   * The memory scenario's breakdown per stream (BENCH_MEMORY_DETAIL=1): JavaScript heap, array
   * buffers, the rest (see `memory_detail.ts`).
   */
  memoryDetail: Deno.env.get("BENCH_MEMORY_DETAIL") === "1",
  /**
   * The floor with the features (`floor_features.ts`) measured too, in the JSON scenarios it serves
   * (BENCH_FEATURES=1).
   */
  features: Deno.env.get("BENCH_FEATURES") === "1",
  /** Starts of each server in the start scenario (BENCH_STARTS). */
  starts: positiveInt("BENCH_STARTS", 7),
  /** Concurrent streams of the memory scenario (BENCH_STREAMS). */
  streams: positiveInt("BENCH_STREAMS", 10_000),
  /** The warm-up before each target's measurements. */
  warmupSeconds: 2,
  /** The one-connection latency runs. */
  latencySeconds: 3,
};

/** Seconds the memory scenario takes per gateway, roughly. */
export const MEMORY_SECONDS = 60;
/** Seconds it takes per proxy measured under it (bare, JS relay, floor), roughly. */
const MEMORY_FLOOR_SECONDS = 40;

/** Seconds one start of the start scenario takes, roughly (spawn, first call, stop). */
const START_SECONDS = 0.6;

/**
 * A rough total run time in seconds, for `scenarios` throughput scenarios and `peerRuns` (peer,
 * scenario) pairs among them, with or without the memory and start scenarios.
 */
export function estimateSeconds(
  scenarios: number,
  peerRuns: number,
  memory: boolean,
  starts = false,
): number {
  const s = SETTINGS;
  const gateways = s.workers.length;
  const target = s.warmupSeconds + s.runs * (s.seconds + s.latencySeconds);
  // The emulator direct, the bare and floor proxies and the gateways; no latency run direct.
  const perScenario = (3 + gateways) * target - s.runs * s.latencySeconds;
  const startup = 10 + 3 * gateways + 5 * s.peers.length;
  return startup + scenarios * perScenario + peerRuns * target +
    (memory ? gateways * MEMORY_SECONDS + 3 * MEMORY_FLOOR_SECONDS : 0) +
    (starts ? (2 + gateways) * s.starts * START_SECONDS : 0);
}
