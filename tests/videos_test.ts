/**
 * The asynchronous video API over raw HTTP: a hold at submission, settlement exactly once on the
 * seconds generated (50 concurrent polls included), nothing charged for failed jobs, jobs private
 * to their account, the background poller, and a restart mid-job.
 */
import assert from "node:assert/strict";
import { eventually, startStack, usageOf } from "./helpers/setup.ts";
import type { Gateway } from "./helpers/gateway.ts";
import { ledgerOf, withStore } from "./helpers/store.ts";

/** The poller is slow here, so the polls in these tests are what finish the jobs. */
const stack = await startStack({ videos: { pollIntervalMs: 60_000 } });
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

const PER_SECOND_480P = 50_000_000; // $0.05
const PER_SECOND_720P = 70_000_000; // $0.07

function submit(gw: Gateway, key: string, body: unknown, mode = "generations") {
  return fetch(`${gw.url}/v1/videos/${mode}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

function poll(gw: Gateway, key: string, id: string) {
  return fetch(`${gw.url}/v1/videos/${id}`, { headers: { authorization: `Bearer ${key}` } });
}

async function pollUntilFinished(gw: Gateway, key: string, id: string) {
  // deno-lint-ignore no-explicit-any
  let body: any;
  await eventually(async () => {
    body = await (await poll(gw, key, id)).json();
    return body.status !== "pending";
  });
  return body;
}

Deno.test("a generation holds its requested seconds, then is billed on the seconds generated", async () => {
  const { key } = await gateway.createKey("video-basic", "--credit", "5");
  const res = await submit(gateway, key, {
    model: "video-test",
    prompt: "A paper boat on a rainy street [[emulate ready=400 seconds=6]]",
    duration: 10,
    resolution: "720p",
  });
  assert.equal(res.status, 200);
  const { request_id } = await res.json();
  assert.match(request_id, /^[0-9a-f-]{36}$/);

  const held = await usageOf(gateway, key);
  assert.equal(held.held_nanousd, 10 * PER_SECOND_720P);
  assert.deepEqual(held.held_by_unit, {
    video_seconds: { quantity: 10, held_usd: "0.70", held_nanousd: 10 * PER_SECOND_720P },
  });
  assert.equal(held.spent_nanousd, 0);

  const pending = await (await poll(gateway, key, request_id)).json();
  assert.equal(pending.status, "pending");
  assert.equal(pending.request_id, request_id);
  assert.equal(typeof pending.progress, "number");

  const done = await pollUntilFinished(gateway, key, request_id);
  assert.equal(done.status, "done");
  assert.equal(done.model, "video-test");
  assert.equal(done.video.duration, 6);
  assert.match(done.video.url, /\.mp4$/);
  assert.deepEqual(done.usage, {
    cost_in_usd_ticks: 6 * PER_SECOND_720P * 10,
    video_seconds: 6,
  });

  const usage = await usageOf(gateway, key);
  assert.equal(usage.spent_nanousd, 6 * PER_SECOND_720P);
  assert.equal(usage.balance_nanousd, 5_000_000_000 - 6 * PER_SECOND_720P);
  assert.equal(usage.held_nanousd, 0);
  assert.deepEqual(usage.held_by_unit, {});
  assert.deepEqual(usage.by_unit.video_seconds, {
    quantity: 6,
    spent_usd: "0.42",
    spent_nanousd: 6 * PER_SECOND_720P,
  });
  assert.equal(usage.by_model["video-test"].requests, 1);
});

Deno.test("50 concurrent polls of a finished job settle it exactly once", async () => {
  const { key } = await gateway.createKey("video-concurrent", "--credit", "5");
  const { request_id } = await (await submit(gateway, key, {
    model: "video-test",
    // Ready upstream at once, not yet seen by the gateway (whose own poller waits a minute).
    prompt: "Fifty pollers [[emulate ready=0]]",
  })).json();
  const bodies = await Promise.all(
    Array.from({ length: 50 }, async () => {
      const res = await poll(gateway, key, request_id);
      assert.equal(res.status, 200);
      return await res.json();
    }),
  );
  for (const body of bodies) {
    assert.equal(body.status, "done");
    assert.deepEqual(body.usage, { cost_in_usd_ticks: 8 * PER_SECOND_480P * 10, video_seconds: 8 });
  }
  const usage = await usageOf(gateway, key);
  assert.equal(usage.requests, 1);
  assert.equal(usage.spent_nanousd, 8 * PER_SECOND_480P);
  assert.equal(usage.balance_nanousd, 5_000_000_000 - 8 * PER_SECOND_480P);
  assert.equal(usage.held_nanousd, 0);

  const job = (await withStore(gateway, (store) => store.videoJob(request_id)))!;
  const rows = (await ledgerOf(gateway)).filter((e) => e.id === job.ledgerId);
  assert.deepEqual(rows.map((r) => ({ status: r.status, amount: r.amount })), [{
    status: "settled",
    amount: 8 * PER_SECOND_480P,
  }]);
  const upstreamPolls = (await stack.upstreamRequests()).filter((r) =>
    r.method === "GET" && r.path.startsWith("/xai/v1/videos/")
  );
  assert.ok(
    upstreamPolls.length < 50,
    `concurrent polls share upstream calls (${upstreamPolls.length})`,
  );
});

Deno.test("another account's key gets 404 for a job, exactly as for an unknown id", async () => {
  const { key: owner } = await gateway.createKey("video-owner", "--credit", "5");
  const { key: other } = await gateway.createKey("video-other", "--credit", "5");
  const { request_id } = await (await submit(gateway, owner, {
    model: "video-test",
    prompt: "private",
  })).json();
  const foreign = await poll(gateway, other, request_id);
  assert.equal(foreign.status, 404);
  const unknown = await poll(gateway, other, crypto.randomUUID());
  assert.equal(unknown.status, 404);
  const a = (await foreign.json()).error;
  const b = (await unknown.json()).error;
  assert.equal(a.code, "not_found");
  assert.equal(a.type, b.type);
  assert.ok(!a.message.includes("video-owner"));
  assert.equal((await poll(gateway, owner, request_id)).status, 200);
});

Deno.test("failed, expired and upstream-unknown jobs release their hold and charge nothing", async () => {
  const { key } = await gateway.createKey("video-failed", "--credit", "5");
  const outcomes = [["fail=1", "failed"], ["expire=1", "expired"], ["gone=1", "expired"]];
  for (const [directive, status] of outcomes) {
    const { request_id } = await (await submit(gateway, key, {
      model: "video-test",
      prompt: `doomed [[emulate ready=100 ${directive}]]`,
    })).json();
    const body = await pollUntilFinished(gateway, key, request_id);
    assert.equal(body.status, status);
    assert.equal(typeof body.error.message, "string");
    assert.deepEqual(body.usage, { cost_in_usd_ticks: 0, video_seconds: 0 });
  }
  const usage = await usageOf(gateway, key);
  assert.equal(usage.spent_nanousd, 0);
  assert.equal(usage.held_nanousd, 0);
  assert.equal(usage.balance_nanousd, 5_000_000_000);
  assert.equal(usage.requests, 0);
});

Deno.test("edits hold 9 s at 720p and bill the seconds generated; unsupported fields are 400", async () => {
  const { key } = await gateway.createKey("video-edit", "--credit", "5");
  const bad = await submit(gateway, key, {
    model: "video-test",
    prompt: "make it night",
    video: { url: "https://example.com/in.mp4" },
    duration: 5,
  }, "edits");
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.param, "duration");
  const res = await submit(gateway, key, {
    model: "video-test",
    prompt: "make it night [[emulate ready=100]]",
    video: { url: "https://example.com/in.mp4" },
  }, "edits");
  assert.equal(res.status, 200);
  const { request_id } = await res.json();
  assert.equal((await usageOf(gateway, key)).held_nanousd, 9 * PER_SECOND_720P);
  const done = await pollUntilFinished(gateway, key, request_id);
  assert.equal(done.video.duration, 6);
  assert.equal((await usageOf(gateway, key)).spent_nanousd, 6 * PER_SECOND_720P);
  assert.equal(
    (await stack.upstreamRequests()).find((r) => r.path === "/xai/v1/videos/edits")
      ?.body && true,
    true,
  );
});

Deno.test("video submissions are validated and need the balance for their hold", async () => {
  const { key } = await gateway.createKey("video-poor", "--credit", "0.1");
  const tooLong = await submit(gateway, key, { model: "video-test", prompt: "x", duration: 20 });
  assert.equal(tooLong.status, 400);
  assert.equal((await tooLong.json()).error.param, "duration");
  const noPrompt = await submit(gateway, key, { model: "video-test" });
  assert.equal((await noPrompt.json()).error.param, "prompt");
  const chatModel = await submit(gateway, key, { model: "gpt-test", prompt: "x" });
  assert.equal((await chatModel.json()).error.code, "model_not_supported");
  const poor = await submit(gateway, key, { model: "video-test", prompt: "x", duration: 3 }); // $0.15
  assert.equal(poor.status, 402);
  // A resolution the catalog has no price for is refused, naming the ones it has.
  const unpriced = await submit(gateway, key, {
    model: "video-test",
    prompt: "x",
    duration: 1,
    resolution: "1080p",
  });
  assert.equal(unpriced.status, 400);
  const { error } = await unpriced.json();
  assert.equal(error.param, "resolution");
  assert.match(error.message, /1080p is not offered .* use one of 480p, 720p/);
  const upstreamError = await submit(gateway, key, {
    model: "video-test",
    prompt: "[[emulate status=429]]",
    duration: 1,
  });
  assert.equal(upstreamError.status, 429);
  const usage = await usageOf(gateway, key);
  assert.equal(usage.held_nanousd, 0);
  assert.equal(usage.spent_nanousd, 0);
});

Deno.test("a job unfinished after videos.expireAfterMs is expired and its hold released", async () => {
  const short = await startStack({ videos: { pollIntervalMs: 60_000, expireAfterMs: 1000 } });
  try {
    const { key } = await short.gateway.createKey("video-expire-age", "--credit", "5");
    const { request_id } = await (await submit(short.gateway, key, {
      model: "video-test",
      prompt: "never ready [[emulate ready=60000]]",
    })).json();
    assert.equal((await (await poll(short.gateway, key, request_id)).json()).status, "pending");
    await new Promise((r) => setTimeout(r, 1100));
    const body = await (await poll(short.gateway, key, request_id)).json();
    assert.equal(body.status, "expired");
    assert.deepEqual(body.usage, { cost_in_usd_ticks: 0, video_seconds: 0 });
    const usage = await usageOf(short.gateway, key);
    assert.equal(usage.held_nanousd, 0);
    assert.equal(usage.spent_nanousd, 0);
  } finally {
    await short.stop();
  }
});

Deno.test("the background poller settles jobs nobody polls", async () => {
  const polled = await startStack({ videos: { pollIntervalMs: 100 } });
  try {
    const { key } = await polled.gateway.createKey("video-poller", "--credit", "5");
    await submit(polled.gateway, key, {
      model: "video-test",
      prompt: "[[emulate ready=200]]",
      duration: 2,
    });
    await eventually(async () => (await usageOf(polled.gateway, key)).requests === 1);
    const usage = await usageOf(polled.gateway, key);
    assert.equal(usage.spent_nanousd, 2 * PER_SECOND_480P);
    assert.equal(usage.held_nanousd, 0);
  } finally {
    await polled.stop();
  }
});

Deno.test("a job survives a gateway crash: its hold is kept at restart and settled once after", async () => {
  const config = { videos: { pollIntervalMs: 60_000 } };
  const first = await startStack(config);
  try {
    const { key } = await first.gateway.createKey("video-restart", "--credit", "5");
    const { request_id } = await (await submit(first.gateway, key, {
      model: "video-test",
      prompt: "survive [[emulate ready=700 seconds=4]]",
    })).json();
    await first.gateway.crash();
    const second = await first.restart();
    const recovered = second.logs.map((l) => JSON.parse(l)).find((e) =>
      e.msg === "settled calls left open by an earlier crash"
    );
    assert.equal(recovered, undefined, "the video hold is not an abandoned call");
    assert.equal((await usageOf(second, key)).held_nanousd, 8 * PER_SECOND_480P);
    const done = await pollUntilFinished(second, key, request_id);
    assert.equal(done.status, "done");
    assert.equal(done.usage.video_seconds, 4);
    const usage = await usageOf(second, key);
    assert.equal(usage.spent_nanousd, 4 * PER_SECOND_480P);
    assert.equal(usage.held_nanousd, 0);
    assert.equal(usage.requests, 1);
  } finally {
    await first.stop();
  }
});
