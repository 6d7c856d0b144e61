/**
 * The first serving thread, started before the rest of the program loads. `serve` with serving
 * threads spends its first part loading modules and reading the config on the main thread, then
 * the first serving thread loads the server's modules again: about 100 ms of a start on two cores
 * that one core did while the other waited. `main.ts` imports this module first (after the memory
 * trimmer, which gives up the permission to load native code, so the thread never has it) and
 * calls `startEarlyThread` before it imports anything else; `startWorkers` then takes the thread
 * as its first one, and a process that turns out to serve on one thread (its config says so, or
 * threads cannot run here) stops it.
 */

/**
 * The serving thread's module. `deno compile` embeds a Web Worker's module only when it is passed
 * with `--include` (the `compile` task does).
 */
export const WORKER_MODULE = new URL("./worker.ts", import.meta.url);

/**
 * What this process lacks to run serving threads, or null. Checked before any thread starts,
 * because without `--unstable-net` the first `reusePort` ends the whole process (exit code 70).
 */
export function whyNoThreads(): string | null {
  // The unstable network API, `Deno.listenDatagram` among it, exists only with the flag.
  if (typeof (Deno as unknown as Record<string, unknown>).listenDatagram !== "function") {
    return "sharing one port between threads (SO_REUSEPORT) needs the --unstable-net flag";
  }
  // `deno run` reads a Web Worker's modules like a dynamic import's; a compiled binary carries
  // them (`--include`) and needs no read access.
  if (!Deno.build.standalone) {
    const dir = new URL("../", import.meta.url);
    const read = Deno.permissions.querySync({ name: "read", path: dir });
    if (read.state !== "granted") {
      return `a serving thread's modules need read access to ${dir.pathname} (--allow-read)`;
    }
  }
  return null;
}

/** A thread started early, and the error it stopped with before anyone took it, if it did. */
export interface EarlyThread {
  worker: Worker;
  failure?: string;
}

let early: EarlyThread | undefined;

/**
 * Starts the first serving thread now when the command line is `serve` on a machine of more than
 * one core without `--workers 1` or `SWITCHYARD_WORKERS=1` (the config file may still say one
 * thread: then it is stopped), and threads can run here. The thread loads its modules and waits
 * for its start message.
 */
export function startEarlyThread(args: readonly string[]): void {
  const cores = navigator.hardwareConcurrency || 1;
  if (!mayServeOnThreads(args, cores, envWorkers()) || whyNoThreads()) return;
  const thread: EarlyThread = { worker: new Worker(WORKER_MODULE.href, { type: "module" }) };
  // Until `startWorkers` takes it, an error is kept for it to see (and not thrown here).
  thread.worker.onerror = (event) => {
    event.preventDefault();
    thread.failure ??= event.message;
  };
  early = thread;
}

/**
 * Whether a command line may serve on several threads before its config is read: `serve`, on more
 * than one core, not told one thread by `--workers` (`args`) or, without it, `SWITCHYARD_WORKERS`
 * (`env`).
 */
export function mayServeOnThreads(
  args: readonly string[],
  cores: number,
  env: string | undefined,
): boolean {
  if (args[0] !== "serve" || cores < 2) return false;
  // The flag comes before the environment, as in the config's reading.
  const at = args.findIndex((arg) => arg === "--workers" || arg.startsWith("--workers="));
  const count = at < 0 ? env : args[at].split("=")[1] ?? args[at + 1];
  return count !== "1";
}

/** `SWITCHYARD_WORKERS`, when the process may read it. */
function envWorkers(): string | undefined {
  try {
    return Deno.env.get("SWITCHYARD_WORKERS")?.trim();
  } catch {
    return undefined; // no --allow-env: the config load will say so
  }
}

/** The thread `startEarlyThread` started, once; undefined when it started none. */
export function takeEarlyThread(): EarlyThread | undefined {
  const thread = early;
  early = undefined;
  return thread;
}

/** Stops the early thread when no one took it (the process serves on its own thread). */
export function stopEarlyThread(): void {
  takeEarlyThread()?.worker.terminate();
}
