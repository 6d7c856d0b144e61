/**
 * Routing resilience on the real server (two serving threads, so every rule below also shows the
 * threads share their routing state): several keys per provider (rotation, rest after 429,
 * refused keys out until reload), several deployments per model (weights, circuit breaker on a
 * dead port), fallbacks to another protocol family, retries only before the first byte, one
 * charge per call at the serving deployment's price, and `maxConcurrent` under a burst.
 */
import assert from "node:assert/strict";
import { startEmulator } from "../src/emulator/server.ts";
import { freePort, type Gateway, requestLogged, startGateway } from "./helpers/gateway.ts";
import { sleep, waitFor } from "./helpers/poll.ts";
import { booksOf, ledgerOf } from "./helpers/store.ts";
import { eventually, MAX_OUT, TEST_PRICE } from "./helpers/setup.ts";

const KEYS = {
  good: "sk-good-aaaa1111",
  busy: "sk-busy-bbbb2222",
  bad: "sk-bad-cccc3333",
  down: "sk-down-dddd4444",
  wa: "sk-wa-eeee5555",
  wb: "sk-wb-ffff6666",
  ant: "sk-ant-gggg7777",
  lim: "sk-lim-hhhh8888",
  spare: "sk-spare-iiii9999",
  gem: "AIzaGemKey-jjjj0000",
  plug: "sk-plug-kkkk1111",
  pa: "sk-pa-llll2222",
  pb: "sk-pb-mmmm3333",
  v1: "xai-v1-nnnn4444",
  v2: "xai-v2-oooo5555",
};
const ADMIN = "routing-admin-token-0123456789";
/**
 * The busy key's retry-after, in seconds: the first calls of the rest test must fit in it, so it
 * is many times what they take on a loaded machine.
 */
const REST_S = 8;
/** The upstream's deadline for its headers (the hole test waits it out). */
const UPSTREAM_DEADLINE_MS = 4000;
/** The served deployment's price in the retried-call test (USD per million tokens). */
const SPARE_PRICE = { input: 7, output: 11 };

const emulator = startEmulator({
  record: false,
  keys: [
    { key: KEYS.good },
    { key: KEYS.busy, fault: "exhausted", retryAfter: REST_S },
    { key: KEYS.bad, fault: "invalid" },
    { key: KEYS.down, fault: "failing" },
    { key: KEYS.wa },
    { key: KEYS.wb },
    { key: KEYS.ant },
    { key: KEYS.lim },
    { key: KEYS.spare },
    { key: KEYS.gem },
    { key: KEYS.pa },
    { key: KEYS.pb },
    { key: KEYS.v1 },
    { key: KEYS.v2 },
  ],
});
const up = `http://127.0.0.1:${emulator.addr.port}`;
const deadPort = freePort();

/** An emulator in a process of its own, to be killed outright (the plug pulled). */
async function spawnEmulator(key: string): Promise<{ url: string; kill(): Promise<void> }> {
  const port = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("../main.ts", import.meta.url).pathname,
      "emulate",
      "--port",
      String(port),
      "--key",
      key,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  await eventually(async () => {
    try {
      await (await fetch(`${url}/_emulator/keys`)).body?.cancel();
      return true;
    } catch {
      return false;
    }
  }, 15_000);
  return {
    url,
    async kill() {
      child.kill("SIGKILL");
      await child.status;
    },
  };
}
const plugged = await spawnEmulator(KEYS.plug);

/** A port that takes connections and never answers (an upstream hung before its headers). */
const hole = Deno.listen({ hostname: "127.0.0.1", port: 0 });
const swallowed: Deno.Conn[] = [];
(async () => {
  for await (const conn of hole) swallowed.push(conn);
})();
const openai = (apiKey: unknown, base = `${up}/openai/v1`) => ({
  type: "openai",
  baseUrl: base,
  apiKey,
});
const gpt = { upstream: "gpt-5.4", price: TEST_PRICE, ...MAX_OUT };

const gateway: Gateway = await startGateway({
  workers: 2,
  config: {
    defaultCatalog: false,
    admin: { token: ADMIN },
    server: { upstreamTimeoutMs: UPSTREAM_DEADLINE_MS },
    routing: {
      maxAttempts: 3,
      backoffMs: 5,
      queueMs: 600,
      circuit: { failures: 2, coolOffMs: 1500 },
      // These tests send the same prompt again and again and check each call's turn: a
      // conversation keeping to its cache would keep them on one (see affinity_test.ts).
      cacheAffinity: false,
    },
    providers: {
      rotate: openai([KEYS.good, KEYS.busy]),
      refuse: openai([KEYS.good, KEYS.bad]),
      failing: openai(KEYS.down),
      anth: { type: "anthropic", baseUrl: `${up}/anthropic`, apiKey: KEYS.ant },
      wa: openai(KEYS.wa),
      wb: openai(KEYS.wb),
      spare: openai(KEYS.spare),
      lim: openai(KEYS.lim),
      dead: openai(KEYS.good, `http://127.0.0.1:${deadPort}/openai/v1`),
      gem: { type: "gemini", baseUrl: `${up}/gemini`, apiKey: KEYS.gem },
      plug: openai(KEYS.plug, `${plugged.url}/openai/v1`),
      hole: openai(KEYS.good, `http://127.0.0.1:${(hole.addr as Deno.NetAddr).port}/openai/v1`),
      solo: openai(KEYS.bad),
      vid: { type: "xai", baseUrl: `${up}/xai/v1`, apiKey: [KEYS.v1, KEYS.v2] },
      pa: openai(KEYS.pa),
      pb: openai(KEYS.pb),
    },
    models: {
      "rot-test": { provider: "rotate", ...gpt },
      "refuse-test": { provider: "refuse", ...gpt },
      "fb-test": { provider: "failing", ...gpt, fallbacks: ["claude-fb"] },
      "claude-fb": {
        provider: "anth",
        upstream: "claude-sonnet-4-5",
        price: { input: 3, output: 15 },
        ...MAX_OUT,
      },
      "weighted-test": {
        deployments: [{ provider: "wa", weight: 3 }, { provider: "wb", weight: 1 }],
        ...gpt,
      },
      "twice-test": {
        deployments: [
          { provider: "failing", upstream: "gpt-5.4-mini" },
          { provider: "spare", price: SPARE_PRICE },
        ],
        ...gpt,
      },
      "dead-test": { deployments: [{ provider: "dead" }, { provider: "spare" }], ...gpt },
      "cut-test": { provider: "spare", ...gpt, fallbacks: ["claude-fb"] },
      "lim-test": { provider: "lim", ...gpt, maxConcurrent: 2 },
      "rpm-test": { provider: "lim", upstream: "gpt-5.4-mini", price: TEST_PRICE, rpm: 3 },
      "solo-test": { provider: "solo", ...gpt },
      "embed-two": {
        kind: "embedding",
        upstream: "text-embedding-3-small",
        deployments: [{ provider: "failing" }, { provider: "spare" }],
        price: { input: 0.02 },
        fallbacks: ["gem-embed"],
      },
      "vid-test": {
        provider: "vid",
        kind: "video",
        upstream: "grok-imagine-video",
        price: { videoSecondBy: { "480p": 0.05 } },
      },
      "img-two": {
        kind: "image",
        upstream: "gpt-image-1",
        deployments: [{ provider: "failing" }, { provider: "spare", price: { image: 0.05 } }],
        price: { image: 0.04 },
      },
      "gem-embed": {
        provider: "gem",
        kind: "embedding",
        upstream: "gemini-embedding-001",
        price: { input: 0.15 },
      },
      "tier-test": {
        deployments: [
          {
            provider: "pa",
            upstream: "gpt-5.4-tier",
            price: { ...TEST_PRICE, tiers: { flex: { input: 1, output: 5 } } },
          },
          { provider: "pb", upstream: "gpt-5.4-tier" },
        ],
        price: TEST_PRICE,
        ...MAX_OUT,
      },
      "pin-test": { deployments: [{ provider: "pa" }, { provider: "pb" }], ...gpt },
      "hole-test": { provider: "hole", ...gpt, fallbacks: ["rot-test"] },
      "plug-test": { deployments: [{ provider: "plug" }, { provider: "spare" }], ...gpt },
      "small-test": { provider: "spare", ...gpt, contextFallback: "gemini-big" },
      "gemini-big": { provider: "gem", upstream: "gemini-2.5-pro", price: TEST_PRICE, ...MAX_OUT },
    },
  },
});
const { key } = await gateway.createKey("routing", "--credit", "100", "--rpm", "0");

/** Requests each upstream key received so far. */
async function keyCounts(): Promise<Record<string, number>> {
  const res = await fetch(`${up}/_emulator/keys`);
  const body = await res.json() as Record<string, { requests: number }>;
  return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, v.requests]));
}

/** One Responses call on a connection of its own (so calls spread over the serving threads). */
async function call(
  model: string,
  extra: Record<string, unknown> = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const client = Deno.createHttpClient({});
  try {
    const res = await fetch(`${gateway.url}/v1/responses`, {
      client,
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model, input: "hello there", max_output_tokens: 64, ...extra }),
    });
    return { status: res.status, headers: res.headers, text: await res.text() };
  } finally {
    client.close();
  }
}

/** A Responses call the client gives up on after `ms`; resolves to its request id. */
async function abandon(model: string, input: string, ms: number): Promise<string> {
  const id = `req_abandoned_${crypto.randomUUID()}`;
  const controller = new AbortController();
  const pending = fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    signal: controller.signal,
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      "x-request-id": id,
    },
    body: JSON.stringify({ model, input, max_output_tokens: 64 }),
  }).catch(() => null);
  await new Promise((r) => setTimeout(r, ms));
  controller.abort();
  await pending;
  return id;
}

/** How many more requests carried each key in `after` than in `before`. */
function grown(before: Record<string, number>, after: Record<string, number>, key: string): number {
  return (after[key] ?? 0) - (before[key] ?? 0);
}

/** The ledger entries of a request. */
function entriesOf(requestId: string) {
  return ledgerOf(gateway, { requestId });
}

async function readyz(): Promise<
  {
    providers: Record<string, { refused?: number }>;
    deployments: Record<string, { circuit: string }>;
  }
> {
  return await (await fetch(`${gateway.url}/readyz`)).json();
}

/** No header of an answer carries an upstream key. */
function assertNoKeys(headers: Headers): void {
  for (const [name, value] of headers) {
    for (const secret of Object.values(KEYS)) {
      assert.ok(!value.includes(secret), `header ${name} carries an upstream key`);
    }
  }
}

Deno.test({
  name: "a rate-limited key rests until its retry-after, and calls move to the next key",
  sanitizeResources: false,
  async fn() {
    const before = await keyCounts();
    const first = Date.now();
    const answers = [];
    for (let i = 0; i < 8; i++) answers.push(await call("rot-test"));
    // The busy key's rest began with its 429, after `first`: these calls all fell within it.
    const took = Date.now() - first;
    assert.ok(took < REST_S * 1000, `the first calls took ${took} ms, past the key's rest`);
    for (const answer of answers) {
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.headers.get("x-switchyard-provider"), "rotate");
      assertNoKeys(answer.headers);
    }
    let after = await keyCounts();
    // The busy key was tried once, by the call whose turn it was; that call moved on.
    assert.equal(grown(before, after, KEYS.busy), 1);
    assert.equal(grown(before, after, KEYS.good), 8);
    assert.deepEqual(
      answers.map((a) => a.headers.get("x-switchyard-attempts")).sort(),
      ["1", "1", "1", "1", "1", "1", "1", "2"],
    );
    // After its retry-after, the busy key takes its turn again (not before: its rest began after
    // `first`), and each call it fails moves on to the good key.
    await sleep(REST_S * 1000 - (Date.now() - first));
    await eventually(async () => {
      assert.equal((await call("rot-test")).status, 200);
      return grown(before, await keyCounts(), KEYS.busy) === 2;
    }, { what: "the busy key's second turn" });
    after = await keyCounts();
    assert.equal(grown(before, after, KEYS.busy), 2);
    // Each call charged once.
    for (const answer of answers) {
      const rows = await entriesOf(answer.headers.get("x-request-id")!);
      assert.equal(rows.length, 1);
      assert.equal(rows[0].status, "settled");
    }
  },
});

Deno.test({
  name: "a key the upstream refuses is taken out until reload, and logged once without the key",
  sanitizeResources: false,
  async fn() {
    const before = await keyCounts();
    for (let i = 0; i < 10; i++) assert.equal((await call("refuse-test")).status, 200);
    const after = await keyCounts();
    assert.equal(grown(before, after, KEYS.bad), 1);
    const lines = [...gateway.logs, ...gateway.errors].filter((l) =>
      l.includes("upstream refused a key")
    );
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.ok(!lines[0].includes(KEYS.bad) && lines[0].includes("key 2 of 2"), lines[0]);
    assert.equal((await readyz()).providers.refuse.refused, 1);
    assert.equal((await gateway.cli("reload")).code, 0);
    await eventually(async () => (await readyz()).providers.refuse.refused === 0);
  },
});

Deno.test({
  name: "a 5xx falls back to a model of another protocol family, JSON and stream, billed there",
  sanitizeResources: false,
  async fn() {
    const before = await keyCounts();
    const json = await call("fb-test");
    assert.equal(json.status, 200, json.text);
    assert.equal(json.headers.get("x-switchyard-provider"), "anth");
    assert.equal(json.headers.get("x-switchyard-model"), "claude-fb");
    assert.equal(json.headers.get("x-switchyard-attempts"), "2");
    const body = JSON.parse(json.text);
    assert.equal(body.object, "response");
    assert.equal(body.status, "completed");
    assert.ok(body.output.some((item: { type: string }) => item.type === "message"));

    const stream = await call("fb-test", { stream: true });
    assert.equal(stream.status, 200);
    assert.match(stream.headers.get("content-type") ?? "", /text\/event-stream/);
    assert.match(stream.text, /event: response\.completed/);
    assert.equal(stream.headers.get("x-switchyard-provider"), "anth");
    const after = await keyCounts();
    assert.equal(grown(before, after, KEYS.down), 2);
    assert.equal(grown(before, after, KEYS.ant), 2);
    for (const answer of [json, stream]) {
      await eventually(async () => {
        const rows = await entriesOf(answer.headers.get("x-request-id")!);
        return rows.length === 1 && rows[0].status === "settled";
      });
      const [row] = await entriesOf(answer.headers.get("x-request-id")!);
      assert.equal(row.model, "claude-fb");
      assert.equal(row.provider, "anth");
      assert.equal(row.upstreamModel, "claude-sonnet-4-5");
      assert.ok(Number(row.amount) > 0);
    }
  },
});

Deno.test({
  name: "once bytes reached the client a cut stream ends in an error event: no retry, billed once",
  sanitizeResources: false,
  async fn() {
    const before = await keyCounts();
    const cut = await call("cut-test", { stream: true, input: "tell me [[emulate cut=5]]" });
    assert.equal(cut.status, 200);
    assert.match(cut.text, /event: (error|response\.failed)/);
    const after = await keyCounts();
    assert.equal(grown(before, after, KEYS.spare), 1);
    assert.equal(grown(before, after, KEYS.ant), 0, "no fallback after the first byte");
    await eventually(async () => {
      const rows = await entriesOf(cut.headers.get("x-request-id")!);
      return rows.length === 1 && rows[0].status === "settled";
    });
    const [row] = await entriesOf(cut.headers.get("x-request-id")!);
    assert.equal(row.estimated, true);
    assert.ok(Number(row.amount) > 0);
  },
});

Deno.test({
  name: "a retried call is charged once, at the price of the deployment that served it",
  sanitizeResources: false,
  async fn() {
    const answer = await call("twice-test");
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.headers.get("x-switchyard-provider"), "spare");
    assert.equal(answer.headers.get("x-switchyard-attempts"), "2");
    const usage = JSON.parse(answer.text).usage;
    const rows = await entriesOf(answer.headers.get("x-request-id")!);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].provider, "spare");
    const expected = usage.input_tokens * SPARE_PRICE.input * 1000 +
      usage.output_tokens * SPARE_PRICE.output * 1000;
    assert.equal(Number(rows[0].amount), expected);
  },
});

Deno.test({
  name: "deployments share calls by weight: 1,000 calls within 3% of 3:1",
  sanitizeResources: false,
  async fn() {
    const before = await keyCounts();
    let next = 0;
    const worker = async () => {
      while (next < 1000) {
        next++;
        const answer = await call("weighted-test");
        assert.equal(answer.status, 200, answer.text);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    const after = await keyCounts();
    const a = grown(before, after, KEYS.wa);
    const b = grown(before, after, KEYS.wb);
    assert.equal(a + b, 1000);
    assert.ok(Math.abs(a - 750) <= 30, `weight 3 got ${a} of 1000`);
    // A provider that is only ever a second deployment is in /readyz too, its calls counted.
    assert.deepEqual((await readyz()).providers.wb, {
      calls: b,
      errors: 0,
      error_rate: 0,
      keys: 1,
      refused: 0,
    });
  },
});

Deno.test({
  name: "a dead deployment is skipped, its circuit opens, then half-opens for one probe",
  sanitizeResources: false,
  async fn() {
    const attempts: string[] = [];
    for (let i = 0; i < 10; i++) {
      const answer = await call("dead-test");
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.headers.get("x-switchyard-provider"), "spare");
      attempts.push(answer.headers.get("x-switchyard-attempts")!);
    }
    // Two calls found the dead port (circuit.failures = 2); then it was passed over.
    assert.equal(attempts.filter((a) => a === "2").length, 2, attempts.join(","));
    const name = "dead/gpt-5.4";
    assert.equal((await readyz()).deployments[name].circuit, "open");
    const metrics = await (await fetch(`${gateway.url}/metrics`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    })).text();
    assert.match(metrics, /switchyard_deployment_circuit_open\{deployment="dead\/gpt-5\.4"\} 1/);
    // The dead port comes back; after the cool-off one probe closes the circuit.
    const revived = startEmulator({ port: deadPort, keys: [{ key: KEYS.good }] });
    try {
      await eventually(async () => (await readyz()).deployments[name].circuit === "half-open");
      const served: string[] = [];
      for (let i = 0; i < 4; i++) {
        served.push((await call("dead-test")).headers.get("x-switchyard-provider")!);
      }
      assert.ok(served.includes("dead"), served.join(","));
      assert.equal((await readyz()).deployments[name].circuit, "closed");
    } finally {
      await revived.shutdown();
    }
  },
});

Deno.test({
  name: "maxConcurrent holds under a burst: calls queue briefly, then get 429 in the protocol",
  sanitizeResources: false,
  async fn() {
    // Calls of 2.5 s, two at a time, a 600 ms queue: two answer, four give up (unless the six
    // arrive more than 1.9 s apart). 2.5 s is well within the upstream's deadline for headers.
    const slow = await Promise.all(
      Array.from({ length: 6 }, () => call("lim-test", { input: "hi [[emulate wait=2500]]" })),
    );
    const statuses = slow.map((a) => a.status).sort();
    assert.deepEqual(statuses, [200, 200, 429, 429, 429, 429]);
    const refused = slow.find((a) => a.status === 429)!;
    assert.equal(JSON.parse(refused.text).error.code, "upstream_capacity");
    assert.ok(refused.headers.get("retry-after"));
    // Calls of 30 ms: six go through, two at a time (the last wave waits about 60 ms of its
    // 600 ms queue), so in at least three waves: 90 ms at the least, however fast the machine.
    const started = Date.now();
    const quick = await Promise.all(
      Array.from({ length: 6 }, () => call("lim-test", { input: "hi [[emulate wait=30]]" })),
    );
    assert.deepEqual(quick.map((a) => a.status), [200, 200, 200, 200, 200, 200]);
    assert.ok(Date.now() - started >= 85, `six calls took ${Date.now() - started} ms`);
  },
});

Deno.test({
  name: "a deployment's rpm holds across both threads: the calls past it get 429 in the protocol",
  sanitizeResources: false,
  async fn() {
    // rpm 3: the fourth call would wait 20 s, past the 600 ms queue.
    const answers = await Promise.all(Array.from({ length: 6 }, () => call("rpm-test")));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 200, 429, 429, 429]);
    const refused = answers.find((a) => a.status === 429)!;
    assert.equal(JSON.parse(refused.text).error.code, "upstream_capacity");
    // The fourth call's turn is 20 s away (60 s / rpm 3): so says its retry-after.
    assert.ok(
      Number(refused.headers.get("retry-after")) >= 19,
      refused.headers.get("retry-after")!,
    );
    // Refused calls reached no upstream and hold nothing.
    for (const a of answers.filter((a) => a.status === 429)) {
      assert.equal(a.headers.get("x-switchyard-attempts"), null);
      assert.equal((await entriesOf(a.headers.get("x-request-id")!)).length, 0);
    }
  },
});

Deno.test({
  name: "an input over the context window goes to the model's contextFallback, once",
  sanitizeResources: false,
  async fn() {
    const before = await keyCounts();
    // The prompt's directive makes every upstream refuse it: the fallback is tried once.
    const over = await call("small-test", { input: "a long one [[emulate context=1]]" });
    assert.equal(over.status, 400);
    assert.match(JSON.parse(over.text).error.message, /input token count/);
    let after = await keyCounts();
    assert.equal(grown(before, after, KEYS.spare), 1);
    assert.equal(grown(before, after, KEYS.gem), 1);
    assert.equal(over.headers.get("x-switchyard-attempts"), "2");
    assert.equal((await entriesOf(over.headers.get("x-request-id")!)).length, 0, "nothing billed");
    // A call that fits is served by the model itself.
    const fits = await call("small-test");
    assert.equal(fits.status, 200);
    assert.equal(fits.headers.get("x-switchyard-model"), "small-test");
    after = await keyCounts();
    assert.equal(grown(before, after, KEYS.gem), 1);
  },
});

Deno.test({
  name: "pulling the plug on one of two deployments under load loses no call that had not streamed",
  sanitizeResources: false,
  async fn() {
    const account = await gateway.createKey("plug", "--credit", "10", "--rpm", "0");
    const calls: {
      status: number;
      stream: boolean;
      text: string;
      id: string;
      attempts: number;
    }[] = [];
    // The plug is pulled once 30 calls have answered, and the load goes on for 30 more.
    let pulled = false;
    let afterPull = 0;
    const worker = async (n: number) => {
      for (let i = 0; !pulled || afterPull < 30; i++) {
        const stream = (n + i) % 2 === 0;
        const client = Deno.createHttpClient({});
        try {
          const res = await fetch(`${gateway.url}/v1/responses`, {
            client,
            method: "POST",
            headers: {
              authorization: `Bearer ${account.key}`,
              "content-type": "application/json",
            },
            body: JSON.stringify({
              model: "plug-test",
              input: "steady load [[emulate wait=20 delay=3]]",
              max_output_tokens: 64,
              stream,
            }),
          });
          const text = await res.text();
          if (pulled) afterPull++;
          calls.push({
            status: res.status,
            stream,
            text,
            id: res.headers.get("x-request-id")!,
            attempts: Number(res.headers.get("x-switchyard-attempts")),
          });
        } finally {
          client.close();
        }
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, (_, n) => worker(n)));
    await eventually(() => calls.length >= 30, { what: "30 calls before the plug is pulled" });
    await plugged.kill();
    pulled = true;
    await load;
    assert.ok(calls.length >= 60, `${calls.length} calls`);
    // Calls on their way to the dead deployment moved to the other one.
    assert.ok(calls.some((c) => c.attempts >= 2), "a call was retried");
    // Every call answered; a JSON call always whole, a stream completed or ended in an error event.
    for (const c of calls) {
      assert.equal(c.status, 200, c.text.slice(0, 300));
      if (!c.stream) assert.equal(JSON.parse(c.text).status, "completed");
      else assert.match(c.text, /event: (response\.completed|error|response\.failed)/);
    }
    // Charged at most once each, and the ledger adds up to the balance's change.
    await eventually(async () => (await booksOf(gateway, "plug")).open === 0);
    const books = await booksOf(gateway, "plug");
    // An answer the client got is charged once; a stream cut before anything was relayed ends
    // in an error for the client, and costs nothing.
    for (const c of calls) {
      const rows = books.entries.filter((e) => e.requestId === c.id);
      const answered = !c.stream || /event: response\.completed/.test(c.text) ||
        /"type":"response\.output_text\.delta"/.test(c.text);
      if (answered) assert.equal(rows.length, 1, `request ${c.id}`);
      else assert.ok(rows.length <= 1, `request ${c.id}`);
    }
    assert.equal(books.balance + books.charged, 10 * 1e9);
  },
});

Deno.test({
  name: "an upstream that sends no headers in time is left for the fallback",
  sanitizeResources: false,
  async fn() {
    const started = Date.now();
    const answer = await call("hole-test");
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.headers.get("x-switchyard-model"), "rot-test");
    assert.equal(answer.headers.get("x-switchyard-attempts"), "2");
    // Not before the deadline (time is the behaviour here); the upper bound only says the
    // fallback followed the deadline rather than some other, much later event.
    const took = Date.now() - started;
    assert.ok(
      took >= UPSTREAM_DEADLINE_MS && took < UPSTREAM_DEADLINE_MS + 15_000,
      `took ${took} ms`,
    );
    const requestId = answer.headers.get("x-request-id")!;
    assert.equal((await entriesOf(requestId)).length, 1);
    // The call waited, so it watched its client's signal: a signal that aborts only when the client
    // goes away (deno.json's `no-legacy-abort`) leaves Deno nothing to warn about once it answered.
    await requestLogged(gateway, requestId);
    const warned = gateway.errors.filter((line) => line.includes("request.signal"));
    assert.deepEqual(warned, []);
  },
});

Deno.test({
  name: "a client that goes away stops the call: no fallback is tried, nothing is charged",
  sanitizeResources: false,
  async fn() {
    const before = await keyCounts();
    const id = await abandon("hole-test", "hello", 300);
    // The gateway is done with the request (a fallback, had it been tried, came before this).
    const entry = await requestLogged(gateway, id);
    assert.equal(entry.attempts ?? 1, 1, JSON.stringify(entry));
    const after = await keyCounts();
    assert.equal(grown(before, after, KEYS.good), 0, "the fallback was not called");
    assert.equal((await entriesOf(id)).length, 0);
  },
});

Deno.test({
  name: "a client that leaves while the first attempt waits is not charged for its answer",
  sanitizeResources: false,
  async fn() {
    const id = await abandon("cut-test", "slow one [[emulate wait=1600]]", 200);
    // The gateway is done with the request: its hold released, or its answer charged.
    await requestLogged(gateway, id);
    assert.equal(
      (await entriesOf(id)).length,
      0,
      "the upstream call was dropped and its hold released",
    );
  },
});

Deno.test({
  name: "a service tier only one deployment prices goes to that deployment, never a 400",
  sanitizeResources: false,
  async fn() {
    for (let i = 0; i < 6; i++) {
      const answer = await call("tier-test", { service_tier: "flex" });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.headers.get("x-switchyard-provider"), "pa");
    }
    // Without the tier, both take turns.
    const served = new Set<string | null>();
    for (let i = 0; i < 4; i++) {
      served.add((await call("tier-test")).headers.get("x-switchyard-provider"));
    }
    assert.deepEqual(served, new Set(["pa", "pb"]));
  },
});

Deno.test({
  name: "a provider whose only key is refused answers 502, every time, without a retry-after",
  sanitizeResources: false,
  async fn() {
    for (let i = 0; i < 2; i++) {
      const answer = await call("solo-test");
      assert.equal(answer.status, 502, answer.text);
      assert.equal(JSON.parse(answer.text).error.code, "upstream_auth_failed");
      assert.equal(answer.headers.get("retry-after"), null);
      assert.ok(!answer.text.includes(KEYS.bad));
    }
  },
});

Deno.test({
  name: "a call continuing a stored response goes to the provider that holds it",
  sanitizeResources: false,
  async fn() {
    const first = await call("pin-test");
    assert.equal(first.status, 200, first.text);
    const holder = first.headers.get("x-switchyard-provider")!;
    const id = JSON.parse(first.text).id;
    const served = [];
    for (let i = 0; i < 6; i++) {
      const next = await call("pin-test", { previous_response_id: id });
      assert.equal(next.status, 200, next.text);
      served.push(next.headers.get("x-switchyard-provider"));
    }
    assert.deepEqual(served, Array(6).fill(holder));
    // Calls that continue nothing take turns over both deployments.
    const fresh = [];
    for (let i = 0; i < 4; i++) {
      fresh.push((await call("pin-test")).headers.get("x-switchyard-provider"));
    }
    assert.deepEqual(new Set(fresh), new Set(["pa", "pb"]));
  },
});

Deno.test({
  name: "embeddings move between deployments too, never to a provider the route cannot call",
  sanitizeResources: false,
  async fn() {
    const before = await keyCounts();
    const res = await fetch(`${gateway.url}/v1/embeddings`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "embed-two", input: "hello there" }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(res.headers.get("x-switchyard-provider"), "spare");
    assert.equal(res.headers.get("x-switchyard-attempts"), "2");
    assert.equal((await res.json()).object, "list");
    // Both OpenAI deployments failing: the Gemini fallback is not an OpenAI embeddings upstream.
    await fetch(`${up}/_emulator/keys`, {
      method: "POST",
      body: JSON.stringify({ key: KEYS.spare, fault: "failing" }),
    }).then((r) => r.body?.cancel());
    try {
      const failed = await fetch(`${gateway.url}/v1/embeddings`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "embed-two", input: "hello there" }),
      });
      assert.equal(failed.status, 502, await failed.clone().text());
      await failed.body?.cancel();
    } finally {
      await fetch(`${up}/_emulator/keys`, {
        method: "POST",
        body: JSON.stringify({ key: KEYS.spare, fault: null }),
      }).then((r) => r.body?.cancel());
    }
    const after = await keyCounts();
    assert.equal(grown(before, after, KEYS.gem), 0, "no call to the Gemini fallback");
  },
});

Deno.test({
  name: "an image generation moves to the next deployment, billed at its price",
  sanitizeResources: false,
  async fn() {
    const res = await fetch(`${gateway.url}/v1/images/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "img-two", prompt: "a lighthouse", size: "1024x1024" }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(res.headers.get("x-switchyard-provider"), "spare");
    assert.equal(res.headers.get("x-switchyard-attempts"), "2");
    assert.equal((await res.json()).data.length, 1);
    const [row] = await entriesOf(res.headers.get("x-request-id")!);
    assert.equal(row.provider, "spare");
    assert.ok(Number(row.amount) >= 0.05e9, `charged ${row.amount}`);
  },
});

Deno.test({
  name: "a video job is polled with the key it was submitted with, not the keys in turn",
  sanitizeResources: false,
  async fn() {
    const before = await keyCounts();
    const submitted = await fetch(`${gateway.url}/v1/videos/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "vid-test",
        prompt: "a boat [[emulate ready=300 seconds=2]]",
        duration: 2,
        resolution: "480p",
      }),
    });
    assert.equal(submitted.status, 200, await submitted.clone().text());
    const { request_id } = await submitted.json();
    const status = await waitFor(async () => {
      const polled = await fetch(`${gateway.url}/v1/videos/${request_id}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      const { status } = await polled.json();
      return status !== "pending" && status;
    }, { what: "the video job's end" });
    assert.equal(status, "done");
    const after = await keyCounts();
    const used = [KEYS.v1, KEYS.v2].map((k) => grown(before, after, k));
    // One key took the submission and every poll (at least two requests); the other none.
    assert.ok(used.includes(0) && Math.max(...used) >= 2, used.join(","));
  },
});

Deno.test({
  name: "routing: stop the gateway and the emulator",
  sanitizeResources: false,
  async fn() {
    await gateway.stop();
    await emulator.shutdown();
    hole.close();
    for (const conn of swallowed) conn.close();
  },
});
