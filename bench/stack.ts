/**
 * The servers under test: the provider emulator, the bare proxy and gateway processes — each
 * gateway with the compiled permissions, a funded key (no rate limit unless BENCH_RPM says), the
 * full pipeline and its access log — all in one temporary working directory, with the SQLite store
 * in it or (BENCH_STORE=postgres) a throw-away PostgreSQL server.
 */
import { EarlyExit, freePort, type Server, spawnServer } from "./procs.ts";
import { SETTINGS } from "./settings.ts";
import { DETAIL_ENV, DETAIL_FLAG, type MemoryReports } from "./memory_detail.ts";
import { UPSTREAM_KEY } from "./scenarios.ts";
import { type Postgres, startPostgres } from "../tests/helpers/postgres.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** The gateway models of the scenarios, one per provider family. */
export const MODELS = {
  "gpt-bench": { provider: "openai", upstream: "gpt-5.4", price: { input: 2.5, output: 15 } },
  "claude-bench": {
    provider: "anthropic",
    upstream: "claude-sonnet-4-5",
    price: { input: 3, output: 15 },
  },
  "gemini-bench": {
    provider: "gemini",
    upstream: "gemini-2.5-flash",
    price: { input: 0.3, output: 2.5 },
  },
  /** On a provider with two keys: a conversation's calls keep to one (cache affinity). */
  "claude-keys": {
    provider: "anthropic-keys",
    upstream: "claude-sonnet-4-5",
    price: { input: 3, output: 15 },
  },
  /** On an OpenAI-compatible provider: every protocol but chat completions is translated. */
  "chat-bench": { provider: "chat", upstream: "gpt-5.4", price: { input: 2.5, output: 15 } },
};

/** Where the gateways run and what they need. */
export interface Setup {
  dir: string;
  emulator: Server;
  emulatorUrl: string;
  proxy: Server;
  /** The floor proxy (see `floor_proxy.ts`). */
  floor: Server;
  /** The floor with the features (see `floor_features.ts`), with BENCH_FEATURES=1. */
  features?: Server;
  /** A gateway key with credit to spare and no rate limit. */
  key: string;
  /** The same with two budgets, a model list and a TPM limit, none of them ever reached. */
  limitedKey: string;
  /** The `--allow-*` flags of the compile task. */
  permissions: string[];
  /** The throw-away PostgreSQL server of `BENCH_STORE=postgres`. */
  postgres?: Postgres;
}

const portField = (line: Record<string, unknown>) =>
  typeof line.port === "number" ? line.port : undefined;

/** Starts the emulator and the bare proxy, writes the gateway config and creates the key. */
export async function startSetup(): Promise<Setup> {
  const dir = await Deno.makeTempDir({ prefix: "switchyard-bench-" });
  const emulator = await spawnServer({
    args: ["run", "--allow-net", "--allow-env", `${ROOT}main.ts`, "emulate", "--port", "0"],
    cwd: dir,
    portOf: portField,
  });
  const emulatorUrl = `http://127.0.0.1:${emulator.port}`;
  const proxy = await startBareProxy(dir, emulatorUrl);
  const floor = await startFloorProxy(dir, emulatorUrl, "floor");
  const features = SETTINGS.features
    ? await startFloorProxy(dir, emulatorUrl, "features", { features: true })
    : undefined;
  const postgres = SETTINGS.store === "postgres" ? await startPostgres() : undefined;
  const store = postgres ? { store: { url: postgres.url } } : {};
  await Deno.writeTextFile(
    `${dir}/switchyard.json`,
    JSON.stringify({ ...config(emulatorUrl), ...store }),
  );
  const permissions = await compileFlags();
  const key = await createKey(dir, permissions);
  const limitedKey = await createKey(dir, permissions, [
    "--budget",
    "100000/month",
    "--budget",
    "50000/day",
    "--models",
    "gpt-*,claude-*,gemini-*",
    "--tpm",
    "1000000000",
  ]);
  return {
    dir,
    emulator,
    emulatorUrl,
    proxy,
    floor,
    features,
    key,
    limitedKey,
    permissions,
    postgres,
  };
}

/** How a bare or floor proxy is started beyond its upstream. */
export interface ProxyOptions {
  /** The bare proxy passes each chunk through JavaScript (`bare_proxy.ts --relay`). */
  relay?: boolean;
  /** Deno flags before the script (the memory scenario gives them the gateway's `--v8-flags`). */
  flags?: string[];
  /** The floor with the features instead (`floor_features.ts`). */
  features?: boolean;
}

/** Starts the bare proxy (see `bare_proxy.ts`) in `dir`, in front of the emulator. */
export function startBareProxy(
  dir: string,
  emulatorUrl: string,
  options: ProxyOptions = {},
): Promise<Server> {
  return spawnServer({
    args: [
      "run",
      ...(options.flags ?? []),
      "--allow-net",
      `${ROOT}bench/bare_proxy.ts`,
      emulatorUrl,
      ...(options.relay ? ["--relay"] : []),
    ],
    cwd: dir,
    portOf: portField,
  });
}

/**
 * Starts the floor proxy (see `floor_proxy.ts`), or the floor with the features
 * (`floor_features.ts`), with its store in `dir/name`, a new directory.
 */
export async function startFloorProxy(
  dir: string,
  emulatorUrl: string,
  name: string,
  options: ProxyOptions = {},
): Promise<Server> {
  const floorDir = `${dir}/${name}`;
  await Deno.mkdir(floorDir);
  return await spawnServer({
    args: [
      "run",
      ...(options.flags ?? []),
      "--allow-net",
      // The store's checkpointer thread loads its module from src/.
      `--allow-read=${floorDir},${ROOT}src`,
      `--allow-write=${floorDir}`,
      `${ROOT}bench/${options.features ? "floor_features" : "floor_proxy"}.ts`,
      emulatorUrl,
      floorDir,
    ],
    cwd: dir,
    portOf: portField,
  });
}

function config(emulatorUrl: string) {
  const provider = (type: string, path: string) => ({
    type,
    baseUrl: `${emulatorUrl}${path}`,
    apiKey: "env:UPSTREAM_KEY",
  });
  return {
    defaultCatalog: false,
    providers: {
      openai: provider("openai", "/openai/v1"),
      anthropic: provider("anthropic", "/anthropic"),
      "anthropic-keys": {
        ...provider("anthropic", "/anthropic"),
        apiKey: ["env:UPSTREAM_KEY", `${UPSTREAM_KEY}-2`],
      },
      gemini: provider("gemini", "/gemini"),
      chat: provider("openai-compatible", "/openai/v1"),
    },
    models: MODELS,
  };
}

/**
 * The `--allow-*`, `--unstable-*` and `--v8-flags` flags of the compile task. A `./src` read permission (the
 * program's own modules, which serving threads load) names the repository's, not the working
 * directory's.
 */
async function compileFlags(): Promise<string[]> {
  const tasks = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks;
  return (tasks.compile as string).split(/\s+/)
    .filter((a) =>
      a.startsWith("--allow-") || a.startsWith("--unstable-") || a.startsWith("--v8-flags=")
    )
    .map((a) => a.replace(/(?<=[=,])\.\/src(?=,|$)/, `${ROOT}src`));
}

function mainArgs(permissions: string[], ...args: string[]): string[] {
  return ["run", ...permissions, "--config", `${ROOT}deno.json`, `${ROOT}main.ts`, ...args];
}

async function createKey(
  dir: string,
  permissions: string[],
  extra: string[] = [],
): Promise<string> {
  const rpm = String(SETTINGS.rpm);
  const args = mainArgs(
    permissions,
    "keys",
    "create",
    "--account",
    extra.length ? "bench-limited" : "bench",
    "--rpm",
    rpm,
    ...extra,
  );
  const out = await new Deno.Command(Deno.execPath(), {
    args: [...args, "--credit", "1000000", "--json", "--config", "./switchyard.json"],
    cwd: dir,
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error("keys create failed");
  return JSON.parse(new TextDecoder().decode(out.stdout)).key;
}

/** A running gateway and the number of workers it was started with. */
export interface Gateway {
  server: Server;
  workers: number;
}

/** Whether `serve` takes `--workers`; unknown until the first gateway starts. */
let workersFlag: boolean | undefined;

/** Whether `serve` has turned out not to know `--workers` (then every gateway runs without it). */
export function workersFlagMissing(): boolean {
  return workersFlag === false;
}

/** How a gateway is started beyond its workers. */
export interface GatewayOptions {
  /** A directory for its CPU profile (BENCH_PROFILE). */
  profile?: string;
  /** Its serving threads report their memory to these (see `memory_detail.ts`). */
  reports?: MemoryReports;
}

/**
 * Starts a gateway with `serve --workers N` on a free port (explicit, so that several workers can
 * share it). A `serve` that refuses the flag as a usage error (exit 2) is started again without
 * it, as one process: the gateway reported is then `workers: 1`.
 */
export async function startGateway(
  setup: Setup,
  workers: number,
  options: GatewayOptions = {},
): Promise<Gateway> {
  if (workersFlag !== false) {
    try {
      const server = await spawnGateway(setup, ["--workers", String(workers)], options);
      workersFlag = true;
      return { server, workers };
    } catch (error) {
      const unknown = /unknown option '--workers'/i;
      if (!(error instanceof EarlyExit && error.code === 2 && unknown.test(error.stderr))) {
        throw error;
      }
      workersFlag = false;
      console.log("note: `serve` has no --workers flag yet; gateways run without it (1 process)");
    }
  }
  return { server: await spawnGateway(setup, [], options), workers: 1 };
}

function spawnGateway(setup: Setup, extra: string[], options: GatewayOptions): Promise<Server> {
  const port = freePort();
  const args = mainArgs(setup.permissions, "serve", "--config", "./switchyard.json");
  const { profile, reports } = options;
  return spawnServer({
    // BENCH_PROFILE=DIR: the gateway writes its CPU profile there when it exits.
    args: [
      args[0],
      ...(profile ? ["--cpu-prof", `--cpu-prof-dir=${profile}`] : []),
      ...(reports ? [DETAIL_FLAG] : []),
      ...args.slice(1),
      "--port",
      String(port),
      ...extra,
    ],
    cwd: setup.dir,
    env: { UPSTREAM_KEY, ...(reports ? DETAIL_ENV : {}) },
    portOf: (line) => line.msg === "listening" ? portField(line) ?? port : undefined,
    onLine: reports?.onLine,
  });
}
