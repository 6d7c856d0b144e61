/**
 * Alerts on PostgreSQL, with two gateway replicas (the second on two serving threads) serving one
 * key's calls at once: each threshold of the key's budget and of its account's is raised once
 * whichever replica saw the calls, and each alert is delivered once (by the replica leading the
 * background work), signed.
 */
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { eventually, type Stack, startStack } from "./helpers/setup.ts";
import type { Gateway } from "./helpers/gateway.ts";
import {
  HAS_POSTGRES,
  type Postgres,
  POSTGRES_MISSING,
  startPostgres,
} from "./helpers/postgres.ts";

if (!HAS_POSTGRES) console.warn(`skipping the alert replica tests: ${POSTGRES_MISSING}`);

const ADMIN = "replica-alerts-admin-0123456789";
const SECRET = "replica-alerts-secret-0123456789";

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

Deno.test({
  name: "on two replicas each threshold is raised and delivered once, signed",
  ignore: !HAS_POSTGRES,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const received: { body: string; signature: string | null; event: Json }[] = [];
    const receiver = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
      const body = await req.text();
      received.push({
        body,
        signature: req.headers.get("x-switchyard-signature"),
        event: JSON.parse(body),
      });
      return new Response("ok");
    });
    let pg: Postgres | null = null;
    let stack: Stack | null = null;
    try {
      pg = await startPostgres();
      stack = await startStack({
        store: { url: pg.url },
        env: { SWITCHYARD_ADMIN_TOKEN: ADMIN, ALERT_SECRET: SECRET },
        alerts: {
          webhookUrl: `http://127.0.0.1:${receiver.addr.port}/hook`,
          secret: "env:ALERT_SECRET",
          budgetThresholds: [25, 50, 75, 100],
          checkIntervalMs: 100,
        },
      });
      const replicas: Gateway[] = [stack.gateway, await stack.replica({ workers: 2 })];
      const res = await fetch(`${stack.gateway.url}/admin/api/keys`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
        body: JSON.stringify({
          account: "replicated",
          credit_usd: "10",
          rpm: 0,
          budgets: [{ usd: "0.006", period: "day" }],
        }),
      });
      const { key } = await res.json();
      await fetch(`${stack.gateway.url}/admin/api/accounts/replicated`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
        body: JSON.stringify({ budgets: [{ usd: "0.012", period: "week" }] }),
      }).then((r) => r.body?.cancel());
      // Both replicas at once, until the key's budget refuses every call.
      for (let round = 0; round < 60; round++) {
        const statuses = await Promise.all(replicas.flatMap((gw) =>
          [0, 1].map(async () => {
            const answer = await fetch(`${gw.url}/v1/responses`, {
              method: "POST",
              headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
              body: JSON.stringify({ model: "gpt-test", input: "hi", max_output_tokens: 64 }),
            });
            await answer.body?.cancel();
            return answer.status;
          })
        ));
        assert.ok(statuses.every((s) => s === 200 || s === 429), String(statuses));
        if (statuses.every((s) => s === 429)) break;
      }
      const percents = (owner: string) =>
        received.filter((d) => d.event.owner === owner).map((d) => d.event.threshold_percent)
          .sort((a, b) => a - b).join();
      await eventually(() => Promise.resolve(percents("key") === "25,50,75,100"), 10_000);
      // The key's budget, half the account's, keeps the account below its 50%.
      await eventually(() => Promise.resolve(percents("account") === "25"), 10_000);
      // Every alert raised is delivered, once.
      await eventually(async () => {
        const list = await (await fetch(`${stack!.gateway.url}/admin/api/alerts`, {
          headers: { authorization: `Bearer ${ADMIN}` },
        })).json();
        return list.data.length === received.length &&
          list.data.every((a: Json) => a.status === "delivered" && a.attempts === 1);
      }, 10_000);
      const ids = received.map((d) => d.event.id);
      assert.equal(new Set(ids).size, ids.length, `delivered twice: ${ids.join()}`);
      // Ids are drawn for alerts raised, not for each of the many checks that found one raised
      // already (two replicas raising one at the same instant may still use up one).
      const highest = Math.max(...ids.map((id) => Number(id.slice(6))));
      assert.ok(highest <= 2 * ids.length, `ids up to ${highest} for ${ids.length} alerts`);
      for (const d of received) {
        const [t, v1] = d.signature!.split(",").map((part) => part.slice(part.indexOf("=") + 1));
        assert.equal(v1, createHmac("sha256", SECRET).update(`${t}.${d.body}`).digest("hex"));
      }
      // Raised where the calls were seen: on either replica, each logged once in all (its line
      // written within the log's 10 ms batch).
      const raised = () =>
        replicas.flatMap((gw) => gw.logs.filter((l) => l.includes('"alert raised"')));
      await eventually(() => Promise.resolve(raised().length >= received.length), 10_000);
      assert.equal(raised().length, received.length);
    } finally {
      await stack?.stop();
      await pg?.stop();
      await receiver.shutdown();
    }
  },
});
