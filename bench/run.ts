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
      anthropic: {
        type: "anthropic",
        baseUrl: `${emulatorUrl}/anthropic`,
        apiKey: "env:UPSTREAM_KEY",
      },
    },
    models: {
      "gpt-bench": { provider: "openai", upstream: "gpt-5.4", price: { input: 2.5, output: 15 } },
      "claude-bench": {
        provider: "anthropic",
        upstream: "claude-sonnet-4-5",
        price: { input: 3, output: 15 },
      },
    },
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
const proxyUrl = `http://127.0.0.1:${proxy.port}`;
const gatewayUrl = `http://127.0.0.1:${gateway.port}`;
interface Target {
  url: string;
  headers: Record<string, string>;
  body: unknown;
}
/**
 * Each scenario: the gateway's route, and the upstream call it makes as the emulator sees it —
 * which the bare proxy and the direct run send themselves. Translated scenarios compare the
 * gateway translating both ways against a proxy that only relays the upstream's own protocol.
 */
const responsesBody = (stream: boolean) => ({ model: "gpt-5.4", input: prompt, stream });
const messagesUpstream = {
  model: "claude-sonnet-4-5",
  max_tokens: 1024,
  stream: true,
  messages: [{ role: "user", content: [{ type: "text", text: prompt }] }],
};
const scenarios: { name: string; upstream: string; direct: Target; gateway: Target }[] = [
  ...[false, true].map((stream) => ({
    name: `responses ${stream ? "SSE" : "JSON"}`,
    upstream: "/openai/v1/responses",
    direct: { url: "", headers: {}, body: responsesBody(stream) },
    gateway: {
      url: `${gatewayUrl}/v1/responses`,
      headers: { authorization: `Bearer ${key}` },
      body: { ...responsesBody(stream), model: "gpt-bench" },
    },
  })),
  {
    name: "messages client → responses upstream, SSE",
    upstream: "/openai/v1/responses",
    direct: { url: "", headers: {}, body: responsesBody(true) },
    gateway: {
      url: `${gatewayUrl}/v1/messages`,
      headers: { "x-api-key": key, "anthropic-version": "2023-06-01" },
      body: {
        model: "gpt-bench",
        max_tokens: 1024,
        stream: true,
        messages: [{ role: "user", content: prompt }],
      },
    },
  },
  {
    name: "generateContent client → messages upstream, SSE",
    upstream: "/anthropic/v1/messages",
    direct: { url: "", headers: {}, body: messagesUpstream },
    gateway: {
      url: `${gatewayUrl}/v1beta/models/claude-bench:streamGenerateContent?alt=sse`,
      headers: { "x-goog-api-key": key },
      body: { contents: [{ role: "user", parts: [{ text: prompt }] }] },
    },
  },
];
const upstreamHeaders = {
  authorization: "Bearer bench-upstream",
  "x-api-key": "bench-upstream",
  "anthropic-version": "2023-06-01",
};

console.log(`${SECONDS}s per run, ${CONCURRENCY} concurrent connections\n`);
const rows: string[][] = [["scenario", "target", "req/s", "p50 ms", "p99 ms", "errors"]];
const ratios: string[] = [];
for (const scenario of scenarios) {
  const results: Record<string, Result> = {};
  const targets: [string, Target][] = [
    ["emulator direct", {
      ...scenario.direct,
      url: `${emulatorUrl}${scenario.upstream}`,
      headers: upstreamHeaders,
    }],
    ["bare proxy", { ...scenario.direct, url: `${proxyUrl}${scenario.upstream}`, headers: {} }],
    ["switchyard", scenario.gateway],
  ];
  for (const [name, target] of targets) {
    const headers = { "content-type": "application/json", ...target.headers };
    const body = JSON.stringify(target.body);
    await load(target.url, headers, body); // warm-up
    const r = await load(target.url, headers, body);
    results[name] = r;
    rows.push([
      scenario.name,
      name,
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
