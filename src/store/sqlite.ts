/**
 * The embedded store: one SQLite file through `node:sqlite`, in WAL mode so the CLI can write
 * while the server runs. Every money change commits in one transaction with its ledger entry.
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";
import type { Account, Charge, Hold, KeyRecord, Store, UsageSummary } from "./store.ts";

const MIGRATIONS: string[] = [
  `CREATE TABLE accounts (
     id INTEGER PRIMARY KEY,
     name TEXT NOT NULL UNIQUE,
     balance INTEGER NOT NULL DEFAULT 0,
     spent INTEGER NOT NULL DEFAULT 0,
     held INTEGER NOT NULL DEFAULT 0,
     created_at INTEGER NOT NULL
   );
   CREATE TABLE keys (
     id TEXT PRIMARY KEY,
     account_id INTEGER NOT NULL REFERENCES accounts(id),
     hash BLOB NOT NULL,
     prefix TEXT NOT NULL,
     rpm INTEGER,
     created_at INTEGER NOT NULL,
     revoked_at INTEGER
   );
   CREATE TABLE ledger (
     id INTEGER PRIMARY KEY,
     kind TEXT NOT NULL CHECK (kind IN ('charge', 'credit')),
     call_id TEXT UNIQUE,
     request_id TEXT,
     key_id TEXT,
     account_id INTEGER NOT NULL REFERENCES accounts(id),
     endpoint TEXT,
     model TEXT,
     provider TEXT,
     amount INTEGER NOT NULL,
     note TEXT,
     estimated INTEGER NOT NULL DEFAULT 0,
     created_at INTEGER NOT NULL
   );
   CREATE INDEX ledger_account ON ledger (account_id, kind);
   CREATE TABLE ledger_units (
     ledger_id INTEGER NOT NULL REFERENCES ledger(id),
     unit TEXT NOT NULL,
     quantity INTEGER NOT NULL,
     amount INTEGER NOT NULL,
     PRIMARY KEY (ledger_id, unit)
   ) WITHOUT ROWID;
   CREATE TABLE holds (
     id TEXT PRIMARY KEY,
     account_id INTEGER NOT NULL REFERENCES accounts(id),
     key_id TEXT NOT NULL,
     request_id TEXT NOT NULL,
     endpoint TEXT NOT NULL,
     model TEXT NOT NULL,
     provider TEXT NOT NULL,
     amount INTEGER NOT NULL,
     estimate TEXT NOT NULL,
     created_at INTEGER NOT NULL
   );`,
];

type Row = Record<string, unknown>;

/** Opens (creating and migrating if needed) the SQLite store at `path`. */
export function openSqliteStore(path: string): Store {
  if (path !== ":memory:") {
    const dir = path.replace(/[/\\][^/\\]*$/, "");
    if (dir && dir !== path) Deno.mkdirSync(dir, { recursive: true });
  }
  const db = new DatabaseSync(path);
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;");
  db.exec("PRAGMA foreign_keys = ON;");
  migrate(db);
  return new SqliteStore(db);
}

function migrate(db: DatabaseSync): void {
  const version = Number((db.prepare("PRAGMA user_version").get() as Row).user_version);
  for (let v = version; v < MIGRATIONS.length; v++) {
    db.exec("BEGIN IMMEDIATE");
    try {
      db.exec(MIGRATIONS[v]);
      db.exec(`PRAGMA user_version = ${v + 1}`);
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    }
  }
}

const ACCOUNT_COLUMNS = "id, name, balance, spent, held, created_at";
const KEY_COLUMNS =
  "k.id, k.account_id, a.name AS account_name, k.hash, k.prefix, k.rpm, k.created_at, k.revoked_at";

class SqliteStore implements Store {
  readonly #db: DatabaseSync;
  readonly #s: Record<string, StatementSync>;

  constructor(db: DatabaseSync) {
    this.#db = db;
    const p = (sql: string) => db.prepare(sql);
    this.#s = {
      accountByName: p(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE name = ?`),
      accountById: p(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`),
      insertAccount: p(
        `INSERT INTO accounts (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`,
      ),
      accounts: p(`SELECT ${ACCOUNT_COLUMNS} FROM accounts ORDER BY name`),
      addBalance: p(`UPDATE accounts SET balance = balance + ? WHERE id = ?`),
      spend: p(`UPDATE accounts SET balance = balance - ?, spent = spent + ? WHERE id = ?`),
      insertCredit: p(
        `INSERT INTO ledger (kind, account_id, amount, note, created_at)
         VALUES ('credit', ?, ?, ?, ?)`,
      ),
      insertCharge: p(
        `INSERT INTO ledger (kind, call_id, request_id, key_id, account_id, endpoint, model,
                             provider, amount, estimated, created_at)
         VALUES ('charge', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (call_id) DO NOTHING`,
      ),
      holdFunds: p(
        `UPDATE accounts SET held = held + ?1
         WHERE id = ?2 AND (?1 = 0 OR balance - held >= ?1)`,
      ),
      releaseFunds: p(`UPDATE accounts SET held = held - ? WHERE id = ?`),
      insertHold: p(
        `INSERT INTO holds (id, account_id, key_id, request_id, endpoint, model, provider, amount,
                            estimate, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      deleteHold: p(`DELETE FROM holds WHERE id = ? RETURNING account_id, amount`),
      holds: p(`SELECT * FROM holds ORDER BY created_at`),
      insertUnit: p(
        `INSERT INTO ledger_units (ledger_id, unit, quantity, amount) VALUES (?, ?, ?, ?)`,
      ),
      insertKey: p(
        `INSERT INTO keys (id, account_id, hash, prefix, rpm, created_at)
         VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      keyById: p(`SELECT ${KEY_COLUMNS} FROM keys k JOIN accounts a ON a.id = k.account_id
                  WHERE k.id = ?`),
      keys: p(`SELECT ${KEY_COLUMNS} FROM keys k JOIN accounts a ON a.id = k.account_id
               ORDER BY k.created_at, k.id`),
      revokeKey: p(`UPDATE keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`),
      requests: p(`SELECT count(*) AS n FROM ledger WHERE account_id = ? AND kind = 'charge'`),
      byUnit: p(`SELECT u.unit, sum(u.quantity) AS quantity, sum(u.amount) AS amount
                 FROM ledger l JOIN ledger_units u ON u.ledger_id = l.id
                 WHERE l.account_id = ? AND l.kind = 'charge' GROUP BY u.unit ORDER BY u.unit`),
      byModel: p(`SELECT model, count(*) AS requests, sum(amount) AS amount FROM ledger
                  WHERE account_id = ? AND kind = 'charge' GROUP BY model ORDER BY model`),
    };
  }

  #tx<T>(work: () => T): T {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const result = work();
      this.#db.exec("COMMIT");
      return result;
    } catch (error) {
      this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  ensureAccount(name: string): Account {
    this.#s.insertAccount.run(name, Date.now());
    return this.account(name)!;
  }

  account(name: string): Account | undefined {
    const row = this.#s.accountByName.get(name) as Row | undefined;
    return row && toAccount(row);
  }

  listAccounts(): Account[] {
    return (this.#s.accounts.all() as Row[]).map(toAccount);
  }

  credit(accountId: number, amount: number, note: string): Account {
    return this.#tx(() => {
      this.#s.addBalance.run(amount, accountId);
      this.#s.insertCredit.run(accountId, amount, note, Date.now());
      return toAccount(this.#s.accountById.get(accountId) as Row);
    });
  }

  insertKey(key: Omit<KeyRecord, "accountName" | "revokedAt">): void {
    this.#s.insertKey.run(key.id, key.accountId, key.hash, key.prefix, key.rpm, key.createdAt);
  }

  findKey(id: string): KeyRecord | undefined {
    const row = this.#s.keyById.get(id) as Row | undefined;
    return row && toKey(row);
  }

  listKeys(): KeyRecord[] {
    return (this.#s.keys.all() as Row[]).map(toKey);
  }

  revokeKey(id: string): boolean {
    return Number(this.#s.revokeKey.run(Date.now(), id).changes) === 1;
  }

  reserve(h: Hold): boolean {
    return this.#tx(() => {
      if (Number(this.#s.holdFunds.run(h.amount, h.accountId).changes) !== 1) return false;
      this.#s.insertHold.run(
        h.id,
        h.accountId,
        h.keyId,
        h.requestId,
        h.endpoint,
        h.model,
        h.provider,
        h.amount,
        JSON.stringify(h.estimate),
        h.createdAt,
      );
      return true;
    });
  }

  settle(holdId: string, charge: Charge | null): boolean {
    return this.#tx(() => {
      const hold = this.#s.deleteHold.get(holdId) as Row | undefined;
      if (!hold) return false;
      this.#s.releaseFunds.run(Number(hold.amount), Number(hold.account_id));
      if (charge) this.#insertCharge(charge);
      return true;
    });
  }

  pendingHolds(): Hold[] {
    return (this.#s.holds.all() as Row[]).map((row) => ({
      id: String(row.id),
      accountId: Number(row.account_id),
      keyId: String(row.key_id),
      requestId: String(row.request_id),
      endpoint: String(row.endpoint),
      model: String(row.model),
      provider: String(row.provider),
      amount: Number(row.amount),
      estimate: JSON.parse(String(row.estimate)),
      createdAt: Number(row.created_at),
    }));
  }

  charge(c: Charge): boolean {
    return this.#tx(() => this.#insertCharge(c));
  }

  #insertCharge(c: Charge): boolean {
    {
      const inserted = this.#s.insertCharge.run(
        c.callId,
        c.requestId,
        c.keyId,
        c.accountId,
        c.endpoint,
        c.model,
        c.provider,
        c.amount,
        c.estimated ? 1 : 0,
        Date.now(),
      );
      if (Number(inserted.changes) !== 1) return false;
      const ledgerId = Number(inserted.lastInsertRowid);
      for (const line of c.units) {
        this.#s.insertUnit.run(ledgerId, line.unit, line.quantity, line.amount);
      }
      this.#s.spend.run(c.amount, c.amount, c.accountId);
      return true;
    }
  }

  usage(accountId: number): UsageSummary {
    const account = toAccount(this.#s.accountById.get(accountId) as Row);
    const byUnit: UsageSummary["byUnit"] = {};
    for (const row of this.#s.byUnit.all(accountId) as Row[]) {
      byUnit[String(row.unit)] = { quantity: Number(row.quantity), amount: Number(row.amount) };
    }
    const byModel: UsageSummary["byModel"] = {};
    for (const row of this.#s.byModel.all(accountId) as Row[]) {
      byModel[String(row.model)] = { requests: Number(row.requests), amount: Number(row.amount) };
    }
    const requests = Number((this.#s.requests.get(accountId) as Row).n);
    return { account, requests, byUnit, byModel };
  }

  close(): void {
    this.#db.close();
  }
}

function toAccount(row: Row): Account {
  return {
    id: Number(row.id),
    name: String(row.name),
    balance: Number(row.balance),
    spent: Number(row.spent),
    held: Number(row.held),
    createdAt: Number(row.created_at),
  };
}

function toKey(row: Row): KeyRecord {
  return {
    id: String(row.id),
    accountId: Number(row.account_id),
    accountName: String(row.account_name),
    hash: new Uint8Array(row.hash as Uint8Array),
    prefix: String(row.prefix),
    rpm: row.rpm === null ? null : Number(row.rpm),
    createdAt: Number(row.created_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
  };
}
