/**
 * A throw-away PostgreSQL server for tests, from the Debian `postgresql` package: `initdb` in a
 * temporary directory, `postgres` on a free loopback port (its socket in that directory, fsync
 * off), trust authentication for the one superuser `switchyard`. PostgreSQL refuses to run as
 * root, so under root both run as the package's `postgres` user (through `setpriv`). Tests that
 * need it skip, with `POSTGRES_MISSING` as their reason, when the binaries are absent.
 */
import { freePort } from "./gateway.ts";

/** Where the package puts its binaries: `/usr/lib/postgresql/<major>/bin`, the newest first. */
function binDir(): string | null {
  const root = "/usr/lib/postgresql";
  let majors: number[] = [];
  try {
    majors = [...Deno.readDirSync(root)].map((e) => Number(e.name)).filter(Number.isInteger);
  } catch {
    return null;
  }
  for (const major of majors.sort((a, b) => b - a)) {
    const dir = `${root}/${major}/bin`;
    try {
      Deno.statSync(`${dir}/initdb`);
      Deno.statSync(`${dir}/postgres`);
      return dir;
    } catch { /* not this one */ }
  }
  return null;
}

const BIN = binDir();

/** Whether the PostgreSQL binaries are here (else the tests that need them skip). */
export const HAS_POSTGRES = BIN !== null;

/** Why PostgreSQL tests skip. */
export const POSTGRES_MISSING =
  "PostgreSQL binaries not found under /usr/lib/postgresql/*/bin (Debian package `postgresql`; .ci/run installs it)";

/** A running throw-away server. */
export interface Postgres {
  /** `postgres://switchyard@127.0.0.1:PORT/postgres` (trust authentication, no password). */
  url: string;
  port: number;
  /** Stops the server (fast shutdown) and removes its directory. */
  stop(): Promise<void>;
  /** Stops the server but keeps its data (the database goes away, as in an outage). */
  pause(): Promise<void>;
  /** Starts the paused server again, on the same port with the same data. */
  resume(): Promise<void>;
  /** A new, empty database on this server; its URL. */
  database(name: string): Promise<string>;
}

function isRoot(): boolean {
  return Deno.uid() === 0;
}

/**
 * Runs a PostgreSQL binary, under root as the `postgres` user (`setpriv` execs it in place, so a
 * signal to the process reaches PostgreSQL itself).
 */
function command(binary: string, args: string[], piped = true): Deno.Command {
  const program = `${BIN}/${binary}`;
  const [cmd, cmdArgs] = isRoot()
    ? [
      "setpriv",
      ["--reuid=postgres", "--regid=postgres", "--init-groups", "--", program, ...args],
    ]
    : [program, args];
  return new Deno.Command(cmd, {
    args: cmdArgs,
    stdin: "null",
    stdout: piped ? "piped" : "null",
    stderr: piped ? "piped" : "null",
    env: { LC_ALL: "C", TZ: "UTC" },
  });
}

/** Whether something accepts TCP connections on `port`. */
/**
 * Whether the server takes queries: not only listening — a server still starting up (or
 * recovering) accepts connections and refuses them with 57P03 — but answering one.
 */
async function listening(port: number): Promise<boolean> {
  try {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    conn.close();
  } catch {
    return false;
  }
  const { default: postgres } = await import("postgres");
  const sql = postgres(`postgres://switchyard@127.0.0.1:${port}/postgres`, {
    max: 1,
    connect_timeout: 2,
    onnotice: () => {},
  });
  try {
    await sql`SELECT 1`;
    return true;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

/** Starts a fresh server; throws (with its log) when it does not come up within 30 s. */
export async function startPostgres(): Promise<Postgres> {
  if (!BIN) throw new Error(POSTGRES_MISSING);
  const dir = await Deno.makeTempDir({ prefix: "switchyard-pg-" });
  if (isRoot()) {
    const id = await new Deno.Command("id", { args: ["-u", "postgres"], stdout: "piped" }).output();
    const gid = await new Deno.Command("id", { args: ["-g", "postgres"], stdout: "piped" })
      .output();
    const uid = Number(new TextDecoder().decode(id.stdout).trim());
    await Deno.chown(dir, uid, Number(new TextDecoder().decode(gid.stdout).trim()));
  }
  const data = `${dir}/data`;
  const init = await command("initdb", [
    "-D",
    data,
    "-U",
    "switchyard",
    "-A",
    "trust",
    "-E",
    "UTF8",
    "--no-sync",
  ]).output();
  if (!init.success) {
    await Deno.remove(dir, { recursive: true });
    throw new Error(`initdb failed: ${new TextDecoder().decode(init.stderr)}`);
  }
  const port = freePort();
  const log = `${dir}/postgres.log`;
  const spawn = async () => {
    const child = command("postgres", [
      "-D",
      data,
      "-p",
      String(port),
      "-h",
      "127.0.0.1",
      "-k",
      dir,
      "-c",
      "fsync=off",
      "-c",
      "synchronous_commit=off",
      "-c",
      "full_page_writes=off",
      "-c",
      `log_directory=${dir}`,
      "-c",
      "logging_collector=off",
      "-c",
      "max_connections=300",
    ], false).spawn();
    const until = Date.now() + 30_000;
    while (!(await listening(port))) {
      if (Date.now() > until) {
        child.kill("SIGKILL");
        await child.status;
        const text = await Deno.readTextFile(log).catch(() => "");
        await Deno.remove(dir, { recursive: true });
        throw new Error(`postgres did not start on port ${port}: ${text}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return child;
  };
  let server: Deno.ChildProcess | null = await spawn();
  const halt = async () => {
    if (!server) return;
    // SIGINT: fast shutdown (clients disconnected, no checkpoint wait worth having here).
    server.kill("SIGINT");
    await server.status;
    server = null;
  };
  const url = `postgres://switchyard@127.0.0.1:${port}/postgres`;
  return {
    url,
    port,
    async stop() {
      await halt();
      await Deno.remove(dir, { recursive: true });
    },
    pause: halt,
    async resume() {
      server ??= await spawn();
    },
    async database(name: string) {
      if (!/^\w+$/.test(name)) throw new Error(`not a database name: ${name}`);
      const { default: postgres } = await import("postgres");
      const sql = postgres(url, { max: 1, onnotice: () => {} });
      try {
        await sql.unsafe(`CREATE DATABASE ${name}`);
      } finally {
        await sql.end();
      }
      return url.replace(/\/postgres$/, `/${name}`);
    },
  };
}
