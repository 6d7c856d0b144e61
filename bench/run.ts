/**
 * `deno task bench`: the same load — `wrk`, 2 threads — against the emulator directly, a bare
 * Deno.serve + fetch proxy,
 * and the full gateway (auth, RPM, validation, reservation, ledger, access log), non-streaming and
 * streaming. Prints requests/s, p50/p99 latency, the ratios and the gateway's peak RSS.
 * Settings: BENCH_SECONDS (10), BENCH_CONCURRENCY (64), BENCH_ONLY (scenarios whose name has
 * this), BENCH_PROFILE (a directory for the gateway's CPU profile).
 */
const ROOT = new URL("../", import.meta.url).pathname;

try {
  await new Deno.Command("wrk", { args: ["--version"], stdout: "null", stderr: "null" }).output();
} catch {
  console.error("deno task bench needs wrk (Debian: apt-get install -y wrk).");
  Deno.exit(1);
}
const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 10);
const CONCURRENCY = Number(Deno.env.get("BENCH_CONCURRENCY") ?? 64);
const PROFILE = Deno.env.get("BENCH_PROFILE");
/** Only the scenarios whose name contains this. */
const ONLY = Deno.env.get("BENCH_ONLY") ?? "";

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

/**
 * Loads `url` with `wrk` (a native load generator: a JavaScript loop on the same cores would take
 * the CPU the servers need) for SECONDS at CONCURRENCY connections, 2 threads.
 */
async function load(url: string, headers: Record<string, string>, body: string): Promise<Result> {
  const script = await Deno.makeTempFile({ suffix: ".lua" });
  const lua = (text: string) => JSON.stringify(text); // a JSON string is a valid Lua string here
  await Deno.writeTextFile(
    script,
    [
      `wrk.method = "POST"`,
      `wrk.body = ${lua(body)}`,
      ...Object.entries(headers).map(([k, v]) => `wrk.headers[${lua(k)}] = ${lua(v)}`),
      // Non-2xx answers are counted by wrk itself.
    ].join("\n"),
  );
  try {
    const out = await new Deno.Command("wrk", {
      args: [
        "-t2",
        `-c${CONCURRENCY}`,
        `-d${SECONDS}s`,
        "--latency",
        "-s",
        script,
        url,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    if (!out.success) throw new Error(`wrk failed: ${new TextDecoder().decode(out.stderr)}`);
    const number = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
    const ms = (re: RegExp) => {
      const m = re.exec(text);
      if (!m) return NaN;
      const value = Number(m[1]);
      return m[2] === "us" ? value / 1000 : m[2] === "s" ? value * 1000 : value;
    };
    const errors = number(/Non-2xx or 3xx responses:\s+(\d+)/) || 0;
    const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(
      text,
    );
    return {
      rps: number(/Requests\/sec:\s+([\d.]+)/),
      p50: ms(/50%\s+([\d.]+)(us|ms|s)/),
      p99: ms(/99%\s+([\d.]+)(us|ms|s)/),
      errors: errors + (socket ? socket.slice(1).reduce((n, v) => n + Number(v), 0) : 0),
    };
  } finally {
    await Deno.remove(script);
  }
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
    // BENCH_PROFILE=DIR writes the gateway's CPU profile there when it exits.
    ...(PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${PROFILE}`] : []),
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
for (const scenario of scenarios.filter((s) => s.name.includes(ONLY))) {
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
    await load(target.url, headers, body).catch(() => null); // warm-up
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
