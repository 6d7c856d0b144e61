/**
 * Load from `wrk`, a native load generator (a JavaScript client on the same two cores would take
 * the CPU the servers need): a Lua script carries the request, wrk's report is parsed.
 */
import { withFdLimit } from "./procs.ts";

/** One POST request, as wrk sends it. */
export interface Request {
  url: string;
  headers: Record<string, string>;
  /** The body; several are sent in turn. */
  body: string | string[];
}

/** How hard and how long. */
export interface Load {
  threads: number;
  connections: number;
  seconds: number;
  /** A response slower than this counts as a timeout error (wrk's default is 2 s). */
  timeoutSeconds?: number;
  /** Each thread stops after this many responses (wrk then ends early). */
  responsesPerThread?: number;
}

/** What wrk reports, latencies in ms. */
export interface WrkResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  /** Non-2xx/3xx responses. */
  non2xx: number;
  /** Connect, read, write errors and timeouts. */
  socketErrors: number;
}

/** A running wrk: `interrupt` makes it stop and report early. */
export interface WrkRun {
  result: Promise<WrkResult>;
  interrupt(): void;
}

/** Runs wrk to the end. */
export function wrk(request: Request, load: Load): Promise<WrkResult> {
  return startWrk(request, load).result;
}

/** Starts wrk; its result comes when it ends (or is interrupted). */
export function startWrk(request: Request, load: Load): WrkRun {
  const script = Deno.makeTempFileSync({ prefix: "switchyard-bench-", suffix: ".lua" });
  Deno.writeTextFileSync(script, luaScript(request, load.responsesPerThread));
  const [command, args] = withFdLimit("wrk", [
    `-t${load.threads}`,
    `-c${load.connections}`,
    `-d${load.seconds}s`,
    ...(load.timeoutSeconds ? ["--timeout", `${load.timeoutSeconds}s`] : []),
    "--latency",
    "-s",
    script,
    request.url,
  ]);
  const child = new Deno.Command(command, { args, stdout: "piped", stderr: "piped" }).spawn();
  const watch = load.responsesPerThread ? stopWhenThreadsEnd(child.pid) : undefined;
  const result = child.output().then((out) => {
    clearInterval(watch);
    Deno.removeSync(script);
    const text = new TextDecoder().decode(out.stdout);
    if (!out.success || !/requests in/.test(text)) {
      throw new Error(`wrk failed: ${new TextDecoder().decode(out.stderr)}${text}`);
    }
    return parseReport(text);
  });
  return { result, interrupt: () => interrupt(child) };
}

function interrupt(child: Deno.ChildProcess): void {
  try {
    child.kill("SIGINT"); // wrk stops and reports what it measured so far
  } catch { /* already ended */ }
}

/**
 * wrk waits out its whole duration even when its threads have stopped (after
 * `responsesPerThread`): once only its main thread is left, interrupt it.
 */
function stopWhenThreadsEnd(pid: number): ReturnType<typeof setInterval> {
  let seenWorkers = false;
  return setInterval(() => {
    let tasks = 0;
    try {
      for (const _ of Deno.readDirSync(`/proc/${pid}/task`)) tasks++;
    } catch {
      return;
    }
    if (tasks > 1) seenWorkers = true;
    else if (seenWorkers) Deno.kill(pid, "SIGINT");
  }, 100);
}

/** A Lua string literal: printable ASCII as is, every other byte as a decimal escape. */
export function luaString(text: string): string {
  let out = '"';
  for (const byte of new TextEncoder().encode(text)) {
    const printable = byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c;
    out += printable ? String.fromCharCode(byte) : `\\${String(byte).padStart(3, "0")}`;
  }
  return out + '"';
}

function luaScript(request: Request, responsesPerThread?: number): string {
  const lines = [
    `wrk.method = "POST"`,
    ...Object.entries(request.headers).map(([k, v]) =>
      `wrk.headers[${luaString(k)}] = ${luaString(v)}`
    ),
  ];
  if (typeof request.body === "string") lines.push(`wrk.body = ${luaString(request.body)}`);
  else {
    lines.push(
      `local bodies = { ${request.body.map(luaString).join(", ")} }`,
      `local sent = 0`,
      `request = function()`,
      `  sent = sent + 1`,
      `  return wrk.format(nil, nil, nil, bodies[(sent % #bodies) + 1])`,
      `end`,
    );
  }
  if (responsesPerThread) {
    lines.push(
      `local received = 0`,
      `response = function(status, headers, body)`,
      `  received = received + 1`,
      `  if received >= ${responsesPerThread} then wrk.thread:stop() end`,
      `end`,
    );
  }
  return lines.join("\n") + "\n";
}

/** Milliseconds from a wrk duration such as `812.00us`, `1.20ms`, `2.01s`, `1.05m`. */
function ms(value: string, unit: string): number {
  const scale: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };
  return Number(value) * (scale[unit] ?? NaN);
}

/** Reads wrk's report (run with --latency). */
export function parseReport(text: string): WrkResult {
  const percentile = (p: number) => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, "m").exec(text);
    return m ? ms(m[1], m[2]) : NaN;
  };
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  return {
    requests: Number(/(\d+) requests in/.exec(text)?.[1] ?? 0),
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? NaN),
    p50: percentile(50),
    p99: percentile(99),
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0),
    socketErrors: socket ? socket.slice(1).reduce((n, v) => n + Number(v), 0) : 0,
  };
}
