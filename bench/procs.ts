/**
 * Child servers of the benchmark and what Linux tells about them: CPU time, resident memory, open
 * files and connections, read from /proc and `ss`. Figures for a server are summed over its
 * process tree, so a gateway that serves from several processes is measured whole.
 */

/** A server process the benchmark started, and the port it listens on. */
export interface Server {
  child: Deno.ChildProcess;
  pid: number;
  port: number;
}

/** What to start and how to tell it is listening. */
export interface ServerSpec {
  args: string[];
  cwd: string;
  env?: Record<string, string>;
  /** The port, once a stdout JSON line says the server listens (undefined for other lines). */
  portOf: (line: Record<string, unknown>) => number | undefined;
  /** Each stdout line once the server listens (the access log, other log lines). */
  onLine?: (line: string) => void;
}

/** The process exited before it listened: its exit code and the end of its stderr. */
export class EarlyExit extends Error {
  constructor(readonly code: number, readonly stderr: string) {
    super(`exited with code ${code} before listening:\n${stderr.trim()}`);
  }
}

/**
 * Raises the soft open-files limit as far as allowed (65536, else the hard limit) and runs the
 * command in its place (`exec` keeps the pid).
 */
export function withFdLimit(command: string, args: string[]): [string, string[]] {
  const raise = 'ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"';
  return ["sh", ["-c", raise, "sh", command, ...args]];
}

/** Runs `command` (its open-file limit raised) with stdout and stderr piped, no stdin. */
function spawnPiped(
  command: string,
  spec: { args: string[]; cwd: string; env?: Record<string, string> },
): Deno.ChildProcess {
  const [program, args] = withFdLimit(command, spec.args);
  return new Deno.Command(program, {
    args,
    cwd: spec.cwd,
    env: spec.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/**
 * Starts a Deno server (`deno …args`) and waits until it reports its port. Its stdout (the access
 * log) is drained for as long as it runs, its stderr copied to ours.
 */
export async function spawnServer(spec: ServerSpec): Promise<Server> {
  const child = spawnPiped(Deno.execPath(), spec);
  const stderr = holdStderr(child.stderr);
  const lines = readLines(child.stdout);
  // Not `for await`: leaving that loop would close the generator, and with it the child's stdout.
  for (let next = await lines.next(); !next.done; next = await lines.next()) {
    const port = portIn(next.value, spec.portOf);
    if (port === undefined) continue;
    drain(lines, spec.onLine);
    stderr.release();
    return { child, pid: child.pid, port };
  }
  const { code } = await child.status;
  throw new EarlyExit(code, await stderr.held);
}

function portIn(
  line: string,
  portOf: ServerSpec["portOf"],
): number | undefined {
  try {
    const parsed = JSON.parse(line);
    return parsed && typeof parsed === "object" ? portOf(parsed) : undefined;
  } catch {
    return undefined;
  }
}

async function* readLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buffer = "";
  for await (const text of stream.pipeThrough(new TextDecoderStream())) {
    buffer += text;
    const lines = buffer.split("\n");
    buffer = lines.pop()!;
    yield* lines;
  }
  if (buffer) yield buffer;
}

/** Keeps reading so the child never blocks on a full pipe. */
function drain(lines: AsyncGenerator<string>, onLine?: (line: string) => void): void {
  (async () => {
    for await (const line of lines) onLine?.(line);
  })();
}

/**
 * Holds a starting child's stderr (its last 4 KB, for `EarlyExit`); once released, writes what it
 * held to ours and copies the rest as it comes; never released, it keeps only the last 4 KB.
 */
function holdStderr(stream: ReadableStream<Uint8Array>) {
  const decoder = new TextDecoder();
  let tail = "";
  let released = false;
  const held = (async () => {
    for await (const chunk of stream) {
      if (released) await Deno.stderr.write(chunk);
      else tail = (tail + decoder.decode(chunk, { stream: true })).slice(-4096);
    }
    return tail;
  })();
  const release = () => {
    released = true;
    if (tail) Deno.stderr.writeSync(new TextEncoder().encode(tail));
  };
  return { held, release };
}

/** A program that is not Deno (a peer gateway on Node), told its port on its command line. */
export interface ProgramSpec {
  command: string;
  args: string[];
  cwd: string;
  env?: Record<string, string>;
  /** The port it was told to listen on (on 127.0.0.1). */
  port: number;
  /** How long it may take to listen, ms. */
  timeoutMs?: number;
}

/**
 * Starts a program that says nothing machine-readable when it is ready, and waits until its port
 * takes a connection (or it exits: `EarlyExit`, or the time runs out: an error). Its stdout is
 * drained; of its stderr the last 4 KB are kept for the error, the rest dropped.
 */
export async function spawnOnPort(spec: ProgramSpec): Promise<Server> {
  const child = spawnPiped(spec.command, spec);
  drain(readLines(child.stdout));
  const stderr = holdStderr(child.stderr);
  let exited: number | undefined;
  child.status.then((s) => exited = s.code);
  const deadline = Date.now() + (spec.timeoutMs ?? 30_000);
  while (exited === undefined) {
    try {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: spec.port });
      conn.close();
      return { child, pid: child.pid, port: spec.port };
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      await child.status;
      throw new Error(
        `not listening on ${spec.port} after ${spec.timeoutMs ?? 30_000} ms:\n` +
          (await stderr.held).trim(),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new EarlyExit(exited, await stderr.held);
}

/** Sends SIGTERM and waits for the exit. */
export async function stopServer(server: Server): Promise<void> {
  try {
    server.child.kill("SIGTERM");
  } catch { /* already gone */ }
  await server.child.status;
}

/** A free loopback port (bound once, then released). */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

function statFields(pid: number): string[] | null {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // After the command name in parentheses: field 3 (state) onwards.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/** `pid` and all its descendants. */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const ppid = Number(statFields(Number(entry.name))?.[1]);
    if (ppid) children.set(ppid, [...(children.get(ppid) ?? []), Number(entry.name)]);
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]) ?? []));
  return tree;
}

/** Clock ticks per second, the unit of /proc/<pid>/stat times. */
export const CLK_TCK = await clockTicks();

async function clockTicks(): Promise<number> {
  try {
    const out = await new Deno.Command("getconf", { args: ["CLK_TCK"] }).output();
    return Number(new TextDecoder().decode(out.stdout).trim()) || 100;
  } catch {
    return 100;
  }
}

/** User + system CPU seconds of a process tree (all threads of each process). */
export function cpuSeconds(pid: number): number {
  let ticks = 0;
  for (const p of processTree(pid)) {
    const fields = statFields(p);
    // utime and stime: fields 14 and 15.
    if (fields) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / CLK_TCK;
}

/** A /proc/<pid>/status memory figure (`VmRSS`, `VmHWM`) summed over the tree, in MiB. */
export function memoryMiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  let kib = 0;
  for (const p of processTree(pid)) {
    try {
      const status = Deno.readTextFileSync(`/proc/${p}/status`);
      kib += Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
    } catch { /* exited */ }
  }
  return kib / 1024;
}

/**
 * Resets the peak resident memory (`VmHWM`) of a process tree to its current RSS (writing 5 to
 * `/proc/<pid>/clear_refs`), so that the next peak read is that of what ran since. False when
 * Linux refused it for any of the processes (their peak then counts from their start).
 */
export function resetPeak(pid: number): boolean {
  let all = true;
  for (const p of processTree(pid)) {
    try {
      Deno.writeTextFileSync(`/proc/${p}/clear_refs`, "5");
    } catch {
      all = false;
    }
  }
  return all;
}

/** A process's limit on open files: the soft one (in force) or the hard one (its ceiling). */
export function fdLimit(pid: number | "self", which: "soft" | "hard" = "soft"): number {
  const limits = Deno.readTextFileSync(`/proc/${pid}/limits`);
  const m = /Max open files\s+(\S+)\s+(\S+)/.exec(limits);
  const value = m?.[which === "soft" ? 1 : 2];
  return value === "unlimited" || value === undefined ? Infinity : Number(value);
}

/** How many files a process has open. */
export function openFds(pid: number): number {
  let n = 0;
  for (const _ of Deno.readDirSync(`/proc/${pid}/fd`)) n++;
  return n;
}

async function ss(args: string[]): Promise<string> {
  const out = await new Deno.Command("ss", { args, stdout: "piped", stderr: "null" }).output();
  return new TextDecoder().decode(out.stdout);
}

/** The processes holding a listening socket on `port` (several when they share it). */
export async function listeningPids(port: number): Promise<number[]> {
  const text = await ss(["-Hltnp", `sport = :${port}`]);
  return [...new Set([...text.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1])))];
}

/** Established TCP connections whose local port is `port` (the server side of them). */
export async function connectionsTo(port: number): Promise<number> {
  const text = await ss(["-Htn", "state", "established", `sport = :${port}`]);
  return text.split("\n").filter((line) => line.trim()).length;
}
