/**
 * `switchyard store copy`: a gateway's SQLite store moved into PostgreSQL — its keys go on working
 * against a gateway on the database, with the same balances, usage and ledger — and a second copy
 * into the now non-empty database is refused. Totals past 2^53 nanoUSD are copied and checked
 * exactly; alerts go along with their delivery state.
 */
import assert from "node:assert/strict";
import { startStack, usageOf } from "./helpers/setup.ts";
import { HAS_POSTGRES, POSTGRES_MISSING, startPostgres } from "./helpers/postgres.ts";
import { copyStore } from "../src/store/copy.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import { skippedWithout } from "./helpers/requires.ts";

if (!HAS_POSTGRES) skippedWithout(`skipping the store copy test: ${POSTGRES_MISSING}`);

Deno.test({
  name:
    "store copy moves a SQLite store into an empty PostgreSQL database, checked; a non-empty one is refused",
  ignore: !HAS_POSTGRES,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const pg = await startPostgres();
    const old = await startStack();
    let next: Awaited<ReturnType<typeof startStack>> | null = null;
    try {
      const gw = old.gateway;
      const { key, id } = await gw.createKey(
        "moving",
        "--credit",
        "3",
        "--rpm",
        "0",
        "--strict",
        "on",
      );
      const revoked = await gw.createKey("moving", "--rpm", "0");
      assert.equal((await gw.cli("keys", "revoke", revoked.id)).code, 0);
      const answer = async (url: string, body: unknown) => {
        const res = await fetch(`${url}/v1/responses`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        assert.equal(res.status, 200);
        return await res.json();
      };
      const first = await answer(gw.url, { model: "gpt-test", input: "hello", store: true });
      await answer(gw.url, { model: "claude-test", input: "kept by the gateway" });
      const before = await usageOf(gw, key);
      const ledger = await (await gw.cli("accounts", "list", "--json")).stdout;
      const serving = await gw.cli("store", "copy", "--to", pg.url);
      assert.equal(serving.code, 2, "refused while a gateway serves the file");
      assert.match(serving.stderr, /a gateway is serving .*: stop it before copying/);
      assert.equal((await gw.terminate()).code, 0);

      const copied = await gw.cli("store", "copy", "--to", pg.url);
      assert.equal(copied.code, 0, copied.stderr);
      assert.match(copied.stdout, /accounts 1, keys 2, budgets 0, ledger 3/);
      assert.match(copied.stdout, /counts and sums checked/);
      assert.ok(!copied.stdout.includes("switchyard@"), "no credentials printed");

      next = await startStack({ store: { url: pg.url } });
      const moved = next.gateway;
      const after = await usageOf(moved, key);
      assert.deepEqual(after, before, "same balance, usage and spend");
      assert.equal((await moved.cli("accounts", "list", "--json")).stdout, ledger);
      const keys = JSON.parse((await moved.cli("keys", "list", "--json")).stdout);
      assert.equal(keys.find((k: { id: string }) => k.id === id).strict, true, "strict mode moved");
      const refused = await fetch(`${moved.url}/v1/usage`, {
        headers: { authorization: `Bearer ${revoked.key}` },
      });
      assert.equal(refused.status, 401, "a revoked key stays revoked");
      await refused.body?.cancel();
      // The stored response is still the account's: continuing it is not a 404.
      const continued = await answer(moved.url, {
        model: "gpt-test",
        input: "and then?",
        previous_response_id: first.id,
      });
      assert.equal(continued.status, "completed");
      assert.equal((await usageOf(moved, key)).requests, before.requests + 1);

      const again = await gw.cli("store", "copy", "--to", pg.url);
      assert.equal(again.code, 2);
      assert.match(again.stderr, /the target is not empty: accounts has 1 rows/);
    } finally {
      await next?.stop();
      await old.stop();
      await pg.stop();
    }
  },
});

Deno.test({
  name:
    "store copy carries a lifetime spend and sums past 2^53 nanoUSD exactly, and checks them exactly",
  ignore: !HAS_POSTGRES,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const pg = await startPostgres();
    const dir = await Deno.makeTempDir({ prefix: "switchyard-copy-big-" });
    try {
      const path = `${dir}/s.db`;
      const max = Number.MAX_SAFE_INTEGER;
      const source = openSqliteStore(path);
      const account = await source.ensureAccount("heavy");
      // Three charges of 2^53 − 1 nanoUSD each, the balance refilled before each.
      for (let i = 0; i < 3; i++) {
        await source.credit(account.id, max, "refill");
        const id = await source.reserve({
          requestId: `r${i}`,
          keyId: "k",
          accountId: account.id,
          endpoint: "responses",
          model: "m",
          provider: "p",
          reserve: max,
          estimate: { units: [{ unit: "input_tokens", quantity: 1, amount: 1 }], amount: 1 },
        });
        const units = [{ unit: "input_tokens", quantity: max, amount: max }];
        // What the prompt cache did goes along too (one call's figures, one miss).
        const cache = {
          inputTokens: max,
          cachedTokens: i,
          cacheWriteTokens: 1,
          cacheWrite1hTokens: 2,
          saved: 5 + i,
          miss: i === 2 ? { cause: "failover", tokens: 7, lost: 9 } : null,
        };
        assert.equal(
          await source.settle(id!, { units, amount: max, estimated: false, cache }),
          true,
        );
      }
      const usage = await source.usage(account.id);
      const cached = await source.cacheUsage(0, account.id);
      const entries = await source.ledgerPage({ limit: 10 });
      assert.equal(usage.account.spent, 3n * BigInt(max));
      // Alerts go along with their delivery state (and stay once: the same one is not new there).
      const alert = {
        type: "balance.low" as const,
        owner: `account:${account.id}`,
        period: "",
        windowStart: 1_000,
        threshold: 5_000_000_000,
        accountId: account.id,
        keyId: null,
        payload: { account: "heavy", balance_usd: "0.00" },
        createdAt: 2_000,
        status: "pending" as const,
      };
      const delivered = (await source.raiseAlert(alert))!;
      await source.markAlert(delivered, { status: "delivered", at: 3_000 });
      await source.raiseAlert({ ...alert, windowStart: 4_000, createdAt: 5_000 });
      const alerts = await source.listAlerts({ limit: 10 });
      source.close();

      const report = await copyStore(path, pg.url);
      assert.equal(report.sums["accounts.spent"], 3n * BigInt(max));
      assert.equal(report.sums["ledger.amount"], 6n * BigInt(max), "credits and charges");
      const target = await openPostgresStore(pg.url);
      try {
        assert.deepEqual(await target.usage(account.id), usage, "the same, exactly");
        assert.deepEqual(await target.cacheUsage(0, account.id), cached);
        assert.deepEqual(await target.ledgerPage({ limit: 10 }), entries);
        assert.equal(report.sums["ledger.cache_saved"], 18);
        assert.deepEqual(await target.listAlerts({ limit: 10 }), alerts);
        assert.equal(await target.raiseAlert(alert), null, "raised once, before the copy");
        const next = await target.raiseAlert({ ...alert, windowStart: 6_000 });
        assert.ok(next! > alerts[0].id, "new ids after the copied ones");
      } finally {
        await target.close();
      }
    } finally {
      await pg.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
