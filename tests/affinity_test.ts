/**
 * Conversations stay on their cache, on the real server (two serving threads) in front of the
 * emulator's prompt caches: a model with two deployments and several upstream keys each. A Claude
 * Code–style session (raw HTTP Messages, a long system prompt marked for caching, the session in
 * `metadata.user_id`) keeps to one deployment and one key over both threads, and every turn after
 * the first reads the cache; a client without a session is recognised by its prompt's prefix; two
 * accounts never share a conversation; a Responses chain (`previous_response_id`) keeps to the key
 * holding its cache; a tripped circuit moves a conversation once, the move
 * counted and logged, and it stays where it moved; a placement lasts as long as the cache.
 */
import assert from "node:assert/strict";
import { type Gateway, requestLogged, startGateway } from "./helpers/gateway.ts";
import { keyedEmulator, LONG_SYSTEM, Session } from "./helpers/affinity.ts";
import { bearer, postJson } from "./helpers/http.ts";
import { settledEntry } from "./helpers/store.ts";
import { eventually, MAX_OUT, TEST_PRICE } from "./helpers/setup.ts";

const KEYS = {
  a1: "sk-ant-a1-aaaa1111",
  a2: "sk-ant-a2-aaaa2222",
  a3: "sk-ant-a3-aaaa3333",
  b1: "sk-ant-b1-bbbb1111",
  b2: "sk-ant-b2-bbbb2222",
  ta1: "sk-trip-a1-cccc1111",
  ta2: "sk-trip-a2-cccc2222",
  tb1: "sk-trip-b1-dddd1111",
  tb2: "sk-trip-b2-dddd2222",
  o1: "sk-oai-o1-eeee1111",
  o2: "sk-oai-o2-eeee2222",
  p1: "sk-oai-p1-ffff1111",
  p2: "sk-oai-p2-ffff2222",
};
const ADMIN = "affinity-admin-token-0123456789";

const { emulator, upstream, anthropicWith, openaiWith, setFault } = keyedEmulator(
  Object.values(KEYS),
);
const twoDeployments = (a: string, b: string, upstream = "claude-sonnet-4-5") => ({
  deployments: [{ provider: a }, { provider: b }],
  upstream,
  price: TEST_PRICE,
  ...MAX_OUT,
});

const gateway: Gateway = await startGateway({
  workers: 2,
  // The test clock (`x-switchyard-test-now`): a turn sent "minutes later".
  env: { SWITCHYARD_TEST_HOOKS: "1" },
  config: {
    defaultCatalog: false,
    admin: { token: ADMIN },
    routing: { maxAttempts: 3, backoffMs: 5, circuit: { failures: 1, coolOffMs: 1000 } },
    providers: {
      "ant-a": anthropicWith(KEYS.a1, KEYS.a2, KEYS.a3),
      "ant-b": anthropicWith(KEYS.b1, KEYS.b2),
      "trip-a": anthropicWith(KEYS.ta1, KEYS.ta2),
      "trip-b": anthropicWith(KEYS.tb1, KEYS.tb2),
      "oai-a": openaiWith(KEYS.o1, KEYS.o2),
      "oai-b": openaiWith(KEYS.p1, KEYS.p2),
    },
    models: {
      "claude-two": twoDeployments("ant-a", "ant-b"),
      "claude-trip": twoDeployments("trip-a", "trip-b"),
      "gpt-two": twoDeployments("oai-a", "oai-b", "gpt-5.4"),
    },
  },
});
const alice = (await gateway.createKey("affinity-alice", "--credit", "20", "--rpm", "0")).key;
const bob = (await gateway.createKey("affinity-bob", "--credit", "20", "--rpm", "0")).key;

Deno.test.afterAll(async () => {
  await gateway.stop();
  await emulator.shutdown();
});

const test = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name, fn, sanitizeResources: false, sanitizeOps: false });

/** `switchyard_cache_affinity_moves_total` for `deployment` (0 when it has no series). */
async function moves(deployment: string): Promise<number> {
  const text = await (await fetch(`${gateway.url}/metrics`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  })).text();
  const line = text.split("\n").find((l) =>
    l.startsWith(`switchyard_cache_affinity_moves_total{deployment="${deployment}"}`)
  );
  return line ? Number(line.split(" ").at(-1)) : 0;
}

test("a Claude Code session keeps to one deployment and one key over both threads, reading its cache every turn", async () => {
  const session = new Session("claude-two", crypto.randomUUID(), upstream);
  const turns = [];
  const workers = new Set<number>();
  // Turns until both threads have served some (each turn on a connection of its own).
  for (let i = 0; i < 40 && (i < 6 || workers.size < 2); i++) {
    const turn = await session.turn(gateway.url, alice, `question number ${i}`, gateway);
    assert.equal(turn.status, 200, JSON.stringify(turn.json));
    workers.add(turn.log.worker);
    turns.push(turn);
  }
  assert.deepEqual([...workers].sort(), [0, 1], "both threads served the conversation");
  const [first, ...later] = turns;
  assert.equal(first.log.affinity, "new");
  assert.ok(first.upstreamKey, "the emulator saw the first turn's key");
  assert.ok(first.json.usage.cache_creation_input_tokens >= 1500, "the first turn wrote it");
  for (const [i, turn] of later.entries()) {
    const at = `turn ${i + 2}`;
    assert.equal(turn.provider, first.provider, at);
    assert.equal(turn.upstreamKey, first.upstreamKey, at);
    assert.equal(turn.log.affinity, "kept", at);
    assert.equal(turn.attempts, "1", at);
    assert.ok(turn.json.usage.cache_read_input_tokens > 1500, `${at} read the cache`);
  }
});

test("without a session, the prompt's prefix names the conversation", async () => {
  const session = new Session("claude-two", undefined, upstream);
  const first = await session.turn(gateway.url, alice, "a question without a session", gateway);
  assert.equal(first.log.affinity, "new");
  for (let i = 0; i < 4; i++) {
    const turn = await session.turn(gateway.url, alice, `and then ${i}?`, gateway);
    assert.equal(turn.upstreamKey, first.upstreamKey);
    assert.equal(turn.log.affinity, "kept");
    assert.ok(turn.json.usage.cache_read_input_tokens > 1500);
  }
});

test("a previous_response_id chain keeps to its key: each answer's id names the conversation", async () => {
  const turn = async (body: Record<string, unknown>) => {
    const before = await upstream.count();
    const res = await postJson(gateway.url, "/v1/responses", bearer(alice), {
      model: "gpt-two",
      ...body,
    });
    assert.equal(res.status, 200, res.text);
    const log = await requestLogged(gateway, res.headers.get("x-request-id")!);
    const sent = (await upstream.since(before)).filter((r) => r.path.endsWith("/responses"));
    return { json: res.json, log, key: sent.at(-1)?.headers.authorization };
  };
  const first = await turn({ instructions: LONG_SYSTEM, input: "the first question" });
  assert.equal(first.log.affinity, "new");
  let previous = first.json.id;
  for (let i = 0; i < 4; i++) {
    const next = await turn({ previous_response_id: previous, input: `question ${i}` });
    assert.equal(next.key, first.key, `turn ${i + 2}`);
    assert.equal(next.log.affinity, "kept");
    assert.ok(next.json.usage.input_tokens_details.cached_tokens >= 1024, "it read the cache");
    previous = next.json.id;
  }
});

test("two accounts never share a conversation, even with the same session and prompt", async () => {
  const id = crypto.randomUUID();
  const hers = new Session("claude-two", id, upstream);
  const his = new Session("claude-two", id, upstream);
  assert.equal((await hers.turn(gateway.url, alice, "same words", gateway)).log.affinity, "new");
  const herSecond = await hers.turn(gateway.url, alice, "more words", gateway);
  assert.equal(herSecond.log.affinity, "kept");
  // Her conversation is placed and live: his, of the same id, is another.
  const hisFirst = await his.turn(gateway.url, bob, "same words", gateway);
  assert.equal(hisFirst.log.affinity, "new");
  assert.equal((await his.turn(gateway.url, bob, "more words", gateway)).log.affinity, "kept");
  const herThird = await hers.turn(gateway.url, alice, "still mine", gateway);
  assert.equal(herThird.log.affinity, "kept");
  assert.equal(herThird.upstreamKey, herSecond.upstreamKey);
});

test("a tripped circuit moves the conversation once, counted and logged; it stays where it moved", async () => {
  const session = new Session("claude-trip", crypto.randomUUID(), upstream);
  const first = await session.turn(gateway.url, alice, "before the outage", gateway);
  assert.equal(first.status, 200);
  const placed = `${first.provider}/claude-sonnet-4-5`;
  const other = first.provider === "trip-a" ? "trip-b" : "trip-a";
  assert.equal(
    (await session.turn(gateway.url, alice, "still fine", gateway)).log.affinity,
    "kept",
  );
  const before = await moves(placed);
  // Its deployment's keys fail (500): its circuit (failures: 1) trips on the next turn.
  const down = first.provider === "trip-a" ? [KEYS.ta1, KEYS.ta2] : [KEYS.tb1, KEYS.tb2];
  await setFault(down, "failing");
  const moved = await session.turn(gateway.url, alice, "during the outage", gateway);
  assert.equal(moved.status, 200, JSON.stringify(moved.json));
  assert.equal(moved.provider, other);
  assert.equal(moved.attempts, "2", "its deployment first, then the other");
  assert.equal(moved.log.affinity, "moved");
  assert.equal(await moves(placed), before + 1);
  // The key holder sees the miss the move caused: one failover, and what it lost (an estimate).
  const usage = await (await fetch(`${gateway.url}/v1/usage`, { headers: bearer(alice) })).json();
  const failover = usage.cache.misses.failover;
  assert.equal(failover.requests, 1, JSON.stringify(usage.cache.misses));
  assert.ok(
    failover.missed_input_tokens > 0 && failover.lost_nanousd > 0,
    JSON.stringify(failover),
  );
  await setFault(down, null);
  // The first deployment is offered again (its circuit half-open): the conversation stays.
  await eventually(async () => {
    const ready = await (await fetch(`${gateway.url}/readyz`)).json();
    return ready.deployments[placed].circuit === "half-open";
  });
  for (let i = 0; i < 3; i++) {
    const turn = await session.turn(gateway.url, alice, `after the outage ${i}`, gateway);
    assert.equal(turn.provider, other);
    assert.equal(turn.upstreamKey, moved.upstreamKey);
    assert.equal(turn.log.affinity, "kept");
    assert.ok(turn.json.usage.cache_read_input_tokens > 1500, "its cache is on the new key");
  }
  assert.equal(await moves(placed), before + 1, "moved once");
});

test("a placement lasts as long as the cache: 5 minutes after the last call, an hour when asked", async () => {
  const session = new Session("claude-two", crypto.randomUUID(), upstream);
  await session.turn(gateway.url, alice, "first", gateway);
  const later = (minutes: number) => ({
    "x-switchyard-test-now": String(Date.now() + minutes * 60_000),
  });
  // 4 minutes later: kept (and the placement lasts 5 minutes from then).
  const kept = await session.turn(gateway.url, alice, "second", gateway, later(4));
  assert.equal(kept.log.affinity, "kept");
  const late = await session.turn(gateway.url, alice, "third", gateway, later(9.5));
  assert.equal(late.log.affinity, "new", "5 minutes past the last call: the cache is gone");
  // A cache kept for an hour (`ttl: "1h"`): its placement too.
  const hour = new Session("claude-two", crypto.randomUUID(), upstream, "1h");
  await hour.turn(gateway.url, alice, "first", gateway);
  assert.equal(
    (await hour.turn(gateway.url, alice, "next", gateway, later(50))).log.affinity,
    "kept",
  );
  const gone = await hour.turn(gateway.url, alice, "last", gateway, later(111));
  assert.equal(gone.log.affinity, "new");
});

test("a miss translation caused is noted as such: a translated call kept on its key that reads none of a prefix its client sent again", async () => {
  const body = {
    model: "claude-two",
    instructions: `${LONG_SYSTEM} translated ${crypto.randomUUID()}`,
    prompt_cache_key: crypto.randomUUID(),
    input: "What is in a.txt?",
    store: false,
  };
  const turn = async (fault?: string) => {
    const headers = { ...bearer(alice), ...(fault ? { "x-switchyard-test-fault": fault } : {}) };
    const answer = await postJson(gateway.url, "/v1/responses", headers, body);
    assert.equal(answer.status, 200, answer.text);
    const requestId = answer.headers.get("x-request-id")!;
    const entry = await settledEntry(gateway, requestId);
    return { read: answer.json.usage.input_tokens_details.cached_tokens, cache: entry.cache! };
  };
  const first = await turn();
  assert.equal(first.read, 0);
  assert.equal(first.cache.miss, null, "nothing was cached yet: no miss");
  const second = await turn();
  assert.ok(second.read > 1500, `the second turn reads the prefix (${second.read})`);
  assert.equal(second.cache.miss, null);
  // The same client prefix, written differently upstream (the test hook): the cache is missed.
  const drifted = await turn("translation");
  assert.equal(drifted.read, 0);
  assert.equal(drifted.cache.miss?.cause, "translation");
  assert.equal(drifted.cache.miss?.tokens, drifted.cache.inputTokens, "capped at its input");
  assert.ok(drifted.cache.miss!.lost > 0);
  const after = await turn();
  assert.ok(after.read > 1500, "the prefix as translated before is read again");
  assert.equal(after.cache.miss, null);
});
