/**
 * A benchmark proxy with a store (`bench/floor_proxy.ts`, `bench/floor_features.ts`) started as the
 * benchmark starts it, in front of `upstream`, its store in `dir`: its port (the first line it
 * prints), then its access log's lines as they come, and its stderr once it ended.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url).pathname;

/** A running proxy (see the module's doc). */
export interface BenchProxy {
  port: number;
  /** The lines printed after the port (its access log), parsed, so far. */
  log: Record<string, unknown>[];
  /** Kills it; resolves once it ended and every line it printed was read. */
  stop(): Promise<void>;
  /** What it wrote to stderr, once it ended. */
  stderr: Promise<string>;
}

/** Starts `bench/<script>` (see the module's doc); throws when it exits before listening. */
export async function startBenchProxy(
  script: string,
  upstream: string,
  dir: string,
): Promise<BenchProxy> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      `--allow-read=${dir},${ROOT}src`,
      `--allow-write=${dir}`,
      `${ROOT}bench/${script}`,
      upstream,
      dir,
    ],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await lines.read();
    if (done) {
      await child.status;
      assert.fail(`${script} exited before listening: ${await stderr}`);
    }
    text += value;
  }
  const { port } = JSON.parse(text.slice(0, text.indexOf("\n")));
  const log: Record<string, unknown>[] = [];
  let rest = text.slice(text.indexOf("\n") + 1);
  // Read as it comes: a proxy whose stdout is not read would stop at a full pipe.
  const reading = (async () => {
    for (;;) {
      for (let at = rest.indexOf("\n"); at >= 0; at = rest.indexOf("\n")) {
        log.push(JSON.parse(rest.slice(0, at)));
        rest = rest.slice(at + 1);
      }
      const { value, done } = await lines.read();
      if (done) return;
      rest += value;
    }
  })();
  return {
    port,
    log,
    stderr,
    async stop() {
      try {
        child.kill("SIGKILL");
      } catch { /* already ended */ }
      await child.status;
      await reading;
    },
  };
}
