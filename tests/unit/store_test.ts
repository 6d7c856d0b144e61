/** The SQLite store's owner locks (crash recovery on a shared store), object and conversation pruning. */
import assert from "node:assert/strict";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { OwnerLock } from "../../src/store/owners.ts";

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

Deno.test("a serving store's own holds are never pending; another store's are once it closes", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/data/s.db`;
    const first = openSqliteStore(path, { owner: true });
    const account = await first.ensureAccount("a");
    await first.credit(account.id, 1_000_000, "test");
    const hold = await first.reserve({
      requestId: "r1",
      keyId: "k",
      accountId: account.id,
      endpoint: "responses",
      model: "m",
      provider: "p",
      reserve: 1000,
      estimate: { units: [], amount: 10 },
    });
    assert.deepEqual(await first.pendingHolds(), [], "its own live hold");
    const second = openSqliteStore(path, { owner: true });
    assert.deepEqual(await second.pendingHolds(), [], "another live process's hold");
    first.close();
    assert.deepEqual((await second.pendingHolds()).map((h) => h.id), [hold], "its owner is gone");
    second.close();
  });
});

Deno.test("pruning removes the objects recorded before the cutoff, and only those", async () => {
  await withDir(async (dir) => {
    const store = openSqliteStore(`${dir}/s.db`);
    const account = await store.ensureAccount("a");
    const record = (id: string) =>
      store.recordObject({ id, accountId: account.id, kind: "response", contextTokens: 1 });
    for (const id of ["old1", "old2", "old3"]) record(id);
    await new Promise((r) => setTimeout(r, 20));
    const cutoff = Date.now();
    await new Promise((r) => setTimeout(r, 20));
    for (const id of ["new1", "new2"]) record(id);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(await store.pruneObjects(cutoff), 3);
    assert.equal(await store.upstreamObject("old2"), undefined);
    assert.equal((await store.upstreamObject("new1"))?.accountId, account.id);
    assert.equal(await store.pruneObjects(Date.now() + 1), 2);
    store.close();
  });
});

Deno.test("kept conversation steps are read back whole and pruned by age", async () => {
  await withDir(async (dir) => {
    const store = openSqliteStore(`${dir}/s.db`);
    const account = await store.ensureAccount("a");
    const step = (id: string, previousId: string | null, createdAt: number) => ({
      id,
      accountId: account.id,
      previousId,
      items: JSON.stringify([{ role: "user", content: [{ type: "text", text: id }] }]),
      contextTokens: 7,
      createdAt,
    });
    store.saveResponse(step("resp_old", null, 1_000));
    store.saveResponse(step("resp_new", "resp_old", 5_000));
    await new Promise((r) => setTimeout(r, 20));
    const bound = { steps: 10, bytes: 1_000_000 };
    assert.deepEqual(await store.responseChain("resp_new", bound), [
      step("resp_new", "resp_old", 5_000),
      step("resp_old", null, 1_000),
    ]);
    assert.deepEqual(
      (await store.responseChain("resp_new", { steps: 1, bytes: 1_000_000 })).map((r) => r.id),
      ["resp_new"],
      "no further back than asked",
    );
    assert.equal(await store.pruneResponses(2_000), 1);
    assert.deepEqual(await store.responseChain("resp_old", bound), []);
    assert.deepEqual((await store.responseChain("resp_new", bound)).map((r) => r.id), [
      "resp_new",
    ]);
    store.close();
  });
});

Deno.test("holds, charges and releases move the account's funds with the ledger row, exactly", async () => {
  await withDir(async (dir) => {
    const store = openSqliteStore(`${dir}/s.db`);
    const account = await store.ensureAccount("funds");
    await store.credit(account.id, 10_000, "test");
    const hold = (reserve: number) =>
      store.reserve({
        requestId: `r${reserve}`,
        keyId: "k",
        accountId: account.id,
        endpoint: "responses",
        model: "m",
        provider: "p",
        reserve,
        estimate: { units: [], amount: 0 },
      });
    // Holds of one turn are written together, in the order asked.
    const [a, b, none, zero] = await Promise.all([hold(6_000), hold(4_000), hold(1), hold(0)]);
    assert.ok(a !== null && b !== null);
    assert.equal(none, null, "nothing is left to hold");
    assert.notEqual(zero, null, "a zero hold is always taken");
    assert.equal(await store.available(account.id), 0);
    const charge = {
      units: [{ unit: "output_tokens", quantity: 7, amount: 2_500 }],
      amount: 2_500,
    };
    assert.equal(await store.settle(a, { ...charge, estimated: false }), true);
    assert.equal(await store.settle(a, { ...charge, estimated: false }), false, "once");
    assert.equal(await store.settle(b, null), true, "released");
    assert.equal(await store.settle(b, null), false);
    const after = (await store.account("funds"))!;
    assert.deepEqual([after.balance, after.held, after.spent], [7_500, 0, 2_500]);
    assert.equal(await store.available(account.id), 7_500);
    store.close();
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
    db.exec(`DROP TRIGGER ledger_hold; DROP TRIGGER ledger_settle; DROP TRIGGER ledger_release;
      DROP TRIGGER keys_inserted; DROP TRIGGER keys_updated; DROP TRIGGER keys_deleted;
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
    assert.equal(await store.settle(id, { units: [], amount: 1_200, estimated: true }), true);
    const account = (await store.account("old"))!;
    assert.deepEqual([account.balance, account.held, account.spent], [3_800, 0, 1_200]);
    store.close();
  });
});

Deno.test("a key added or revoked by another connection is seen at the next lookup, unknown ids are not remembered", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/s.db`;
    const serving = openSqliteStore(path);
    const cli = openSqliteStore(path);
    const account = await cli.ensureAccount("k");
    await cli.credit(account.id, 1_000, "test");
    const key = { accountId: account.id, hash: new Uint8Array(32), prefix: "sy-x", createdAt: 0 };
    await cli.insertKey({ ...key, id: "aaaaaaaaaaaa", rpm: null });
    assert.equal((await serving.findKey("aaaaaaaaaaaa"))?.revokedAt, null);
    assert.equal(await serving.findKey("bbbbbbbbbbbb"), undefined);
    await cli.insertKey({ ...key, id: "bbbbbbbbbbbb", rpm: 5 });
    assert.equal(
      (await serving.findKey("bbbbbbbbbbbb"))?.rpm,
      5,
      "an unknown id is not remembered",
    );
    assert.equal(await cli.revokeKey("aaaaaaaaaaaa"), true);
    assert.notEqual((await serving.findKey("aaaaaaaaaaaa"))?.revokedAt, null, "revoked at once");
    serving.close();
    cli.close();
  });
});

Deno.test("shared with threads, the store's log is checkpointed by its own thread, not in commits", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/s.db`;
    const store = openSqliteStore(path);
    const account = await store.ensureAccount("a");
    const size = () => Deno.statSync(path).size;
    store.prepareForServing();
    const before = size();
    // About 600 pages of ledger rows: far below the commits' own checkpoint threshold.
    for (let i = 0; i < 2_000; i++) await store.credit(account.id, 1, "x".repeat(1_000));
    const deadline = Date.now() + 5_000;
    while (size() < before + 2_000_000 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(size() >= before + 2_000_000, `the database file grew from ${before} to ${size()}`);
    assert.equal((await store.account("a"))!.balance, 2_000);
    store.close();
  });
});
