/**
 * `serve --workers 2`: two serving threads on one port share one store. A key's requests per
 * minute and an account's balance hold for the process as a whole, both threads serve, startup
 * recovery runs once, and SIGTERM drains both.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { startStack } from "./helpers/setup.ts";
import type { Gateway } from "./helpers/gateway.ts";

const stack = await startStack({ workers: 2 });
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

function call(gw: Gateway, key: string, input = "hello") {
  return fetch(`${gw.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-test", input, max_output_tokens: 64 }),
  }).then(async (res) => ({ status: res.status, body: await res.text() }));
}

/** The account's row and the sum of its settled charges, read from the store file. */
function ledgerOf(gw: Gateway, account: string) {
  const db = new DatabaseSync(`${gw.dir}/data/switchyard.db`, { readOnly: true });
  try {
    return db.prepare(
      `SELECT a.balance, a.held, a.spent,
              (SELECT coalesce(sum(amount), 0) FROM ledger l
                WHERE l.account_id = a.id AND kind = 'charge' AND status = 'settled') AS charged,
              (SELECT coalesce(sum(amount), 0) FROM ledger l
                WHERE l.account_id = a.id AND kind = 'credit') AS credited,
              (SELECT count(*) FROM ledger l
                WHERE l.account_id = a.id AND kind = 'charge' AND status = 'held') AS open
         FROM accounts a WHERE a.name = ?`,
    ).get(account) as Record<string, number>;
  } finally {
    db.close();
  }
}

Deno.test("a key at --rpm 10 gets exactly 10 answers of 30 concurrent requests across both threads", async () => {
  const { key } = await gateway.createKey("workers-rpm", "--credit", "5", "--rpm", "10");
  const results = await Promise.all(Array.from({ length: 30 }, () => call(gateway, key)));
  const answered = results.filter((r) => r.status !== 429);
  assert.equal(answered.length, 10, results.map((r) => r.status).join());
  assert.ok(answered.every((r) => r.status === 200));
});

Deno.test("both threads serve: the access log names each", async () => {
  const { key } = await gateway.createKey("workers-spread", "--credit", "5", "--rpm", "0");
  const seen = new Set<number>();
  for (let round = 0; round < 20 && seen.size < 2; round++) {
    // Fresh connections each round, so the kernel spreads them over the threads.
    const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
    await Promise.all(Array.from({ length: 8 }, () =>
      fetch(`${gateway.url}/v1/usage`, {
        headers: { authorization: `Bearer ${key}` },
        client,
      }).then((res) => res.body?.cancel())));
    client.close();
    for (const line of gateway.logs) {
      const entry = JSON.parse(line);
      if (entry.msg === "request" && entry.account === "workers-spread") seen.add(entry.worker);
    }
  }
  assert.deepEqual([...seen].sort(), [0, 1]);
});

Deno.test("50 concurrent calls from one account: the ledger sum is exactly the balance change, never below zero", async () => {
  // $0.05 covers a few full holds at once, not 50: the rest run capped or get 402.
  const { key } = await gateway.createKey("workers-money", "--credit", "0.05", "--rpm", "0");
  const results = await Promise.all(
    Array.from({ length: 50 }, (_, i) => call(gateway, key, `call ${i} [[emulate words=40]]`)),
  );
  assert.ok(
    results.every((r) => r.status === 200 || r.status === 402),
    results.map((r) => r.status).join(),
  );
  assert.ok(results.filter((r) => r.status === 200).length > 0);
  const row = ledgerOf(gateway, "workers-money");
  assert.equal(row.open, 0, "every hold settled or released");
  assert.equal(row.held, 0);
  assert.ok(row.balance >= 0, `balance ${row.balance}`);
  assert.equal(row.credited - row.balance, row.charged, "ledger sum = balance change");
  assert.equal(row.spent, row.charged);
});

Deno.test("after a crash, the restarted threads' process settles the dead call once; SIGTERM exits 0", async () => {
  const { key } = await gateway.createKey("workers-crash", "--credit", "1", "--rpm", "0");
  const res = await fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "gpt-test",
      input: "slow [[emulate words=300 delay=20]]",
      stream: true,
    }),
  });
  const reader = res.body!.getReader();
  await reader.read(); // the hold is committed once the first chunk is relayed
  await gateway.crash();
  await reader.read().catch(() => {});
  assert.equal(ledgerOf(gateway, "workers-crash").open, 1);

  const restarted = await stack.restart();
  const recoveries = restarted.logs.map((l) => JSON.parse(l)).filter((e) =>
    e.msg === "settled calls left open by an earlier crash"
  );
  assert.deepEqual(recoveries.map((e) => e.calls), [1], "recovered once, not once per thread");
  const row = ledgerOf(restarted, "workers-crash");
  assert.equal(row.open, 0);
  assert.equal(row.held, 0);
  assert.equal(row.credited - row.balance, row.charged);
  assert.ok(row.charged > 0);
  const listening = restarted.logs.map((l) => JSON.parse(l)).find((e) => e.msg === "listening");
  assert.equal(listening.workers, 2);

  const status = await restarted.terminate();
  assert.equal(status.code, 0);
});
