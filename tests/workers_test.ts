/**
 * `serve --workers 2`: two serving threads on one port share one store. A key's requests per
 * minute and an account's balance hold for the process as a whole, both threads serve, startup
 * recovery and the video poller run once per process, SIGTERM drains both, and a second gateway
 * cannot join the port.
 */
import assert from "node:assert/strict";
import { eventually, startStack, usageOf } from "./helpers/setup.ts";
import { compiledFlags, type Gateway } from "./helpers/gateway.ts";
import { booksOf } from "./helpers/store.ts";

const stack = await startStack({ workers: 2 });
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

function call(gw: Gateway, key: string, input = "hello") {
  return fetch(`${gw.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-test", input, max_output_tokens: 64 }),
  }).then(async (res) => ({
    status: res.status,
    remaining: res.headers.get("x-ratelimit-remaining-requests"),
    retryAfter: res.headers.get("retry-after"),
    body: await res.text(),
  }));
}

Deno.test("a key at --rpm 10 gets exactly 10 answers of 30 concurrent requests across both threads", async () => {
  const { key } = await gateway.createKey("workers-rpm", "--credit", "5", "--rpm", "10");
  const results = await Promise.all(Array.from({ length: 30 }, () => call(gateway, key)));
  const answered = results.filter((r) => r.status !== 429);
  assert.equal(answered.length, 10, results.map((r) => r.status).join());
  assert.ok(answered.every((r) => r.status === 200));
  // One limiter decided them all: the remaining counts are 9 down to 0, each once.
  const remaining = answered.map((r) => Number(r.remaining)).sort((a, b) => a - b);
  assert.deepEqual(remaining, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const refused = results.filter((r) => r.status === 429);
  assert.ok(refused.every((r) => r.remaining === "0" && Number(r.retryAfter) >= 1));
});

Deno.test("waves of concurrent limited calls each get their own decision, once (the threads reuse their question slots)", async () => {
  const { key } = await gateway.createKey("workers-waves", "--credit", "5", "--rpm", "1000");
  const results = [];
  for (let wave = 0; wave < 3; wave++) {
    results.push(...await Promise.all(Array.from({ length: 20 }, () => call(gateway, key))));
  }
  assert.ok(results.every((r) => r.status === 200), results.map((r) => r.status).join());
  const remaining = results.map((r) => Number(r.remaining)).sort((a, b) => a - b);
  assert.deepEqual(remaining, Array.from({ length: 60 }, (_, i) => 940 + i));
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
  const row = await booksOf(gateway, "workers-money");
  assert.equal(row.open, 0, "every hold settled or released");
  assert.equal(row.held, 0);
  assert.ok(row.balance >= 0, `balance ${row.balance}`);
  assert.equal(row.credited - row.balance, row.charged, "ledger sum = balance change");
  assert.equal(row.spent, row.charged);
  // Both threads wrote to the one stdout: every line is whole, one access-log line per call.
  const lines = () => gateway.logs.map((line) => JSON.parse(line));
  await eventually(() =>
    Promise.resolve(
      lines().filter((e) => e.msg === "request" && e.account === "workers-money").length === 50,
    )
  );
});

Deno.test("a second gateway cannot join the threads' port (SO_REUSEPORT): it stops with AddrInUse", async () => {
  const dir = await Deno.makeTempDir({ prefix: "switchyard-test-" });
  const port = new URL(gateway.url).port;
  const root = new URL("../", import.meta.url);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...(await compiledFlags()),
      "--config",
      new URL("deno.json", root).pathname,
      new URL("main.ts", root).pathname,
      ...["serve", "--host", "127.0.0.1", "--port", port, "--workers", "2"],
    ],
    cwd: dir,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Were it to start, it would serve until stopped.
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  try {
    const out = await child.output();
    const stdout = new TextDecoder().decode(out.stdout);
    const stderr = new TextDecoder().decode(out.stderr);
    assert.notEqual(out.code, 0, stdout);
    assert.doesNotMatch(stdout, /"msg":"listening"/);
    assert.match(stderr, /AddrInUse/);
    assert.equal((await fetch(`${gateway.url}/healthz`)).status, 200, "the first one serves on");
  } finally {
    clearTimeout(timer);
    await Deno.remove(dir, { recursive: true });
  }
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
  assert.equal((await booksOf(gateway, "workers-crash")).open, 1);

  const restarted = await stack.restart();
  const recoveries = restarted.logs.map((l) => JSON.parse(l)).filter((e) =>
    e.msg === "settled calls left open by an earlier crash"
  );
  assert.deepEqual(recoveries.map((e) => e.calls), [1], "recovered once, not once per thread");
  const row = await booksOf(restarted, "workers-crash");
  assert.equal(row.open, 0);
  assert.equal(row.held, 0);
  assert.equal(row.credited - row.balance, row.charged);
  assert.ok(row.charged > 0);
  const listening = restarted.logs.map((l) => JSON.parse(l)).find((e) => e.msg === "listening");
  assert.equal(listening.workers, 2);

  const status = await restarted.terminate();
  assert.equal(status.code, 0);
});

/** The emulator's xAI video rate at 480p: $0.05 a second, in nanoUSD. */
const PER_SECOND_480P = 50_000_000;

Deno.test("a video job submitted through the threads is polled by the main thread alone and billed once", async () => {
  const POLL_MS = 100;
  const polled = await startStack({ workers: 2, videos: { pollIntervalMs: POLL_MS } });
  try {
    const gw = polled.gateway;
    const { key } = await gw.createKey("workers-video", "--credit", "5", "--rpm", "0");
    const submitted = Date.now();
    const res = await fetch(`${gw.url}/v1/videos/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "video-test",
        prompt: "a lighthouse [[emulate ready=1500 seconds=3]]",
        duration: 4,
      }),
    });
    assert.equal(res.status, 200);
    const { request_id } = await res.json();
    // Nobody polls the job: the background poller finishes it.
    await eventually(async () => (await usageOf(gw, key)).requests === 1);
    const elapsed = Date.now() - submitted;
    const usage = await usageOf(gw, key);
    assert.equal(usage.spent_nanousd, 3 * PER_SECOND_480P);
    assert.equal(usage.held_nanousd, 0);

    // One poller (not one per thread as well) asked the upstream at most once per interval.
    const polls = (await polled.upstreamRequests()).filter((r) =>
      r.method === "GET" && r.path.startsWith("/xai/v1/videos/")
    );
    assert.ok(polls.length >= 2, `${polls.length} polls`);
    assert.ok(
      polls.length <= elapsed / POLL_MS + 3,
      `${polls.length} polls in ${elapsed} ms: more than one poller`,
    );

    // Clients polling through either thread see the one settlement.
    for (let i = 0; i < 6; i++) {
      const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
      const body = await (await fetch(`${gw.url}/v1/videos/${request_id}`, {
        headers: { authorization: `Bearer ${key}` },
        client,
      })).json();
      client.close();
      assert.equal(body.status, "done");
      assert.deepEqual(body.usage, {
        cost_in_usd_ticks: 3 * PER_SECOND_480P * 10,
        video_seconds: 3,
      });
    }
    const row = await booksOf(gw, "workers-video");
    assert.equal(row.settled, 1);
    assert.equal(row.open, 0);
    assert.equal(row.charged, 3 * PER_SECOND_480P);
    assert.equal(row.credited - row.balance, row.charged);
  } finally {
    await polled.stop();
  }
});

/** Starts a slow stream on its own connection; resolves once its first chunk has arrived. */
async function openStream(gw: Gateway, key: string, input: string) {
  const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
  const res = await fetch(`${gw.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-test", input, stream: true }),
    client,
  });
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = decoder.decode((await reader.read()).value, { stream: true });
  /** The rest of the stream: all of its text once it ends. */
  const rest = async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    client.close();
    return text;
  };
  return { rest };
}

/** The threads (access-log `worker`) that served `account`'s requests so far. */
function workersOf(gw: Gateway, account: string): Set<number> {
  const seen = new Set<number>();
  for (const line of gw.logs) {
    const entry = JSON.parse(line);
    if (entry.msg === "request" && entry.account === account) seen.add(entry.worker);
  }
  return seen;
}

Deno.test("SIGTERM drains both threads: short calls finish, long streams are cut and billed, exit 0", async () => {
  const draining = await startStack({
    workers: 2,
    server: { maxBodyBytes: 65536, drainTimeoutMs: 1000 },
  });
  const gw = draining.gateway;
  try {
    // Enough for every batch below: each long stream holds about 0.12 USD.
    const { key } = await gw.createKey("workers-drain", "--credit", "5", "--rpm", "0");
    // Long streams (about 30 s each, cut after the 1 s drain) until both threads hold some.
    const long: Awaited<ReturnType<typeof openStream>>[] = [];
    for (let batch = 0; batch < 8 && workersOf(gw, "workers-drain").size < 2; batch++) {
      long.push(
        ...await Promise.all(
          Array.from(
            { length: 4 },
            () => openStream(gw, key, "long [[emulate words=1500 delay=20]]"),
          ),
        ),
      );
      await eventually(() => workersOf(gw, "workers-drain").size === 2, 300).catch(() => {});
    }
    assert.deepEqual([...workersOf(gw, "workers-drain")].sort(), [0, 1]);
    // A stream that ends well within the drain time (about 100 ms).
    const short = await openStream(gw, key, "short [[emulate words=10 delay=10]]");

    const started = Date.now();
    const exited = gw.terminate();
    const [shortText, ...longTexts] = await Promise.all([short, ...long].map((s) => s.rest()));
    const status = await exited;
    assert.equal(status.code, 0);
    // Cut at the drain's end, not when the streams would have ended (30 s on).
    assert.ok(Date.now() - started < 15_000, `drained in ${Date.now() - started} ms`);
    assert.match(shortText, /response\.completed/);
    for (const text of longTexts) {
      assert.match(text, /event: error\ndata: .*ended the stream unexpectedly/);
      assert.doesNotMatch(text, /response\.completed/);
    }
    const row = await booksOf(gw, "workers-drain");
    assert.equal(row.settled, long.length + 1, "every call billed once");
    assert.equal(row.open, 0);
    assert.equal(row.held, 0);
    assert.equal(row.credited - row.balance, row.charged);
    const logs = gw.logs.map((l) => JSON.parse(l));
    assert.equal(logs.filter((e) => e.msg === "shutting down").length, 1);
  } finally {
    await draining.stop();
  }
});
