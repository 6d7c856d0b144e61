/** A gateway killed mid-call loses no charge: the held ledger entry is settled at the next start. */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { startEmulator } from "../src/emulator/server.ts";
import { startGateway } from "./helpers/gateway.ts";

Deno.test("kill -9 during a stream: the call is settled once, on its estimate, at restart", async () => {
  const emulator = startEmulator({ requiredKey: "up" });
  const config = {
    defaultCatalog: false,
    providers: {
      openai: {
        type: "openai",
        baseUrl: `http://127.0.0.1:${emulator.addr.port}/openai/v1`,
        apiKey: "up",
      },
    },
    models: { "gpt-test": { provider: "openai", price: { input: 2.5, output: 15 } } },
  };
  const first = await startGateway({ config });
  try {
    const { key } = await first.createKey("crash-acct", "--credit", "1");
    const res = await fetch(`${first.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "gpt-test",
        input: "slow [[emulate words=300 delay=20]]",
        stream: true,
      }),
    });
    const reader = res.body!.getReader();
    await reader.read(); // the stream has started: the hold is committed
    await first.crash();
    await reader.read().catch(() => {});

    const db = () => new DatabaseSync(`${first.dir}/data/switchyard.db`, { readOnly: true });
    const before = db();
    const held = before.prepare(
      "SELECT count(*) AS n FROM ledger WHERE kind = 'charge' AND status = 'held'",
    ).get() as { n: number };
    before.close();
    assert.equal(held.n, 1, "the in-flight call's ledger entry survived the crash as held");

    const second = await startGateway({ config, dir: first.dir });
    try {
      const recovered = second.logs.map((l) => JSON.parse(l)).find((e) =>
        e.msg === "settled calls left open by an earlier crash"
      );
      assert.equal(recovered?.calls, 1);
      const usage = await (await fetch(`${second.url}/v1/usage`, {
        headers: { authorization: `Bearer ${key}` },
      })).json();
      assert.equal(usage.requests, 1);
      const after = db();
      const row = after.prepare(
        `SELECT status, estimated, amount, (SELECT held FROM accounts WHERE id = account_id) AS held,
                (SELECT balance FROM accounts WHERE id = account_id) AS balance
           FROM ledger WHERE kind = 'charge'`,
      ).get() as Record<string, unknown>;
      after.close();
      assert.equal(row.status, "settled");
      assert.equal(row.estimated, 1);
      assert.ok((row.amount as number) > 0, "the input estimate is charged");
      assert.equal(row.held, 0, "the reservation is released");
      assert.equal(row.balance, 1_000_000_000 - (row.amount as number));
      assert.equal(usage.spent_nanousd, row.amount);
    } finally {
      await second.stop();
    }
  } finally {
    await Deno.remove(first.dir, { recursive: true }).catch(() => {});
    await emulator.shutdown();
  }
});
