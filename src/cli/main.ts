/**
 * The command line (`main.ts` starts it):
 *   serve [--config FILE] [--host H] [--port N] [--workers N] [--emulate]
 *   keys create --account NAME [--credit USD] [settings] [--json] · keys update ID [settings]
 *   keys rotate ID [--grace D] · keys list [--json] · keys revoke ID
 *   accounts list [--json] · accounts credit NAME USD · accounts update NAME [settings]
 *   config check [--config FILE] · reload [--config FILE]
 *   store copy --from sqlite:PATH --to postgres://…
 *   emulate [--host H] [--port N] [--key K[:fault]]...
 */
import { type Config, ConfigError, loadConfig } from "../config/load.ts";
import { isPostgresUrl, MAX_WORKERS } from "../config/schema.ts";
import { openStore, storeName } from "../store/open.ts";
import { flushLog, log } from "../log.ts";
import { recoverHolds } from "../billing/ledger.ts";
import { drainServer } from "../serve/drain.ts";
import { type ConfigSource, startWorkers, ThreadsUnavailable } from "../serve/workers.ts";
import { stopEarlyThread } from "../serve/early_thread.ts";
import { reloadConfig, requestReload, watchReloads } from "../serve/reload.ts";
import { startDemo } from "../serve/demo.ts";
import { boardOf, type Services } from "../context.ts";
import { observeCommit, shareMetricBounds } from "../metrics/gateway.ts";
import { restoreKeys } from "../routing/keys.ts";
import { clearSpool } from "../http/multipart.ts";
import { jsonText } from "../http/json.ts";
import {
  createKey,
  creditAccount,
  rotateKey,
  updateAccount,
  updateKey,
} from "../billing/accounts.ts";
import { accountJson, keyJson } from "../billing/accounts_json.ts";
import {
  budgetsFromText,
  expiryOf,
  listFromText,
  metadataFromText,
  OperatorError,
  type Settings,
  switchFromText,
} from "../billing/key_settings.ts";
import { keyRow, table } from "./table.ts";
import { firstKeyCommand } from "./first_key.ts";
import { type OptionSpec, parseCommandLine, UsageError } from "./args.ts";

const USAGE = `usage: switchyard <command> [options]

  serve [--config FILE] [--host H] [--port N] [--workers N] [--emulate]
                                                   run the gateway (N serving threads;
                                                   default: one per core; --emulate: every
                                                   built-in provider is the built-in emulator)
  keys create --account NAME [--credit USD] [KEY SETTINGS] [--json]
  keys update ID [KEY SETTINGS] [--disable | --enable] [--json]
  keys rotate ID [--grace DURATION] [--json]       a new secret for the same key; the old one
                                                   keeps working for DURATION (e.g. 1h, 7d)
  keys list [--json]
  keys revoke ID
  accounts list [--json]
  accounts credit NAME USD                         add (or, negative, remove) balance
  accounts update NAME [--budget B]... [--models L] [--deny-models L] [--json]
  config check [--config FILE]                     validate the configuration and exit
  reload [--config FILE]                           make the running server re-read its config
                                                   (as SIGHUP does)
  store copy [--from sqlite:PATH] [--to URL]       copy the SQLite store into an empty PostgreSQL
                                                   database and check the copy (defaults:
                                                   store.path and store.url)
  emulate [--host H] [--port N] [--key K[:fault]]... run the offline provider emulator
                                                   (faults: exhausted[=S], invalid, failing, overloaded)

KEY SETTINGS (on update, what is not given stays; none / never / an empty list clears):
  --name TEXT                  a name for people
  --budget USD/PERIOD          e.g. 20/month, 5/5h, 50/week, 10/day, 100/total (repeatable)
  --models LIST                model ids and * patterns the key may call: gpt-5-mini,claude-haiku-*
  --deny-models LIST           model ids and * patterns it may not call
  --expires WHEN               2027-01-31, 2027-01-31T18:00:00Z, 30d, 12h, 2w, or never
  --tpm N                      tokens per minute (0: none)
  --max-concurrent N           calls in flight at once (0: none)
  --ip CIDR                    an address or range the key may be used from (repeatable)
  --meta KEY=VALUE             free-form metadata (repeatable)
  --rpm N                      requests per minute (0: unlimited)
  --strict on|off              refuse (400) a translated call that would be adapted, instead of
                               adapting it (see x-switchyard-adapted)

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
  name: { type: "string" },
  budget: { type: "string", multiple: true },
  models: { type: "string" },
  "deny-models": { type: "string" },
  expires: { type: "string" },
  tpm: { type: "string" },
  "max-concurrent": { type: "string" },
  ip: { type: "string", multiple: true },
  meta: { type: "string", multiple: true },
  strict: { type: "string" },
  disable: { type: "boolean" },
  enable: { type: "boolean" },
  grace: { type: "string" },
  key: { type: "string", multiple: true },
  emulate: { type: "boolean" },
  from: { type: "string" },
  to: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies Record<string, OptionSpec>;

/**
 * Negative amounts (`accounts credit NAME -5`) as the positionals they are: the parser takes an
 * argument starting with `-` for an option, so each one not an option's value moves after a `--`
 * at the end (positionals keep their order: such an amount is always the last of them).
 */
function negativesLast(argv: string[]): string[] {
  const end = argv.indexOf("--");
  const head = end < 0 ? argv : argv.slice(0, end);
  const tail = end < 0 ? [] : argv.slice(end + 1);
  const kept: string[] = [];
  const moved: string[] = [];
  for (const [i, arg] of head.entries()) {
    const option = i > 0 ? /^--([\w-]+)$/.exec(head[i - 1])?.[1] : undefined;
    const takesValue = option !== undefined &&
      (OPTIONS as Record<string, { type: string }>)[option]?.type === "string";
    if (/^-\d+(\.\d+)?$/.test(arg) && !takesValue) moved.push(arg);
    else kept.push(arg);
  }
  return moved.length || end >= 0 ? [...kept, "--", ...moved, ...tail] : argv;
}

async function main(argv: string[]): Promise<number> {
  // `deno task start -- --emulate` passes the `--` on: options after it are still options.
  if (argv[1] === "--") argv = [argv[0], ...argv.slice(2)];
  argv = negativesLast(argv);
  const { values, positionals } = parseCommandLine(argv, OPTIONS);
  const [command, sub, ...rest] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) {
    throw new OperatorError("--port must be an integer between 0 and 65535");
  }
  if (command === "emulate") {
    // Loaded only here and in demo mode: a serving gateway does not carry the emulator.
    const [{ startEmulator }, { parseKeySpec }] = await Promise.all([
      import("../emulator/server.ts"),
      import("../emulator/keys.ts"),
    ]);
    let keys;
    try {
      keys = values.key?.map(parseKeySpec);
    } catch (error) {
      throw new OperatorError((error as Error).message);
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
    throw new OperatorError(`--workers must be an integer from 1 to ${MAX_WORKERS}`);
  }
  // Demo mode: the emulator in this process stands in for every built-in provider.
  const demo = command === "serve" && values.emulate ? await startDemo() : null;
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
    if (sub !== undefined) throw new OperatorError(`serve takes no argument "${sub}"\n\n${USAGE}`);
    return serve(config, { configFile: values.config, overrides });
  }

  const store = await openStore(config);
  try {
    if (command === "keys" && sub === "create") {
      if (!values.account) throw new OperatorError("keys create needs --account NAME");
      const created = await createKey(store, {
        ...settingsOf(values),
        account: values.account,
        creditUsd: values.credit,
      });
      print(
        created,
        `${created.key}\n\nkey ${created.id} for account ${created.account} (balance ${created.balance_usd} USD).\nThis is the only time the key is shown; store it now.`,
      );
      return 0;
    }
    if (command === "keys" && sub === "list") {
      const keys = await store.listKeys();
      print(keys.map((k) => keyJson(k)), table(keys.map((k) => keyRow(k))));
      return 0;
    }
    if (command === "keys" && sub === "update") {
      if (!rest[0]) throw new OperatorError("keys update needs the key id (see keys list)");
      if (values.disable && values.enable) {
        throw new OperatorError("--disable or --enable, not both");
      }
      const key = await updateKey(store, rest[0], settingsOf(values));
      print(keyJson(key), table([keyRow(key)]));
      return 0;
    }
    if (command === "keys" && sub === "rotate") {
      if (!rest[0]) throw new OperatorError("keys rotate needs the key id (see keys list)");
      const grace = values.grace === undefined ? 0 : durationMs(values.grace, "--grace");
      const rotated = await rotateKey(store, rest[0], grace);
      print(
        rotated,
        `${rotated.key}\n\nnew secret for key ${rotated.id}${
          rotated.previous_valid_until
            ? `; the old one works until ${rotated.previous_valid_until}`
            : "; the old one no longer works"
        }.\nThis is the only time the key is shown; store it now.`,
      );
      return 0;
    }
    if (command === "keys" && sub === "revoke") {
      if (!rest[0]) throw new OperatorError("keys revoke needs the key id (see keys list)");
      if (!(await store.revokeKey(rest[0]))) {
        throw new OperatorError(`no active key with id ${rest[0]}`);
      }
      console.log(`revoked ${rest[0]}`);
      return 0;
    }
    if (command === "accounts" && sub === "list") {
      const accounts = (await store.listAccounts()).map(accountJson);
      print(accounts, table(accounts));
      return 0;
    }
    if (command === "accounts" && sub === "update") {
      if (rest.length !== 1) throw new OperatorError("usage: accounts update NAME [settings]");
      const account = accountJson(await updateAccount(store, rest[0], settingsOf(values)));
      print(account, table([{ ...account, budgets: JSON.stringify(account.budgets) }]));
      return 0;
    }
    if (command === "accounts" && sub === "credit") {
      if (rest.length !== 2) throw new OperatorError("usage: accounts credit NAME USD");
      const account = accountJson(await creditAccount(store, rest[0], rest[1]));
      print(account, `account ${account.name}: balance ${account.balance_usd} USD`);
      return 0;
    }
  } finally {
    await store.close();
  }
  throw new OperatorError(`unknown command: ${positionals.join(" ")}\n\n${USAGE}`);
}

/** Key (or account) settings from the command line's options (see `KEY SETTINGS`). */
function settingsOf(values: Record<string, string | string[] | boolean | undefined>): Settings {
  const s: Settings = {};
  const str = (name: string) => values[name] as string | undefined;
  const list = (name: string) => values[name] as string[] | undefined;
  const number = (name: string, zeroClears: boolean) => {
    const text = str(name);
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!/^\d+$/.test(text.trim())) throw new OperatorError(`--${name} must be a whole number`);
    return zeroClears && n === 0 ? null : n;
  };
  if (str("name") !== undefined) s.name = /^(none)?$/i.test(str("name")!) ? null : str("name");
  if (list("budget")) s.budgets = budgetsFromText(list("budget")!);
  if (str("models") !== undefined) s.models = listFromText(str("models")!);
  if (str("deny-models") !== undefined) s.denyModels = listFromText(str("deny-models")!);
  if (str("expires") !== undefined) s.expires = str("expires");
  const tpm = number("tpm", true);
  if (tpm !== undefined) s.tpm = tpm;
  const max = number("max-concurrent", true);
  if (max !== undefined) s.maxConcurrent = max;
  const rpm = number("rpm", false);
  if (rpm !== undefined) s.rpm = rpm;
  const ips = list("ip");
  if (ips) s.ips = ips.length === 1 && /^none$/i.test(ips[0]) ? null : ips;
  if (list("meta")) s.metadata = metadataFromText(list("meta")!);
  if (str("strict") !== undefined) s.strict = switchFromText(str("strict")!, "--strict");
  if (values.disable) s.disabled = true;
  if (values.enable) s.disabled = false;
  return s;
}

/** A duration (`90m`, `12h`, `7d`, `2w`) in ms. */
function durationMs(text: string, what: string): number {
  const at = expiryOf(text, 0);
  if (at === null) return 0;
  if (!/^\d+\s*[mhdw]$/.test(text.trim())) {
    throw new OperatorError(`${what} must be a duration such as 30m, 12h, 7d or 2w`);
  }
  return at;
}

/** `store copy`: the SQLite file into an empty PostgreSQL database, checked. */
async function storeCopy(config: Config, from?: string, to?: string): Promise<number> {
  const source = from === undefined ? config.dbPath : from.replace(/^sqlite:/, "");
  const target = to ?? config.dbUrl;
  if (!target || !isPostgresUrl(target)) {
    throw new OperatorError("store copy needs --to postgres://… (or store.url in the config)");
  }
  const { copyStore, CopyError } = await import("../store/copy.ts");
  try {
    const report = await copyStore(source, target);
    const rows = Object.entries(report.rows).map(([table, n]) => `${table} ${n}`).join(", ");
    console.log(`copied ${source} to ${storeName({ dbPath: source, dbUrl: target })}: ${rows}`);
    console.log("counts and sums checked: equal on both sides");
    return 0;
  } catch (error) {
    if (error instanceof CopyError) throw new OperatorError(error.message);
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
      throw new OperatorError(`could not start the serving threads: ${error.message}`);
    }
    log("warn", "serving threads could not start: serving on one thread", {
      error: error.message,
    });
    return null;
  }
}

async function serve(config: Config, source: ConfigSource): Promise<number> {
  // The server's modules, for serving on this thread: loaded only then (serving threads each load
  // them themselves, and this thread starts them sooner without: half the modules), and started
  // now, to load while the store opens.
  const oneThread = config.workers > 1 ? undefined : import("../serve/one_thread.ts");
  if (oneThread) stopEarlyThread(); // the config says one thread
  oneThread?.catch(() => {}); // awaited below
  const store = await openStore(config, { owner: true, onCommit: observeCommit });
  for (const notice of config.notices) log("warn", notice);
  // Once per process, before any thread serves.
  const recovered = await recoverHolds(store, config.budgetTimeZone);
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
  if (!pool) stopEarlyThread();
  const workers = pool ? config.workers : 1;
  if (pool) {
    port = pool.port;
    stop = pool.stop;
  } else {
    const { startServer } = await (oneThread ?? import("../serve/one_thread.ts"));
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

/** Runs the command line `args` and exits with its status. */
export async function run(args: string[]): Promise<never> {
  try {
    Deno.exit(await main(args));
  } catch (error) {
    if (error instanceof ConfigError || error instanceof OperatorError) {
      console.error(`switchyard: ${error.message}`);
      Deno.exit(error instanceof ConfigError ? 78 : 2);
    }
    if (error instanceof UsageError) {
      console.error(`switchyard: ${error.message}\n\n${USAGE}`);
      Deno.exit(2);
    }
    throw error;
  }
}
