/**
 * `store copy`: moves a SQLite store into an empty PostgreSQL database — accounts and their
 * limits, keys (their hashes, names, limits and counts), budget states, the ledger, video jobs,
 * upstream objects, kept conversations, Messages threads and alerts (with their delivery state) —
 * with their ids, in one transaction, and checks the copy: row counts and money sums must be equal
 * on both sides, or nothing is committed. A target that already holds data is refused.
 *
 * A file a gateway still serves is refused (its owner lock is live). Calls still held in it are
 * copied as held without an owner, so the first replica that starts settles them on their estimate
 * (as after a crash).
 */
import { DatabaseSync } from "node:sqlite";
import postgres from "postgres";
import { openSqliteStore } from "./sqlite.ts";
import { openPostgresStore } from "./postgres.ts";
import { OwnerLock } from "./owners.ts";
import { storeDir } from "../config/load.ts";
import { jsonText } from "../http/json.ts";
import { toTotal } from "./amounts.ts";
import type { Total } from "./store.ts";

/** A copy that cannot be made or did not check out; nothing was written. */
export class CopyError extends Error {
  override name = "CopyError";
}

/** What was copied: rows per table, and the money totals both sides agree on (exact). */
export interface CopyReport {
  rows: Record<string, number>;
  sums: Record<string, Total>;
}

/** A table to copy: its columns with their PostgreSQL types, and how a SQLite row becomes JSON. */
interface Table {
  name: string;
  columns: [string, string][];
  /** Money columns whose sums are compared. */
  sums?: string[];
  /** The serial sequence to move past the copied ids. */
  sequence?: string;
  row?: (row: Record<string, unknown>) => Record<string, unknown>;
}

const json = (value: unknown) => value === null ? null : JSON.parse(String(value));

const TABLES: Table[] = [
  {
    name: "accounts",
    columns: [
      ["id", "bigint"],
      ["name", "text"],
      ["balance", "bigint"],
      ["spent", "bigint"],
      [
        "held",
        "bigint",
      ],
      ["created_at", "bigint"],
      ["limits", "jsonb"],
    ],
    sums: ["balance", "spent", "held"],
    sequence: "accounts_id_seq",
    row: (r) => ({ ...r, limits: json(r.limits) }),
  },
  {
    name: "keys",
    columns: [
      ["id", "text"],
      ["account_id", "bigint"],
      ["hash", "text"],
      ["prefix", "text"],
      [
        "rpm",
        "integer",
      ],
      ["created_at", "bigint"],
      ["revoked_at", "bigint"],
      ["name", "text"],
      ["metadata", "jsonb"],
      ["expires_at", "bigint"],
      ["disabled_at", "bigint"],
      ["last_used_at", "bigint"],
      ["limits", "jsonb"],
      ["previous_hash", "text"],
      ["previous_until", "bigint"],
      ["in_flight", "integer"],
      ["tpm_minute", "bigint"],
      ["tpm_tokens", "bigint"],
      ["strict", "boolean"],
    ],
    row: (r) => ({
      ...r,
      strict: Number(r.strict) === 1,
      hash: (r.hash as Uint8Array).toHex(),
      previous_hash: r.previous_hash ? (r.previous_hash as Uint8Array).toHex() : null,
      metadata: json(r.metadata),
      limits: json(r.limits),
    }),
  },
  {
    name: "budgets",
    columns: [
      ["owner", "text"],
      ["period", "text"],
      ["amount", "bigint"],
      ["held", "bigint"],
      ["window_start", "bigint"],
      ["window_spent", "bigint"],
    ],
    sums: ["held", "window_spent"],
  },
  {
    name: "ledger",
    columns: [
      ["id", "bigint"],
      ["kind", "text"],
      ["status", "text"],
      ["request_id", "text"],
      ["key_id", "text"],
      ["account_id", "bigint"],
      ["endpoint", "text"],
      ["model", "text"],
      ["provider", "text"],
      ["upstream_model", "text"],
      ["reserved", "bigint"],
      ["amount", "bigint"],
      ["units", "jsonb"],
      ["estimate", "jsonb"],
      ["estimated", "boolean"],
      ["note", "text"],
      ["created_at", "bigint"],
      ["settled_at", "bigint"],
      ["limits", "jsonb"],
      ["input_tokens", "bigint"],
      ["cached_tokens", "bigint"],
      ["cache_write_tokens", "bigint"],
      ["cache_write_1h_tokens", "bigint"],
      ["cache_saved", "bigint"],
      ["cache_miss", "text"],
      ["cache_miss_tokens", "bigint"],
      ["cache_lost", "bigint"],
    ],
    sums: ["amount", "reserved", "cache_saved", "cache_lost"],
    sequence: "ledger_id_seq",
    row: (r) => ({
      ...r,
      units: json(r.units),
      estimate: json(r.estimate),
      estimated: Number(r.estimated) === 1,
      limits: json(r.limits),
    }),
  },
  {
    name: "video_jobs",
    columns: [
      ["id", "text"],
      ["upstream_id", "text"],
      ["account_id", "bigint"],
      ["key_id", "text"],
      ["ledger_id", "bigint"],
      ["model", "text"],
      ["provider", "text"],
      ["upstream_key", "text"],
      ["rate", "bigint"],
      ["held_seconds", "integer"],
      ["status", "text"],
      ["billed_seconds", "integer"],
      ["amount", "bigint"],
      ["result", "text"],
      ["created_at", "bigint"],
      ["finished_at", "bigint"],
    ],
    sums: ["amount"],
  },
  {
    name: "upstream_objects",
    columns: [
      ["id", "text"],
      ["account_id", "bigint"],
      ["kind", "text"],
      [
        "context_tokens",
        "bigint",
      ],
      ["provider", "text"],
      ["created_at", "bigint"],
    ],
  },
  {
    name: "stored_responses",
    columns: [
      ["id", "text"],
      ["account_id", "bigint"],
      ["previous_id", "text"],
      [
        "items",
        "text",
      ],
      ["context_tokens", "bigint"],
      ["created_at", "bigint"],
    ],
  },
  {
    name: "thread_turns",
    columns: [
      ["id", "text"],
      ["account_id", "bigint"],
      ["previous_id", "text"],
      ["turn", "text"],
      ["created_at", "bigint"],
    ],
  },
  {
    name: "alerts",
    columns: [
      ["id", "bigint"],
      ["type", "text"],
      ["owner", "text"],
      ["period", "text"],
      ["window_start", "bigint"],
      ["threshold", "bigint"],
      ["account_id", "bigint"],
      ["key_id", "text"],
      ["payload", "jsonb"],
      ["status", "text"],
      ["attempts", "integer"],
      ["next_attempt_at", "bigint"],
      ["last_attempt_at", "bigint"],
      ["last_error", "text"],
      ["created_at", "bigint"],
      ["delivered_at", "bigint"],
    ],
    sequence: "alerts_id_seq",
    row: (r) => ({ ...r, payload: json(r.payload) }),
  },
];

/** Rows sent to PostgreSQL per statement. */
const BATCH = 1_000;

/** Copies the SQLite store at `from` into the empty PostgreSQL database at `to`. */
export async function copyStore(from: string, to: string): Promise<CopyReport> {
  try {
    Deno.statSync(from);
  } catch {
    throw new CopyError(`no SQLite store at ${from}`);
  }
  if (new OwnerLock(`${storeDir(from)}/owners`).anyAlive()) {
    throw new CopyError(`a gateway is serving ${from}: stop it before copying`);
  }
  // Both schemas brought up to date first (the file's, as any start of the gateway would).
  openSqliteStore(from).close();
  await (await openPostgresStore(to)).close();
  const source = new DatabaseSync(from, { readOnly: true });
  const target = postgres(to, { max: 1, onnotice: () => {} });
  try {
    const report: CopyReport = { rows: {}, sums: {} };
    // One read transaction: every table as of one moment (WAL keeps the snapshot).
    source.exec("BEGIN");
    await target.begin(async (tx) => {
      for (const table of TABLES) {
        const [{ n }] = await tx.unsafe(`SELECT count(*)::int AS n FROM ${table.name}`);
        if (n > 0) {
          throw new CopyError(`the target is not empty: ${table.name} has ${n} rows`);
        }
      }
      for (const table of TABLES) {
        const names = table.columns.map(([name]) => name);
        const select = source.prepare(`SELECT ${names.join(", ")} FROM ${table.name}`);
        // Integers past 2^53 (a lifetime spend) are read as bigints, and sent as exact digits.
        select.setReadBigInts(true);
        const expand = names.map((name) =>
          name === "hash" || name === "previous_hash" ? `decode(r.${name}, 'hex')` : `r.${name}`
        );
        const record = table.columns.map(([name, type]) => `${name} ${type}`).join(", ");
        const insert = `INSERT INTO ${table.name} (${names.join(", ")})
          SELECT ${expand.join(", ")} FROM jsonb_to_recordset($1::text::jsonb) AS r(${record})`;
        let batch: Record<string, unknown>[] = [];
        let copied = 0;
        const flush = async () => {
          if (!batch.length) return;
          // As text (exact digits past 2^53), cast to jsonb by the statement.
          await tx.unsafe(insert, [jsonText(batch)]);
          copied += batch.length;
          batch = [];
        };
        for (const read of select.iterate() as Iterable<Record<string, unknown>>) {
          const row = numbers(read);
          batch.push(table.row ? table.row(row) : row);
          if (batch.length >= BATCH) await flush();
        }
        await flush();
        if (table.sequence) {
          await tx.unsafe(
            `SELECT setval('${table.sequence}', coalesce((SELECT max(id) FROM ${table.name}), 1))`,
          );
        }
        await check(source, tx, table, copied, report);
      }
    });
    return report;
  } finally {
    if (source.isTransaction) source.exec("ROLLBACK");
    source.close();
    await target.end();
  }
}

/** A row's integers as numbers where they are safe, as bigints beyond (see `toTotal`). */
function numbers(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) {
    out[name] = typeof value === "bigint" ? toTotal(value) : value;
  }
  return out;
}

/** Compares counts and sums of one table on both sides; throws (rolling back) when they differ. */
async function check(
  source: DatabaseSync,
  target: postgres.TransactionSql,
  table: Table,
  copied: number,
  report: CopyReport,
): Promise<void> {
  const sums = table.sums ?? [];
  const columns = ["count(*) AS n", ...sums.map((s) => `coalesce(sum(${s}), 0) AS ${s}`)];
  const query = `SELECT ${columns.join(", ")} FROM ${table.name}`;
  const statement = source.prepare(query);
  statement.setReadBigInts(true);
  const mine = statement.get() as Record<string, unknown>;
  const [theirs] = await target.unsafe(query);
  for (const key of ["n", ...sums]) {
    if (String(toTotal(mine[key])) !== String(toTotal(theirs[key]))) {
      throw new CopyError(
        `${table.name}: ${key === "n" ? "rows" : `sum of ${key}`} is ${mine[key]} in the file but ${
          theirs[key]
        } in the copy`,
      );
    }
    if (key !== "n") report.sums[`${table.name}.${key}`] = toTotal(mine[key]);
  }
  if (copied !== Number(mine.n)) throw new CopyError(`${table.name}: ${copied} rows read`);
  report.rows[table.name] = copied;
}
