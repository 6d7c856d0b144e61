/**
 * Reloading the config without a restart: on SIGHUP, or when `switchyard reload` touches the
 * reload file beside the store (a binary without the permission to send signals cannot signal
 * the server, so it asks through the store's directory). A valid file replaces providers, models,
 * prices and the other live settings for new requests — calls in flight keep what they resolved;
 * an invalid one is refused with one log line naming the field, and the old config stays.
 */
import {
  type Config,
  ConfigError,
  configFrom,
  type ConfigRead,
  readConfigFile,
  storeDir,
} from "../config/load.ts";
import { log } from "../log.ts";
import type { ConfigSource } from "./workers.ts";

/** Settings a running process cannot change: they keep their values until a restart. */
const FIXED = [
  "host",
  "port",
  "workers",
  "workersSet",
  "dbPath",
  "spoolDir",
  "metricsPort",
  // The threads' shared metric bounds are sized by it when the process starts.
  "metricsModels",
  // How connections are served (see `serve/connections.ts`) is chosen when the process starts.
  "webSockets",
] as const;

/** How often the reload file is looked at. */
const POLL_MS = 1000;

/** The file `switchyard reload` touches, beside the store. */
function reloadFile(dbPath: string): string {
  return `${storeDir(dbPath)}/reload`;
}

/** A reloaded config, and the file as it was read (what the serving threads build theirs from). */
export interface Reloaded {
  config: Config;
  read: ConfigRead;
}

/**
 * Reads the config again as the process first did — or, in a serving thread, builds it from the
 * file as the main thread read it (`read`), so every thread runs the same one and only the main
 * thread logs about it. Resolves to the new config (its fixed settings kept from `current`), or
 * null when it is not valid (logged).
 */
export async function reloadConfig(
  current: Config,
  source: ConfigSource,
  read?: ConfigRead,
): Promise<Reloaded | null> {
  const env = (name: string) => Deno.env.get(name);
  // A serving thread building the main thread's read: that thread has logged about it.
  const quiet = read !== undefined;
  let next: Config;
  try {
    read ??= await readConfigFile(source.configFile, env);
    next = configFrom(read, env, source.overrides);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    log("error", "config reload refused: the running config stays", { error: error.message });
    return null;
  }
  const restart = FIXED.filter((name) => next[name] !== current[name]);
  if (restart.length && !quiet) {
    log("warn", "config reload: these settings need a restart and keep their values", {
      settings: restart,
    });
  }
  const kept: Partial<Config> = {};
  for (const name of FIXED) (kept as Record<string, unknown>)[name] = current[name];
  if (!quiet) { for (const notice of next.notices) log("warn", notice); }
  return { config: { ...next, ...kept }, read };
}

/**
 * Calls `reload` on SIGHUP and when the reload file is touched; returns what stops listening.
 * Reloads never overlap: one asked for during another runs after it.
 */
export function watchReloads(dbPath: string, reload: () => Promise<void>): () => void {
  let running: Promise<void> = Promise.resolve();
  const run = () => {
    running = running.then(reload).catch((error) =>
      log("error", "config reload failed", { error: String(error) })
    );
  };
  const file = reloadFile(dbPath);
  const seen = () => {
    try {
      return Deno.statSync(file).mtime?.getTime() ?? 0;
    } catch {
      return 0;
    }
  };
  let last = seen();
  const poll = setInterval(() => {
    const now = seen();
    if (now !== last) {
      last = now;
      if (now) run();
    }
  }, POLL_MS);
  Deno.unrefTimer(poll);
  Deno.addSignalListener("SIGHUP", run);
  return () => {
    clearInterval(poll);
    Deno.removeSignalListener("SIGHUP", run);
  };
}

/** `switchyard reload`: touches the reload file of the store `dbPath` names. */
export function requestReload(dbPath: string): string {
  const file = reloadFile(dbPath);
  Deno.writeTextFileSync(file, `${new Date().toISOString()}\n`);
  return file;
}
