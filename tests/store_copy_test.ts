/**
 * `switchyard store copy`: a gateway's SQLite store moved into PostgreSQL — its keys go on working
 * against a gateway on the database, with the same balances, usage and ledger — and a second copy
 * into the now non-empty database is refused.
 */
import assert from "node:assert/strict";
import { startStack, usageOf } from "./helpers/setup.ts";
import { HAS_POSTGRES, POSTGRES_MISSING, startPostgres } from "./helpers/postgres.ts";

if (!HAS_POSTGRES) console.warn(`skipping the store copy test: ${POSTGRES_MISSING}`);

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
      const { key } = await gw.createKey("moving", "--credit", "3", "--rpm", "0");
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
      assert.match(copied.stdout, /accounts 1, keys 2, ledger 3/);
      assert.match(copied.stdout, /counts and sums checked/);
      assert.ok(!copied.stdout.includes("switchyard@"), "no credentials printed");

      next = await startStack({ store: { url: pg.url } });
      const moved = next.gateway;
      const after = await usageOf(moved, key);
      assert.deepEqual(after, before, "same balance, usage and spend");
      assert.equal((await moved.cli("accounts", "list", "--json")).stdout, ledger);
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
