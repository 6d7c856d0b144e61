/**
 * A key's limits are exact across serving threads and PostgreSQL replicas: 50 concurrent streams
 * spread over two threads, and over three replicas (one of them on two threads), never spend more
 * than the key's budget, and never run more calls at once than it allows.
 */
import assert from "node:assert/strict";
import { eventually, type Stack, startStack } from "./helpers/setup.ts";
import type { Gateway } from "./helpers/gateway.ts";
import {
  HAS_POSTGRES,
  type Postgres,
  POSTGRES_MISSING,
  startPostgres,
} from "./helpers/postgres.ts";
import { skippedWithout } from "./helpers/requires.ts";

const ADMIN = "replica-keys-admin-0123456789";
// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

if (!HAS_POSTGRES) {
  skippedWithout(`skipping the replica half of the key limit tests: ${POSTGRES_MISSING}`);
}

async function keyWith(gateway: Gateway, account: string, settings: Json): Promise<string> {
  const res = await fetch(`${gateway.url}/admin/api/keys`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify({ account, credit_usd: "10", ...settings }),
  });
  const body = await res.json();
  assert.equal(res.status, 201, JSON.stringify(body));
  return body.key;
}

async function usage(gateway: Gateway, key: string): Promise<Json> {
  return await (await fetch(`${gateway.url}/v1/usage`, {
    headers: { authorization: `Bearer ${key}` },
  })).json();
}

function stream(gateway: Gateway, key: string, input: string) {
  return fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-test", input, max_output_tokens: 64, stream: true }),
  }).then(async (res) => ({ status: res.status, text: await res.text() }));
}

/** 50 concurrent streams over `gateways` against a budget: none overshoots it. */
async function budgetHolds(gateways: Gateway[], account: string) {
  const key = await keyWith(gateways[0], account, { budgets: [{ usd: "0.01", period: "day" }] });
  const calls = await Promise.all(
    Array.from(
      { length: 50 },
      (_, i) => stream(gateways[i % gateways.length], key, "story [[emulate words=30 delay=5]]"),
    ),
  );
  const refused = calls.filter((c) => c.status === 429).length;
  assert.ok(calls.every((c) => c.status === 200 || c.status === 429));
  assert.ok(refused > 0 && refused < 50, `${refused} refused`);
  await eventually(async () => (await usage(gateways[0], key)).held_nanousd === 0);
  const u = await usage(gateways[0], key);
  assert.ok(u.spent_nanousd <= 10_000_000, `spent ${u.spent_nanousd} of a 10,000,000 budget`);
  assert.equal(u.budgets[0].spent_nanousd, u.spent_nanousd);
  assert.equal(u.requests, 50 - refused);
}

/** 20 slow concurrent calls over `gateways` with 3 allowed in flight: exactly 3 run. */
async function flightHolds(gateways: Gateway[], account: string) {
  const key = await keyWith(gateways[0], account, { max_concurrent: 3 });
  const calls = await Promise.all(
    Array.from(
      { length: 20 },
      (_, i) => stream(gateways[i % gateways.length], key, "slow [[emulate words=30 delay=30]]"),
    ),
  );
  assert.equal(calls.filter((c) => c.status === 200).length, 3, calls.map((c) => c.status).join());
  assert.equal(calls.filter((c) => c.status === 429).length, 17);
}

const threads: Stack = await startStack({
  workers: 2,
  env: { SWITCHYARD_ADMIN_TOKEN: ADMIN },
});
let pg: Postgres | null = null;
let replicated: Stack | null = null;
const replicas: Gateway[] = [];
if (HAS_POSTGRES) {
  pg = await startPostgres();
  replicated = await startStack({
    store: { url: pg.url, poolSize: 4 },
    env: { SWITCHYARD_ADMIN_TOKEN: ADMIN },
  });
  replicas.push(
    replicated.gateway,
    await replicated.replica(),
    await replicated.replica({ workers: 2 }),
  );
}

Deno.test.afterAll(async () => {
  await threads.stop();
  await replicated?.stop();
  await pg?.stop();
});

Deno.test("two serving threads: a budget is never overshot, and calls in flight are counted together", async () => {
  await budgetHolds([threads.gateway], "threads-budget");
  await flightHolds([threads.gateway], "threads-flight");
});

Deno.test({
  name:
    "three PostgreSQL replicas: a budget is never overshot, and calls in flight are counted together",
  ignore: !HAS_POSTGRES,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await budgetHolds(replicas, "replicas-budget");
    await flightHolds(replicas, "replicas-flight");
  },
});
