/**
 * Switchyard command line:
 *   serve [--config FILE] [--host H] [--port N]
 *   keys create --account NAME [--rpm N] [--credit USD] [--json] · keys list [--json] · keys revoke ID
 *   accounts list [--json] · accounts credit NAME USD
 *   config check [--config FILE]
 *   emulate [--host H] [--port N] [--key K]
 */
import { parseArgs } from "node:util";
import { ConfigError, loadConfig } from "./src/config/load.ts";
import { openSqliteStore } from "./src/store/sqlite.ts";
import { startServer } from "./src/server.ts";
import { flushLog, log } from "./src/log.ts";
import { billsInFlight, recoverHolds } from "./src/billing/ledger.ts";
import { startEmulator } from "./src/emulator/server.ts";
import { clearSpool } from "./src/http/multipart.ts";
import {
  accountJson,
  CliError,
  createKey,
  creditAccount,
  keyJson,
  table,
} from "./src/cli/commands.ts";

const USAGE = `usage: switchyard <command> [options]

  serve [--config FILE] [--host H] [--port N]     run the gateway
  keys create --account NAME [--rpm N] [--credit USD] [--json]
  keys list [--json]
  keys revoke ID
  accounts list [--json]
  accounts credit NAME USD                         add (or, negative, remove) balance
  config check [--config FILE]                     validate the configuration and exit
  emulate [--host H] [--port N] [--key K]          run the offline provider emulator

Every command takes --config FILE (or SWITCHYARD_CONFIG); the store is store.path
(default ./data/switchyard.db, or SWITCHYARD_DB).`;

const OPTIONS = {
  config: { type: "string" },
  host: { type: "string" },
  port: { type: "string" },
  account: { type: "string" },
  rpm: { type: "string" },
  credit: { type: "string" },
  json: { type: "boolean" },
  key: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

async function main(argv: string[]): Promise<number> {
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
    const server = startEmulator({
      hostname: values.host ?? "127.0.0.1",
      port: port ?? 8090,
      requiredKey: values.key,
    });
    log("info", "emulator listening", { host: server.addr.hostname, port: server.addr.port });
    flushLog();
    await server.finished;
    return 0;
  }
  const config = await loadConfig(values.config, (name) => Deno.env.get(name), {
    host: values.host,
    port,
  });
  const print = (json: unknown, text: string) =>
    console.log(values.json ? JSON.stringify(json) : text);

  if (command === "config" && sub === "check") {
    for (const notice of config.notices) console.log(notice);
    console.log(`config ok: ${config.catalog.entries().length} models, store ${config.dbPath}`);
    return 0;
  }
  if (command === "serve") return serve(config);

  const store = openSqliteStore(config.dbPath);
  try {
    if (command === "keys" && sub === "create") {
      if (!values.account) throw new CliError("keys create needs --account NAME");
      const created = createKey(store, {
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
      const keys = store.listKeys().map(keyJson);
      print(keys, table(keys));
      return 0;
    }
    if (command === "keys" && sub === "revoke") {
      if (!rest[0]) throw new CliError("keys revoke needs the key id (see keys list)");
      if (!store.revokeKey(rest[0])) throw new CliError(`no active key with id ${rest[0]}`);
      console.log(`revoked ${rest[0]}`);
      return 0;
    }
    if (command === "accounts" && sub === "list") {
      const accounts = store.listAccounts().map(accountJson);
      print(accounts, table(accounts));
      return 0;
    }
    if (command === "accounts" && sub === "credit") {
      if (rest.length !== 2) throw new CliError("usage: accounts credit NAME USD");
      const account = accountJson(creditAccount(store, rest[0], rest[1]));
      print(account, `account ${account.name}: balance ${account.balance_usd} USD`);
      return 0;
    }
  } finally {
    store.close();
  }
  throw new CliError(`unknown command: ${positionals.join(" ")}\n\n${USAGE}`);
}

/** After the last call is settled, how long a stopping server lets its last answers flush. */
const FLUSH_MS = 1_000;

async function serve(config: Awaited<ReturnType<typeof loadConfig>>): Promise<number> {
  const store = openSqliteStore(config.dbPath, { owner: true });
  for (const notice of config.notices) log("warn", notice);
  const recovered = await recoverHolds(store);
  if (recovered) log("warn", "settled calls left open by an earlier crash", { calls: recovered });
  const leftovers = await clearSpool(config.spoolDir);
  if (leftovers) log("warn", "removed uploads left by an earlier crash", { files: leftovers });
  const server = startServer({ config, store });
  log("info", "listening", {
    host: server.addr.hostname,
    port: server.addr.port,
    store: config.dbPath,
  });
  flushLog();
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    log("info", "shutting down");
    server.shutdown();
    // Streams are cut after drainTimeoutMs. A connection that still holds on after that (a client
    // that never finishes its upload) does not keep the process: it exits once no call holds
    // funds — calls still waiting for their upstream get up to upstreamTimeoutMs more.
    const drained = Date.now() + config.drainTimeoutMs;
    const latest = drained + config.upstreamTimeoutMs;
    const check = setInterval(() => {
      const now = Date.now();
      if (now < drained || (billsInFlight() > 0 && now < latest)) return;
      clearInterval(check);
      if (billsInFlight() > 0) {
        log("warn", "exiting with calls in flight", { calls: billsInFlight() });
      }
      // A moment for the last answers (a cut stream's error event) to reach their clients.
      setTimeout(() => {
        log("info", "connections still open after the drain: exiting");
        flushLog();
        store.close();
        Deno.exit(0);
      }, FLUSH_MS);
    }, 100);
  };
  Deno.addSignalListener("SIGTERM", stop);
  Deno.addSignalListener("SIGINT", stop);
  await server.finished;
  store.close();
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
