/**
 * Switchyard command line:
 *   serve [--config FILE] [--host H] [--port N] [--workers N] [--emulate]
 *   keys create --account NAME [--rpm N] [--credit USD] [--json] · keys list [--json] · keys revoke ID
 *   accounts list [--json] · accounts credit NAME USD
 *   config check [--config FILE] · reload [--config FILE]
 *   store copy --from sqlite:PATH --to postgres://…
 *   emulate [--host H] [--port N] [--key K[:fault]]...
 */
// First: it loads what it needs from libc and gives up the permission to load native code before
// any other module runs.
import "./src/serve/memory_trim.ts";
import { parseArgs } from "node:util";
import { type Config, ConfigError, loadConfig } from "./src/config/load.ts";
import { isPostgresUrl, MAX_WORKERS } from "./src/config/schema.ts";
import { openStore, storeName } from "./src/store/open.ts";
import { startServer } from "./src/server.ts";
import { flushLog, log } from "./src/log.ts";
import { recoverHolds } from "./src/billing/ledger.ts";
import { drainServer } from "./src/serve/drain.ts";
import { type ConfigSource, startWorkers, ThreadsUnavailable } from "./src/serve/workers.ts";
import { reloadConfig, requestReload, watchReloads } from "./src/serve/reload.ts";
import { startDemo } from "./src/serve/demo.ts";
import { boardOf, type Services } from "./src/context.ts";
import { shareMetricBounds } from "./src/metrics/gateway.ts";
import { startEmulator } from "./src/emulator/server.ts";
import { parseKeySpec } from "./src/emulator/keys.ts";
import { restoreKeys } from "./src/routing/keys.ts";
import { clearSpool } from "./src/http/multipart.ts";
import { jsonText } from "./src/http/json.ts";
import {
  accountJson,
  CliError,
  createKey,
  creditAccount,
  keyJson,
  table,
} from "./src/cli/commands.ts";
import { firstKeyCommand } from "./src/cli/first_key.ts";

const USAGE = `usage: switchyard <command> [options]

  serve [--config FILE] [--host H] [--port N] [--workers N] [--emulate]
                                                   run the gateway (N serving threads;
                                                   default: one per core; --emulate: every
                                                   built-in provider is the built-in emulator)
  keys create --account NAME [--rpm N] [--credit USD] [--json]
  keys list [--json]
  keys revoke ID
  accounts list [--json]
  accounts credit NAME USD                         add (or, negative, remove) balance
  config check [--config FILE]                     validate the configuration and exit
  reload [--config FILE]                           make the running server re-read its config
                                                   (as SIGHUP does)
  store copy [--from sqlite:PATH] [--to URL]       copy the SQLite store into an empty PostgreSQL
                                                   database and check the copy (defaults:
                                                   store.path and store.url)
  emulate [--host H] [--port N] [--key K[:fault]]... run the offline provider emulator
                                                   (faults: exhausted[=S], invalid, failing, overloaded)

Every command takes --config FILE (or SWITCHYARD_CONFIG); the store is store.url (or
SWITCHYARD_DB_URL) when set, else store.path (default ./data/switchyard.db, or SWITCHYARD_DB).`;

const OPTIONS = {
  config: { type: "string" },
  host: { type: "string" },
  port: { type: "string" },
  workers: { type: "string" },
  account: { type: "string" },
  rpm: { type: "string" },
  credit: { type: "string" },
  json: { type: "boolean" },
  key: { type: "string", multiple: true },
  emulate: { type: "boolean" },
  from: { type: "string" },
  to: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

async function main(argv: string[]): Promise<number> {
  // `deno task start -- --emulate` passes the `--` on: options after it are still options.
  if (argv[1] === "--") argv = [argv[0], ...argv.slice(2)];
  const { values, positionals } = parseArgs({
    args: argv,
    options: OPTIONS,
    allowPositionals: true,
    strict: true,
  });
  const [command, sub, ...rest] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) {
    throw new CliError("--port must be an integer between 0 and 65535");
  }
  if (command === "emulate") {
    let keys;
    try {
      keys = values.key?.map(parseKeySpec);
    } catch (error) {
      throw new CliError((error as Error).message);
    }
    const server = startEmulator({
      hostname: values.host ?? "127.0.0.1",
      port: port ?? 8090,
      keys,
    });
    log("info", "emulator listening", { host: server.addr.hostname, port: server.addr.port });
    flushLog();
    await server.finished;
    return 0;
  }
  const workers = values.workers === undefined ? undefined : Number(values.workers);
  if (
    workers !== undefined && (!Number.isInteger(workers) || workers < 1 || workers > MAX_WORKERS)
  ) {
    throw new CliError(`--workers must be an integer from 1 to ${MAX_WORKERS}`);
  }
  // Demo mode: the emulator in this process stands in for every built-in provider.
  const demo = command === "serve" && values.emulate ? startDemo() : null;
  const overrides = { host: values.host, port, workers, providers: demo?.providers };
  if (demo) {
    log(
      "warn",
      "demo mode: every built-in provider is the built-in emulator; nothing real is called",
      {
        emulator: demo.url,
      },
    );
  }
  const config = await loadConfig(values.config, (name) => Deno.env.get(name), overrides);
  const print = (json: unknown, text: string) => console.log(values.json ? jsonText(json) : text);

  if (command === "reload") {
    const file = requestReload(config.dbPath);
    console.log(`asked the server on ${config.dbPath} to reload its config (${file})`);
    return 0;
  }
  if (command === "config" && sub === "check") {
    for (const notice of config.notices) console.log(notice);
    console.log(`config ok: ${config.catalog.entries().length} models, store ${storeName(config)}`);
    return 0;
  }
  if (command === "store" && sub === "copy") return await storeCopy(config, values.from, values.to);
  if (command === "serve") {
    if (sub !== undefined) throw new CliError(`serve takes no argument "${sub}"\n\n${USAGE}`);
    return serve(config, { configFile: values.config, overrides });
  }

  const store = await openStore(config);
  try {
    if (command === "keys" && sub === "create") {
      if (!values.account) throw new CliError("keys create needs --account NAME");
      const created = await createKey(store, {
        account: values.account,
        rpm: values.rpm === undefined ? undefined : Number(values.rpm),
        creditUsd: values.credit,
      });
      print(
        created,
        `${created.key}\n\nkey ${created.id} for account ${created.account} (balance ${created.balance_usd} USD).\nThis is the only time the key is shown; store it now.`,
      );
      return 0;
    }
    if (command === "keys" && sub === "list") {
      const keys = (await store.listKeys()).map(keyJson);
      print(keys, table(keys));
      return 0;
    }
    if (command === "keys" && sub === "revoke") {
      if (!rest[0]) throw new CliError("keys revoke needs the key id (see keys list)");
      if (!(await store.revokeKey(rest[0]))) throw new CliError(`no active key with id ${rest[0]}`);
      console.log(`revoked ${rest[0]}`);
      return 0;
    }
    if (command === "accounts" && sub === "list") {
      const accounts = (await store.listAccounts()).map(accountJson);
      print(accounts, table(accounts));
      return 0;
    }
    if (command === "accounts" && sub === "credit") {
      if (rest.length !== 2) throw new CliError("usage: accounts credit NAME USD");
      const account = accountJson(await creditAccount(store, rest[0], rest[1]));
      print(account, `account ${account.name}: balance ${account.balance_usd} USD`);
      return 0;
    }
  } finally {
    await store.close();
  }
  throw new CliError(`unknown command: ${positionals.join(" ")}\n\n${USAGE}`);
}

/** `store copy`: the SQLite file into an empty PostgreSQL database, checked. */
async function storeCopy(config: Config, from?: string, to?: string): Promise<number> {
  const source = from === undefined ? config.dbPath : from.replace(/^sqlite:/, "");
  const target = to ?? config.dbUrl;
  if (!target || !isPostgresUrl(target)) {
    throw new CliError("store copy needs --to postgres://… (or store.url in the config)");
  }
  const { copyStore, CopyError } = await import("./src/store/copy.ts");
  try {
    const report = await copyStore(source, target);
    const rows = Object.entries(report.rows).map(([table, n]) => `${table} ${n}`).join(", ");
    console.log(`copied ${source} to ${storeName({ dbPath: source, dbUrl: target })}: ${rows}`);
    console.log("counts and sums checked: equal on both sides");
    return 0;
  } catch (error) {
    if (error instanceof CopyError) throw new CliError(error.message);
    throw error;
  }
}

/**
 * The serving threads, or null to serve on this thread alone: when they cannot run here and their
 * number was not asked for (it defaults to the cores), with a warning. Asked for, it is an error.
 */
async function threads(services: Services & { config: Config }, source: ConfigSource) {
  try {
    return await startWorkers(services, source);
  } catch (error) {
    if (!(error instanceof ThreadsUnavailable)) throw error;
    if (services.config.workersSet) {
      throw new CliError(`could not start the serving threads: ${error.message}`);
    }
    log("warn", "serving threads could not start: serving on one thread", {
      error: error.message,
    });
    return null;
  }
}

async function serve(config: Config, source: ConfigSource): Promise<number> {
  const store = await openStore(config, { owner: true });
  for (const notice of config.notices) log("warn", notice);
  // Once per process, before any thread serves.
  const recovered = await recoverHolds(store);
  if (recovered) log("warn", "settled calls left open by an earlier crash", { calls: recovered });
  const leftovers = await clearSpool(config.spoolDir);
  if (leftovers) log("warn", "removed uploads left by an earlier crash", { files: leftovers });
  const services: Services & { config: Config } = { config, store };
  // This thread's metric bounds, which serving threads share (made before any thread serves).
  shareMetricBounds(services);
  if (!(await store.listKeys()).length) {
    const command = firstKeyCommand({
      execPath: Deno.execPath(),
      configFile: source.configFile ?? Deno.env.get("SWITCHYARD_CONFIG"),
      demo: source.overrides.providers !== undefined,
    });
    log("info", `no keys yet: create one with \`${command}\``, { command });
  }
  const stopped = Promise.withResolvers<void>();
  let stop: () => Promise<void>;
  let port: number;
  const pool = config.workers > 1 ? await threads(services, source) : null;
  const workers = pool ? config.workers : 1;
  if (pool) {
    port = pool.port;
    stop = pool.stop;
  } else {
    const server = startServer(services);
    port = server.addr.port;
    // The config of the moment (a reload may have changed the drain time).
    stop = () => drainServer(server, services.config);
    server.finished.then(() => stopped.resolve());
  }
  let stopping = false;
  const onSignal = () => {
    if (stopping) return;
    stopping = true;
    log("info", "shutting down");
    stop().then(() => stopped.resolve());
  };
  Deno.addSignalListener("SIGTERM", onSignal);
  Deno.addSignalListener("SIGINT", onSignal);
  const stopReloads = watchReloads(config.dbPath, async () => {
    const next = await reloadConfig(services.config, source);
    if (!next) return;
    services.config = next.config;
    restoreKeys(boardOf(services));
    pool?.reload(next.read);
    log("info", "config reloaded", { models: next.config.catalog.entries().length });
  });
  // Only once the signals are ours: whoever waits for this line may send SIGTERM right away.
  log("info", "listening", {
    host: config.host,
    port,
    store: storeName(config),
    workers,
  });
  flushLog();
  await stopped.promise;
  stopReloads();
  await store.close();
  flushLog();
  return 0;
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (error) {
    if (error instanceof ConfigError || error instanceof CliError) {
      console.error(`switchyard: ${error.message}`);
      Deno.exit(error instanceof ConfigError ? 78 : 2);
    }
    if (
      error instanceof TypeError && "code" in error &&
      String(error.code).startsWith("ERR_PARSE_ARGS")
    ) {
      console.error(`switchyard: ${error.message}\n\n${USAGE}`);
      Deno.exit(2);
    }
    throw error;
  }
}
