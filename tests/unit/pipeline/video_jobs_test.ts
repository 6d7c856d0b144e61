import assert from "node:assert/strict";
import { readVideoState, renderVideo, videoCharge } from "../../../src/pipeline/video_jobs.ts";
import type { VideoJob } from "../../../src/store/store.ts";

Deno.test("poll bodies: done (also without status when a url is there), terminal failures, pending", () => {
  assert.deepEqual(
    readVideoState({ status: "done", video: { url: "u", duration: 6 } }),
    { status: "done", seconds: 6 },
  );
  assert.deepEqual(readVideoState({ video: { url: "u", duration: 4.2 } }), {
    status: "done",
    seconds: 5,
  });
  assert.deepEqual(readVideoState({ status: "done", video: {} }), {
    status: "done",
    seconds: null,
  });
  assert.deepEqual(readVideoState({ status: "failed" }), { status: "failed" });
  assert.deepEqual(readVideoState({ status: "expired" }), { status: "expired" });
  assert.deepEqual(readVideoState({ status: "pending", progress: 40 }), { status: "pending" });
  assert.deepEqual(readVideoState({ request_id: "x" }), { status: "pending" });
  assert.deepEqual(readVideoState(null), { status: "pending" });
});

Deno.test("the client's body carries our id, model and charge, never the upstream's cost", () => {
  const job: VideoJob = {
    id: "job-1",
    upstreamId: "up-1",
    accountId: 1,
    keyId: "k",
    ledgerId: 7,
    model: "video-test",
    provider: "xai",
    rate: 70_000_000,
    heldSeconds: 8,
    status: "done",
    billedSeconds: 6,
    amount: 420_000_000,
    result: JSON.stringify({
      status: "done",
      model: "grok-imagine-video",
      video: { url: "u", duration: 6 },
      usage: { cost_in_usd_ticks: 1 },
    }),
    createdAt: 0,
    finishedAt: 1,
  };
  assert.deepEqual(renderVideo(job), {
    request_id: "job-1",
    status: "done",
    model: "video-test",
    video: { url: "u", duration: 6 },
    usage: { cost_in_usd_ticks: 4_200_000_000, video_seconds: 6 },
  });
  const failed = renderVideo({
    ...job,
    status: "failed",
    amount: null,
    billedSeconds: null,
    result: "{}",
  });
  assert.deepEqual(failed.usage, { cost_in_usd_ticks: 0, video_seconds: 0 });
  assert.equal(typeof (failed.error as { message: string }).message, "string");
  const pending = renderVideo(
    { ...job, status: "pending", result: null },
    '{"status":"pending","progress":30}',
  );
  assert.deepEqual(pending, {
    request_id: "job-1",
    status: "pending",
    progress: 30,
    model: "video-test",
  });
});

Deno.test("a video charge is seconds times the rate, one unit line", () => {
  assert.deepEqual(videoCharge(6, 70_000_000), {
    units: [{ unit: "video_seconds", quantity: 6, amount: 420_000_000 }],
    amount: 420_000_000,
    estimated: false,
  });
});
