/**
 * What only the SQLite store has: owner locks (crash recovery on a file several processes share),
 * upgrades of old files, and the checkpoints of a serving process. What both stores do is in
 * `store_contract_test.ts`.
 */
import assert from "node:assert/strict";
import { openSqliteStore } from "../../../src/store/sqlite.ts";
import { OwnerLock } from "../../../src/store/owners.ts";
import { SqliteConnection } from "../../../src/store/sqlite_connection.ts";
import { DatabaseSync } from "node:sqlite";
import { eventually, sleep } from "../../helpers/poll.ts";

async function withDir(work: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "switchyard-store-" });
  try {
    await work(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("an owner is alive while it holds its lock, gone once it gives it up; sweeps keep live ones", async () => {
  await withDir(async (dir) => {
    const serving = new OwnerLock(`${dir}/owners`);
    const id = serving.acquire();
    const other = new OwnerLock(`${dir}/owners`);
    assert.equal(other.alive(id), true);
    assert.equal(other.alive("zzzzzzzzzz"), false, "an id never taken is gone");
    other.sweep(new Set());
    assert.ok(Deno.statSync(`${dir}/owners/${id}.lock`).isFile, "a live lock survives a sweep");
    serving.release();
    assert.equal(other.alive(id), false);
    await Deno.writeTextFile(`${dir}/owners/0000000001.lock`, "");
    other.sweep(new Set());
    assert.deepEqual([...Deno.readDirSync(`${dir}/owners`)], [], "dead locks are swept");
  });
});

Deno.test("a hold taken before the funds moved with the ledger row settles exactly after the upgrade", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/s.db`;
    openSqliteStore(path).close();
    const { DatabaseSync } = await import("node:sqlite");
    const db = new DatabaseSync(path);
    // The schema as it was (version 7), with a call held the way it used to be: the account's
    // `held` raised by its own statement.
    db.exec(`DROP TABLE thread_turns; DROP TABLE alerts; DROP INDEX keys_expiry;
      DROP TRIGGER accounts_limits; DROP TABLE budgets; DROP TRIGGER keys_updated;
      ALTER TABLE keys DROP COLUMN name; ALTER TABLE keys DROP COLUMN metadata;
      ALTER TABLE keys DROP COLUMN expires_at; ALTER TABLE keys DROP COLUMN disabled_at;
      ALTER TABLE keys DROP COLUMN last_used_at; ALTER TABLE keys DROP COLUMN limits;
      ALTER TABLE keys DROP COLUMN previous_hash; ALTER TABLE keys DROP COLUMN previous_until;
      ALTER TABLE keys DROP COLUMN in_flight; ALTER TABLE keys DROP COLUMN tpm_minute;
      ALTER TABLE keys DROP COLUMN tpm_tokens; ALTER TABLE keys DROP COLUMN strict;
      ALTER TABLE accounts DROP COLUMN limits;
      ALTER TABLE ledger DROP COLUMN limits;
      ALTER TABLE ledger DROP COLUMN input_tokens; ALTER TABLE ledger DROP COLUMN cached_tokens;
      ALTER TABLE ledger DROP COLUMN cache_write_tokens;
      ALTER TABLE ledger DROP COLUMN cache_write_1h_tokens;
      ALTER TABLE ledger DROP COLUMN cache_saved; ALTER TABLE ledger DROP COLUMN cache_miss;
      ALTER TABLE ledger DROP COLUMN cache_miss_tokens; ALTER TABLE ledger DROP COLUMN cache_lost;
      DROP TRIGGER ledger_hold; DROP TRIGGER ledger_settle; DROP TRIGGER ledger_release;
      DROP TRIGGER keys_inserted; DROP TRIGGER keys_deleted;
      DROP TABLE key_changes;
      DROP INDEX ledger_held; DROP INDEX ledger_account;
      CREATE INDEX ledger_account ON ledger (account_id, kind, status);
      ALTER TABLE ledger DROP COLUMN upstream_model;
      ALTER TABLE upstream_objects DROP COLUMN provider;
      ALTER TABLE video_jobs DROP COLUMN upstream_key;
      PRAGMA user_version = 7;
      INSERT INTO accounts (name, balance, held, created_at) VALUES ('old', 5000, 3000, 0);
      INSERT INTO ledger (kind, status, account_id, reserved, amount, created_at)
        VALUES ('charge', 'held', 1, 3000, 0, 0);`);
    db.close();
    const store = openSqliteStore(path);
    const id = Number((await store.pendingHolds())[0].id);
    const units = [{ unit: "input_tokens", quantity: 400, amount: 1_200 }];
    assert.equal(await store.settle(id, { units, amount: 1_200, estimated: true }), true);
    const account = (await store.account("old"))!;
    assert.deepEqual([account.balance, account.held, account.spent], [3_800, 0, 1_200]);
    store.close();
  });
});

/**
 * Writes about 600 pages of ledger rows (far below the commits' own checkpoint threshold) to a
 * store prepared for serving by `shared` threads or one, and waits until the database file has
 * them (what only a checkpoint writes there).
 */
async function checkpointedWhileServing(shared: boolean): Promise<void> {
  await withDir(async (dir) => {
    const path = `${dir}/s.db`;
    const store = openSqliteStore(path);
    const account = await store.ensureAccount("a");
    const size = () => Deno.statSync(path).size;
    assert.equal(store.prepareForServing({ shared }) instanceof SharedArrayBuffer, shared);
    const before = size();
    for (let i = 0; i < 2_000; i++) await store.credit(account.id, 1, "x".repeat(1_000));
    const deadline = Date.now() + 5_000;
    while (size() < before + 2_000_000 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(size() >= before + 2_000_000, `the database file grew from ${before} to ${size()}`);
    assert.equal((await store.account("a"))!.balance, 2_000);
    store.close();
  });
}

Deno.test("shared with threads, the store's log is checkpointed by its own thread, not in commits", async () => {
  await checkpointedWhileServing(true);
});

Deno.test("served by one thread, the store's log is checkpointed between its turns, not in commits", async () => {
  await checkpointedWhileServing(false);
});

Deno.test("served by one thread, a checkpoint that fails is reported once, until one succeeds again", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/c.db`;
    const db = new DatabaseSync(path);
    db.exec("PRAGMA journal_mode = WAL; CREATE TABLE t (x TEXT);");
    const connection = new SqliteConnection(db, path, null, null, null);
    const failures: string[] = [];
    connection.prepareForServing({ shared: false, onError: (message) => failures.push(message) });
    // A transaction left open on the connection makes each of its checkpoints throw.
    db.exec("BEGIN; INSERT INTO t VALUES ('a');");
    await eventually(() => failures.length > 0, { what: "the first failure" });
    await sleep(350); // three more ticks, all failing
    assert.equal(failures.length, 1, failures.join("; "));
    assert.match(failures[0], /locked/);
    db.exec("COMMIT");
    // A checkpoint succeeds again: the rows reach the database file.
    const before = Deno.statSync(path).size;
    db.exec(`INSERT INTO t VALUES ('${"y".repeat(100_000)}');`);
    await eventually(() => Deno.statSync(path).size > before + 90_000, {
      what: "a checkpoint after the failures",
    });
    db.exec("BEGIN; INSERT INTO t VALUES ('b');");
    await eventually(() => failures.length > 1, { what: "the next failure, reported anew" });
    db.exec("COMMIT");
    connection.close();
  });
});
