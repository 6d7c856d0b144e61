/**
 * Three gateway replicas (separate processes, as on three hosts; one of them with two serving
 * threads) on one PostgreSQL store: a key's
 * requests per minute hold for the key as a whole, 1,000 concurrent mixed calls of one account
 * never overdraw it and leave the ledger equal to the balance change, a revoked key is refused by
 * every replica within a second, one replica polls video jobs (and another takes over when it
 * dies), and a replica killed mid-stream loses no charge (the leader settles its call).
 */
import assert from "node:assert/strict";
import { eventually, type Stack, startStack, usageOf } from "./helpers/setup.ts";
import { type Gateway, logEntries } from "./helpers/gateway.ts";
import { booksOf } from "./helpers/store.ts";
import {
  HAS_POSTGRES,
  type Postgres,
  POSTGRES_MISSING,
  startPostgres,
} from "./helpers/postgres.ts";
import { skippedWithout } from "./helpers/requires.ts";
import { bearer, post as httpPost } from "./helpers/http.ts";

if (!HAS_POSTGRES) skippedWithout(`skipping the replica tests: ${POSTGRES_MISSING}`);

const POLL_MS = 100;
let pg: Postgres | null = null;
let stack: Stack | null = null;
const replicas: Gateway[] = [];

if (HAS_POSTGRES) {
  pg = await startPostgres();
  stack = await startStack({
    store: { url: pg.url, poolSize: 4 },
    videos: { pollIntervalMs: POLL_MS },
  });
  // Started one after the other: the first takes the leader lock (it runs the background work).
  // The third serves on two threads, each with its own connections.
  replicas.push(stack.gateway, await stack.replica(), await stack.replica({ workers: 2 }));
}

Deno.test.afterAll(async () => {
  await stack?.stop();
  await pg?.stop();
});

const test = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name, ignore: !HAS_POSTGRES, fn, sanitizeResources: false, sanitizeOps: false });

function post(gw: Gateway, key: string, path: string, body: unknown) {
  return httpPost(gw.url, path, bearer(key), body).then(async (res) => ({
    status: res.status,
    remaining: res.headers.get("x-ratelimit-remaining-requests"),
    text: await res.text(),
  }));
}

/** The account's books, read from the database through the store's interface. */
function ledgerOf(account: string) {
  return booksOf(pg!.url, account);
}

test("a key at --rpm 10 gets exactly 10 answers of 30 concurrent requests spread over 3 replicas", async () => {
  const { key } = await replicas[0].createKey("replica-rpm", "--credit", "5", "--rpm", "10");
  const results = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      post(replicas[i % 3], key, "/v1/responses", {
        model: "gpt-test",
        input: "hello",
        max_output_tokens: 16,
      })),
  );
  const answered = results.filter((r) => r.status !== 429);
  assert.equal(answered.length, 10, results.map((r) => r.status).join());
  assert.ok(answered.every((r) => r.status === 200));
  const remaining = answered.map((r) => Number(r.remaining)).sort((a, b) => a - b);
  assert.deepEqual(remaining, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], "one counter decided them all");
});

test("1,000 concurrent mixed calls of one account over 3 replicas: no overdraft, ledger == balance change", async () => {
  const { key } = await replicas[0].createKey("replica-money", "--credit", "0.40", "--rpm", "0");
  const kinds = [
    { path: "/v1/responses", body: { model: "gpt-test", input: "hi", max_output_tokens: 64 } },
    {
      path: "/v1/responses",
      body: { model: "gpt-test", input: "hi", max_output_tokens: 64, stream: true },
    },
    {
      path: "/v1/chat/completions",
      body: { model: "gpt-test", messages: [{ role: "user", content: "hi" }], max_tokens: 64 },
    },
    {
      path: "/v1/chat/completions",
      body: {
        model: "gpt-test",
        messages: [{ role: "user", content: "hi" }],
        max_tokens: 64,
        stream: true,
      },
    },
  ];
  const results = await Promise.all(Array.from({ length: 1_000 }, (_, i) => {
    const kind = kinds[i % kinds.length];
    return post(replicas[i % 3], key, kind.path, kind.body);
  }));
  const statuses = new Map<number, number>();
  for (const r of results) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  assert.deepEqual([...statuses.keys()].sort(), [200, 402], JSON.stringify([...statuses]));
  await eventually(async () => (await ledgerOf("replica-money")).open === 0);
  const row = await ledgerOf("replica-money");
  assert.ok(row.balance >= 0, `balance ${row.balance}`);
  assert.equal(row.held, 0);
  assert.equal(row.credited - row.balance, row.charged, "ledger == balance change");
  assert.equal(row.spent, row.charged);
  assert.equal(row.settled, statuses.get(200), "one settled charge per answered call");
});

test("a revoked key is refused by every replica within a second", async () => {
  const { key, id } = await replicas[0].createKey("replica-revoke", "--credit", "1", "--rpm", "0");
  const usage = (gw: Gateway) =>
    fetch(`${gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } }).then((res) => {
      res.body?.cancel();
      return res.status;
    });
  // Every replica has the key in memory.
  assert.deepEqual(await Promise.all(replicas.map(usage)), [200, 200, 200]);
  const revoked = await replicas[1].cli("keys", "revoke", id);
  assert.equal(revoked.code, 0, revoked.stderr);
  const since = Date.now();
  const seen = await Promise.all(replicas.map(async (gw) => {
    while (await usage(gw) !== 401) {
      if (Date.now() - since > 5_000) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    return Date.now() - since;
  }));
  assert.ok(seen.every((ms) => ms <= 1_000), `seen after ${seen.join(", ")} ms`);
});

/** The emulator's xAI video rate at 480p: $0.05 a second, in nanoUSD. */
const PER_SECOND_480P = 50_000_000;

/** Submits a video job nobody polls; resolves once the background poller has billed it. */
async function videoBilledInBackground(gw: Gateway, account: string) {
  const { key } = await gw.createKey(account, "--credit", "5", "--rpm", "0");
  const submitted = Date.now();
  const res = await post(gw, key, "/v1/videos/generations", {
    model: "video-test",
    prompt: "a lighthouse [[emulate ready=1000 seconds=3]]",
    duration: 4,
  });
  assert.equal(res.status, 200, res.text);
  const { request_id } = JSON.parse(res.text);
  await eventually(async () => (await usageOf(gw, key)).requests === 1);
  const usage = await usageOf(gw, key);
  assert.equal(usage.spent_nanousd, 3 * PER_SECOND_480P);
  assert.equal(usage.held_nanousd, 0);
  assert.match(String(request_id), /\S/);
  return { elapsed: Date.now() - submitted };
}

test("one replica polls video jobs, not one per replica", async () => {
  const { elapsed } = await videoBilledInBackground(replicas[1], "replica-video");
  // The emulator keeps the last 200 requests: since this job's, nothing else went to it.
  const polls = (await stack!.upstreamRequests()).filter((r) =>
    r.method === "GET" && r.path.startsWith("/xai/v1/videos/")
  );
  assert.ok(polls.length >= 2, `${polls.length} polls`);
  assert.ok(
    polls.length <= elapsed / POLL_MS + 3,
    `${polls.length} polls in ${elapsed} ms: more than one poller`,
  );
  const row = await ledgerOf("replica-video");
  assert.deepEqual([row.settled, row.open, row.charged], [1, 0, 3 * PER_SECOND_480P]);
});

test("the leading replica killed mid-stream: another takes over the poller, and no charge is lost", async () => {
  const { key } = await replicas[2].createKey("replica-crash", "--credit", "1", "--rpm", "0");
  const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
  const res = await fetch(`${replicas[0].url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "gpt-test",
      input: "slow [[emulate words=300 delay=20]]",
      stream: true,
    }),
    client,
  });
  const reader = res.body!.getReader();
  await reader.read(); // the hold is committed once the first chunk is relayed
  await replicas[0].crash();
  const killed = Date.now();
  await reader.read().catch(() => {});
  client.close();
  assert.equal((await ledgerOf("replica-crash")).open, 1, "held by the dead replica");

  // The survivors go on: one of them now runs the background work.
  await videoBilledInBackground(replicas[1], "replica-handover");

  // The leader's sweep (every 30 s) settles the dead replica's call once it has not been seen for
  // 5 s (a replica whose connection dropped for a moment is not taken for dead).
  await eventually(async () => (await ledgerOf("replica-crash")).open === 0, 45_000);
  assert.ok(Date.now() - killed >= 5_000, "not before the dead replica was unseen for 5 s");
  // The sweep's log line follows its settlement: wait for it too.
  const sweeps = () =>
    [replicas[1], replicas[2]].flatMap((gw) =>
      logEntries(gw).filter((e) => e.msg === "settled calls left open by a process that stopped")
    );
  await eventually(() => sweeps().length > 0, { what: "the sweep's log line" });
  assert.deepEqual(sweeps().map((e) => e.calls), [1], "by one replica, once");
  // A replacement replica finds nothing left to settle.
  const replacement = await stack!.replica();
  assert.ok(!replacement.logs.some((l) => l.includes("settled calls left open")));
  const row = await ledgerOf("replica-crash");
  assert.deepEqual([row.open, row.held, row.settled], [0, 0, 1]);
  assert.ok(row.charged > 0, "the relayed stream is charged");
  assert.equal(row.credited - row.balance, row.charged);
});
