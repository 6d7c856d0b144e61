/**
 * Test harness: starts the real gateway (`main.ts serve`) as a child process with exactly the
 * permission flags of the `compile` task, in a fresh working directory, on a free loopback port.
 */

import { waitFor } from "./poll.ts";

const ROOT = new URL("../../", import.meta.url);
const MAIN = new URL("main.ts", ROOT).pathname;
const DENO_JSON = new URL("deno.json", ROOT).pathname;

/**
 * The `--allow-*`, `--unstable-*` and `--v8-flags` flags baked into the compiled binary, read from
 * deno.json's compile task.
 */
export async function compiledFlags(): Promise<string[]> {
  const tasks = JSON.parse(await Deno.readTextFile(DENO_JSON)).tasks as Record<string, string>;
  const flags = tasks.compile.split(/\s+/).filter((arg) =>
    arg.startsWith("--allow-") || arg.startsWith("--unstable-") || arg.startsWith("--v8-flags=")
  );
  if (!flags.some((flag) => flag.startsWith("--allow-"))) {
    throw new Error("the compile task has no --allow-* flags");
  }
  // The program's own modules (which serving threads load) are where it is installed: here, the
  // repository, whatever the working directory.
  return flags.map((flag) =>
    flag.replace(/(?<=[=,])\.\/src(?=,|$)/, new URL("src", ROOT).pathname)
  );
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Gateway {
  url: string;
  /** The server process's id (to read its memory from /proc). */
  pid: number;
  dir: string;
  /** Every stdout line so far (access log and notices). */
  logs: string[];
  /** Every stderr line so far (error log lines). */
  errors: string[];
  /** Runs a CLI command against the same store, with the same permissions. */
  cli(...args: string[]): Promise<CliResult>;
  /** Creates a key and returns its secret and id. */
  createKey(account: string, ...extra: string[]): Promise<{ key: string; id: string }>;
  /** Kills the process at once (SIGKILL), leaving the working directory for a restart. */
  crash(): Promise<void>;
  /** Sends SIGTERM and waits for the process to exit, leaving the working directory. */
  terminate(): Promise<Deno.CommandStatus>;
  stop(): Promise<void>;
}

export interface GatewayOptions {
  /** Written to ./switchyard.json in the working directory and passed with --config. */
  config?: unknown;
  env?: Record<string, string>;
  /** Reuse this working directory (and its store) instead of a fresh one. */
  dir?: string;
  /** Serving threads (`--workers`); 1 unless given. */
  workers?: number;
  /** More `serve` arguments (e.g. `--emulate`). */
  args?: string[];
  /**
   * No `--host`, `--port` or `--workers` of the harness's own: the environment, the config or
   * `args` choose them (the port is read from the `listening` line).
   */
  bare?: boolean;
  /** Flags of the compile task to leave out (e.g. `--unstable-net`). */
  without?: string[];
}

async function denoRun(
  dir: string,
  args: string[],
  env: Record<string, string>,
  without: string[] = [],
): Promise<Deno.Command> {
  const flags = (await compiledFlags()).filter((flag) => !without.includes(flag));
  const config = await configWithout(dir, without);
  return new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, "--config", config, MAIN, ...args],
    cwd: dir,
    env: { NO_COLOR: "1", ...env },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
}

/**
 * The project's `deno.json`, or — when `without` leaves out an `--unstable-*` flag — a copy in
 * `dir` that does not declare that feature either (with the lock file beside it), so the process
 * really runs without it.
 */
async function configWithout(dir: string, without: string[]): Promise<string> {
  const features = without.filter((f) => f.startsWith("--unstable-")).map((f) => f.slice(11));
  if (features.length === 0) return DENO_JSON;
  const config = JSON.parse(await Deno.readTextFile(DENO_JSON));
  config.unstable = (config.unstable ?? []).filter((f: string) => !features.includes(f));
  const at = await Deno.makeTempDir({ dir, prefix: "deno-config-" });
  await Deno.copyFile(new URL("deno.lock", ROOT), `${at}/deno.lock`);
  await Deno.writeTextFile(`${at}/deno.json`, JSON.stringify(config));
  return `${at}/deno.json`;
}

/** A loopback port nothing listens on (yet). */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Runs the CLI once in `dir` and collects its output. */
export async function runCli(
  dir: string,
  args: string[],
  env: Record<string, string> = {},
  without: string[] = [],
): Promise<CliResult> {
  const out = await (await denoRun(dir, args, { ...baseEnv(), ...env }, without)).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME", "DENO_COVERAGE_DIR"]) {
    const value = Deno.env.get(name);
    if (value) env[name] = value;
  }
  return env;
}

/** Starts a gateway and waits until it listens. */
export async function startGateway(options: GatewayOptions = {}): Promise<Gateway> {
  const dir = options.dir ?? await Deno.makeTempDir({ prefix: "switchyard-test-" });
  const env = { ...baseEnv(), ...options.env };
  // One serving thread unless a test asks for more, whatever the machine's cores.
  const args = options.bare ? ["serve"] : ["serve", "--host", "127.0.0.1", "--port", "0"];
  if (!options.bare && !options.env?.SWITCHYARD_WORKERS) {
    args.push("--workers", String(options.workers ?? 1));
  }
  args.push(...options.args ?? []);
  if (options.config !== undefined) {
    await Deno.writeTextFile(`${dir}/switchyard.json`, JSON.stringify(options.config));
    args.push("--config", "./switchyard.json");
  }
  const child = (await denoRun(dir, args, env, options.without)).spawn();
  const logs: string[] = [];
  const stderr: string[] = [];
  collectLines(child.stderr, stderr);
  const port = await new Promise<number>((resolve, reject) => {
    collectLines(child.stdout, logs, (line) => {
      try {
        const entry = JSON.parse(line);
        if (entry.msg === "listening") resolve(entry.port);
      } catch { /* not JSON */ }
    }).then(() => reject(new Error(`gateway exited before listening:\n${stderr.join("\n")}`)));
  });
  // A gateway that dies on its own is a failure whatever the test checks: say so, with its stderr.
  let stopping = false;
  child.status.then((status) => {
    if (stopping) return;
    console.error(
      `gateway (pid ${child.pid}) exited on its own with code ${status.code}` +
        `${status.signal ? ` (${status.signal})` : ""}; its stderr:\n${stderr.join("\n")}`,
    );
  });
  const gateway: Gateway = {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    dir,
    logs,
    errors: stderr,
    cli: (...cliArgs) =>
      runCli(dir, [
        ...cliArgs,
        ...(options.config !== undefined ? ["--config", "./switchyard.json"] : []),
      ], env),
    async createKey(account, ...extra) {
      const result = await gateway.cli("keys", "create", "--account", account, "--json", ...extra);
      if (result.code !== 0) throw new Error(`keys create failed: ${result.stderr}`);
      return JSON.parse(result.stdout);
    },
    async crash() {
      stopping = true;
      child.kill("SIGKILL");
      await child.status;
    },
    terminate() {
      stopping = true;
      child.kill("SIGTERM");
      return child.status;
    },
    async stop() {
      stopping = true;
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      await child.status;
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
  return gateway;
}

async function collectLines(
  stream: ReadableStream<Uint8Array>,
  into: string[],
  onLine?: (line: string) => void,
): Promise<void> {
  let buffer = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    let newline;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      into.push(line);
      onLine?.(line);
    }
  }
}

/** The gateway's stdout lines that are JSON log entries, parsed. */
// deno-lint-ignore no-explicit-any
export function logEntries(gateway: Pick<Gateway, "logs">): Record<string, any>[] {
  return gateway.logs.flatMap((line) => {
    try {
      return [JSON.parse(line)];
    } catch {
      return [];
    }
  });
}

/**
 * Waits for the access-log entry of request `requestId` (written once the gateway is done with
 * the request: its upstream calls made or dropped, its hold settled or released) and returns it —
 * the positive signal a test waits for before checking that something did not happen.
 */
export async function requestLogged(
  gateway: Pick<Gateway, "logs">,
  requestId: string,
  ms?: number,
  // deno-lint-ignore no-explicit-any
): Promise<Record<string, any>> {
  return await waitFor(
    () =>
      logEntries(gateway).find((e) => e.msg === "request" && e.request_id === requestId) ??
        false,
    { ms, what: `the access-log entry of request ${requestId}` },
  );
}
