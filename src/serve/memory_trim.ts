/**
 * Gives freed native memory back to the system after a burst. glibc's allocator keeps what the
 * process freed in its per-thread arenas for reuse: after 10,000 streams, or thousands of bad
 * requests, the JavaScript heap is back to its idle size but the process stayed hundreds of MB
 * above it. `malloc_trim(0)` releases the free pages of every arena.
 *
 * It runs once per burst, when the process has gone quiet: a check every `CHECK_MS` marks the
 * process dirty while it is busy (more than `BUSY_SHARE` of a core), when it has grown by
 * `GROWTH_BYTES` since the last trim, or when a garbage collection has just freed much of the
 * JavaScript heap (the native memory its objects held went with them), and trims on the first
 * quiet check after that. A process under steady load
 * is never trimmed (its memory is in use). Where there is no glibc (musl, macOS) or the process
 * may not load it (`--allow-ffi` names its paths), nothing is done.
 *
 * The permission to load native code exists only while this module is evaluated: it binds
 * `malloc_trim` and revokes `--allow-ffi` at once. `main.ts` imports it first, before any other
 * module (a dependency's included) has run, and serving threads start without it.
 */

/** glibc's shared object, where Debian, Ubuntu, Fedora and Arch keep it (x86-64, arm64). */
export const LIBC_PATHS = [
  "/lib/x86_64-linux-gnu/libc.so.6",
  "/lib/aarch64-linux-gnu/libc.so.6",
  "/lib64/libc.so.6",
  "/usr/lib/libc.so.6",
];

const CHECK_MS = 1000;
/** Above this share of one core over a check's interval, the process is busy. */
const BUSY_SHARE = 0.2;
/** Growth of the process since the last trim that makes it worth another. */
const GROWTH_BYTES = 32 * 1024 * 1024;
/** A drop of the JavaScript heap between two checks that makes a trim worth it. */
const COLLECTED_BYTES = 16 * 1024 * 1024;

type Trim = () => void;

/** `malloc_trim(0)` of this process's glibc, or null when it cannot be called. */
function loadTrim(): Trim | null {
  if (Deno.build.os !== "linux") return null;
  for (const path of LIBC_PATHS) {
    try {
      if (Deno.permissions.querySync({ name: "ffi", path }).state !== "granted") continue;
      const lib = Deno.dlopen(path, { malloc_trim: { parameters: ["usize"], result: "i32" } });
      return () => void lib.symbols.malloc_trim(0n);
    } catch {
      // not this path (absent, or not glibc)
    }
  }
  return null;
}

const trimNow = loadTrim();
Deno.permissions.revokeSync({ name: "ffi" });

/** User and system CPU time of the process so far, µs. */
type CpuUsage = () => { user: number; system: number };

/**
 * Deno's own CPU clock: what `node:process`'s `cpuUsage` calls, public but not in Deno's types.
 * Importing `node:process` at start would make Deno load its Node compatibility layer, tens of ms
 * of every start; a Deno without this clock has that loaded on the first check instead.
 */
const denoCpuUsage = (Deno as unknown as { cpuUsage?: CpuUsage }).cpuUsage;

/** A running trimmer. */
export interface MemoryTrim {
  /** Whether trimming is possible here (glibc, and the `--allow-ffi` permission for it). */
  active: boolean;
  stop(): void;
}

/** Starts the trimmer (see the module doc); `stop()` ends it. */
export function startMemoryTrim(): MemoryTrim {
  const trim = trimNow;
  if (!trim) return { active: false, stop() {} };
  let cpuUsage = typeof denoCpuUsage === "function" ? denoCpuUsage : undefined;
  if (!cpuUsage) {
    import("node:process").then(({ default: process }) => cpuUsage = () => process.cpuUsage());
  }
  let lastCpu = cpuUsage?.() ?? { user: 0, system: 0 };
  let lastAt = performance.now();
  const start = Deno.memoryUsage();
  let lastHeap = start.heapUsed;
  let trimmedRss = start.rss;
  let dirty = false;
  const timer = setInterval(() => {
    if (!cpuUsage) return;
    const cpu = cpuUsage();
    const now = performance.now();
    const used = (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000;
    const busy = used / Math.max(1, now - lastAt) > BUSY_SHARE;
    lastCpu = cpu;
    lastAt = now;
    const { rss, heapUsed } = Deno.memoryUsage();
    // A garbage collection that freed much of the heap freed the native memory its objects held.
    const collected = heapUsed < lastHeap - COLLECTED_BYTES;
    lastHeap = heapUsed;
    if (busy || collected || rss > trimmedRss + GROWTH_BYTES) dirty = true;
    if (busy || !dirty) return;
    dirty = false;
    trim();
    trimmedRss = Deno.memoryUsage().rss;
  }, CHECK_MS);
  Deno.unrefTimer(timer);
  return { active: true, stop: () => clearInterval(timer) };
}
