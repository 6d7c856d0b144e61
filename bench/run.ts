/**
 * `deno task bench`: the same load against the emulator directly, a bare Deno.serve + fetch proxy,
 * and the full gateway (auth, RPM, validation, reservation, ledger, access log), non-streaming and
 * streaming. Prints requests/s, p50/p99 latency, the ratios and the gateway's peak RSS.
 * Settings: BENCH_SECONDS (10), BENCH_CONCURRENCY (64).
 */
const ROOT = new URL("../", import.meta.url).pathname;
const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 10);
const CONCURRENCY = Number(Deno.env.get("BENCH_CONCURRENCY") ?? 64);

interface Proc {
  child: Deno.ChildProcess;
  port: number;
}

async function spawn(args: string[], cwd: string, portOf: (line: unknown) => number | undefined) {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    stdout: "piped",
    stderr: "inherit",
    env: { UPSTREAM_KEY: "bench-upstream" },
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`process exited early: ${args.join(" ")}`);
    buffer += value;
    for (const line of buffer.split("\n")) {
      try {
        const port = portOf(JSON.parse(line));
        if (port) {
          // Keep draining stdout (the access log) so the child never blocks on a full pipe.
          (async () => {
            while (!(await reader.read()).done) { /* drain */ }
          })();
          return { child, port } as Proc;
        }
      } catch { /* partial line */ }
    }
  }
}

async function flagsOfCompileTask(): Promise<string[]> {
  const tasks = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks;
  return (tasks.compile as string).split(/\s+/).filter((a) => a.startsWith("--allow-"));
}

interface Result {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function load(url: string, headers: Record<string, string>, body: string): Promise<Result> {
  const latencies: number[] = [];
  let errors = 0;
  const until = performance.now() + SECONDS * 1000;
  const worker = async () => {
    while (performance.now() < until) {
      const start = performance.now();
      try {
        const res = await fetch(url, { method: "POST", headers, body });
        await res.arrayBuffer();
        if (res.status !== 200) errors++;
      } catch {
        errors++;
      }
      latencies.push(performance.now() - start);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return { rps: latencies.length / elapsed, p50: at(0.5), p99: at(0.99), errors };
}

function peakRss(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

const dir = await Deno.makeTempDir({ prefix: "switchyard-bench-" });
const emulator = await spawn(
  ["run", "--allow-net", "--allow-env", `${ROOT}main.ts`, "emulate", "--port", "0"],
  dir,
  (l) => (l as { port?: number }).port,
);
const emulatorUrl = `http://127.0.0.1:${emulator.port}`;
const proxy = await spawn(
  ["run", "--allow-net", `${ROOT}bench/bare_proxy.ts`, `${emulatorUrl}`],
  dir,
  (l) => (l as { port?: number }).port,
);
await Deno.writeTextFile(
  `${dir}/switchyard.json`,
  JSON.stringify({
    defaultCatalog: false,
    providers: {
      openai: { type: "openai", baseUrl: `${emulatorUrl}/openai/v1`, apiKey: "env:UPSTREAM_KEY" },
    },
    models: { "gpt-bench": { provider: "openai", price: { input: 2.5, output: 15 } } },
  }),
);
const flags = await flagsOfCompileTask();
const cli = (...args: string[]) =>
  new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, "--config", `${ROOT}deno.json`, `${ROOT}main.ts`, ...args],
    cwd: dir,
  }).output();
const created = await cli(
  "keys",
  "create",
  "--account",
  "bench",
  "--rpm",
  "0",
  "--credit",
  "1000000",
  "--json",
  "--config",
  "./switchyard.json",
);
const key = JSON.parse(new TextDecoder().decode(created.stdout)).key;
const gateway = await spawn(
  [
    "run",
    ...flags,
    "--config",
    `${ROOT}deno.json`,
    `${ROOT}main.ts`,
    "serve",
    "--config",
    "./switchyard.json",
    "--port",
    "0",
  ],
  dir,
  (l) =>
    (l as { msg?: string; port?: number }).msg === "listening"
      ? (l as { port: number }).port
      : undefined,
);

const prompt = "Write one sentence about switchyards and trains, please.";
const scenarios = [
  { name: "responses JSON", body: { model: "gpt-bench", input: prompt } },
  { name: "responses SSE", body: { model: "gpt-bench", input: prompt, stream: true } },
];
const targets = [
  { name: "emulator direct", url: `${emulatorUrl}/openai/v1/responses`, auth: "bench-upstream" },
  { name: "bare proxy", url: `http://127.0.0.1:${proxy.port}/openai/v1/responses`, auth: "x" },
  { name: "switchyard", url: `http://127.0.0.1:${gateway.port}/v1/responses`, auth: key },
];

console.log(`${SECONDS}s per run, ${CONCURRENCY} concurrent connections\n`);
const rows: string[][] = [["scenario", "target", "req/s", "p50 ms", "p99 ms", "errors"]];
const ratios: string[] = [];
for (const scenario of scenarios) {
  const results: Record<string, Result> = {};
  for (const target of targets) {
    const headers = { "content-type": "application/json", authorization: `Bearer ${target.auth}` };
    await load(target.url, headers, JSON.stringify(scenario.body)); // warm-up (short)
    const r = await load(target.url, headers, JSON.stringify(scenario.body));
    results[target.name] = r;
    rows.push([
      scenario.name,
      target.name,
      r.rps.toFixed(0),
      r.p50.toFixed(2),
      r.p99.toFixed(2),
      String(r.errors),
    ]);
  }
  const gw = results["switchyard"].rps;
  ratios.push(
    `${scenario.name}: switchyard/bare proxy = ${
      (100 * gw / results["bare proxy"].rps).toFixed(1)
    }%,` +
      ` switchyard/direct = ${(100 * gw / results["emulator direct"].rps).toFixed(1)}%`,
  );
}
const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
for (const row of rows) console.log(row.map((c, i) => c.padEnd(widths[i])).join("  "));
console.log();
for (const line of ratios) console.log(line);
console.log(`switchyard peak RSS: ${peakRss(gateway.child.pid).toFixed(1)} MiB`);

for (const p of [gateway, proxy, emulator]) p.child.kill("SIGTERM");
await Promise.all([gateway, proxy, emulator].map((p) => p.child.status));
await Deno.remove(dir, { recursive: true });
