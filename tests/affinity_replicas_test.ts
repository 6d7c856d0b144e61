/**
 * Conversations stay on their cache across two gateway replicas (separate processes, as on two
 * hosts) on one PostgreSQL store: a Claude Code–style session whose turns alternate between the
 * replicas keeps to one deployment and one key and reads its cache every turn after the first; a
 * conversation one replica moves (its deployment failing) is found where it moved by the other.
 */
import assert from "node:assert/strict";
import { type Gateway, startGateway } from "./helpers/gateway.ts";
import { keyedEmulator, Session } from "./helpers/affinity.ts";
import { MAX_OUT, TEST_PRICE } from "./helpers/setup.ts";
import {
  HAS_POSTGRES,
  type Postgres,
  POSTGRES_MISSING,
  startPostgres,
} from "./helpers/postgres.ts";
import { skippedWithout } from "./helpers/requires.ts";

if (!HAS_POSTGRES) skippedWithout(`skipping the replica affinity tests: ${POSTGRES_MISSING}`);

const KEYS = ["sk-rep-a1-1111", "sk-rep-a2-2222", "sk-rep-b1-3333", "sk-rep-b2-4444"];
const { emulator, upstream, anthropicWith, setFault } = keyedEmulator(KEYS);

let pg: Postgres | null = null;
const replicas: Gateway[] = [];
let key = "";

if (HAS_POSTGRES) {
  pg = await startPostgres();
  const options = {
    // The test clock (`x-switchyard-test-now`): a turn a few seconds later, without waiting.
    env: { SWITCHYARD_TEST_HOOKS: "1" },
    config: {
      defaultCatalog: false,
      store: { url: pg.url, poolSize: 2 },
      routing: { maxAttempts: 3, backoffMs: 5, circuit: { failures: 1, coolOffMs: 600_000 } },
      providers: {
        "rep-a": anthropicWith(KEYS[0], KEYS[1]),
        "rep-b": anthropicWith(KEYS[2], KEYS[3]),
      },
      models: {
        "claude-rep": {
          deployments: [{ provider: "rep-a" }, { provider: "rep-b" }],
          upstream: "claude-sonnet-4-5",
          price: TEST_PRICE,
          ...MAX_OUT,
        },
      },
    },
  };
  // One after the other: the first migrates the database.
  replicas.push(await startGateway(options));
  replicas.push(await startGateway(options));
  key = (await replicas[0].createKey("affinity-replicas", "--credit", "20", "--rpm", "0")).key;
}

Deno.test.afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
  await emulator.shutdown();
  await pg?.stop();
});

const test = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name, ignore: !HAS_POSTGRES, fn, sanitizeResources: false, sanitizeOps: false });

test("a session alternating between two replicas keeps to one deployment and one key", async () => {
  const session = new Session("claude-rep", crypto.randomUUID(), upstream);
  const turns = [];
  for (let i = 0; i < 6; i++) {
    const replica = replicas[i % 2];
    const turn = await session.turn(replica.url, key, `question ${i}`, replica);
    assert.equal(turn.status, 200, JSON.stringify(turn.json));
    turns.push(turn);
  }
  const [first, ...later] = turns;
  assert.equal(first.log.affinity, "new");
  for (const [i, turn] of later.entries()) {
    const at = `turn ${i + 2}, on replica ${(i + 1) % 2}`;
    assert.equal(turn.log.affinity, "kept", at);
    assert.equal(turn.provider, first.provider, at);
    assert.equal(turn.upstreamKey, first.upstreamKey, at);
    assert.ok(turn.json.usage.cache_read_input_tokens > 1500, `${at} read the cache`);
  }
});

test("a conversation one replica moves is found where it moved by the other", async () => {
  const session = new Session("claude-rep", crypto.randomUUID(), upstream);
  const [one, two] = replicas;
  const first = await session.turn(one.url, key, "before the outage", one);
  assert.equal(first.status, 200);
  const down = first.provider === "rep-a" ? KEYS.slice(0, 2) : KEYS.slice(2);
  await setFault(down, "failing");
  try {
    const moved = await session.turn(two.url, key, "during the outage", two);
    assert.equal(moved.status, 200, JSON.stringify(moved.json));
    assert.equal(moved.log.affinity, "moved");
    assert.notEqual(moved.provider, first.provider);
    // The first replica's own copy is trusted for a second: a turn two seconds later reads the
    // store, and goes where the conversation moved (never to the failing deployment).
    const later = { "x-switchyard-test-now": String(Date.now() + 2000) };
    const next = await session.turn(one.url, key, "after the move", one, later);
    assert.equal(next.status, 200, JSON.stringify(next.json));
    assert.equal(next.log.affinity, "kept");
    assert.equal(next.attempts, "1");
    assert.equal(next.provider, moved.provider);
    assert.equal(next.upstreamKey, moved.upstreamKey);
    assert.ok(next.json.usage.cache_read_input_tokens > 1500);
  } finally {
    await setFault(down, null);
  }
});
