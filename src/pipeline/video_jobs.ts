/**
 * Asynchronous video jobs after submission: asking the upstream how a job is doing, finishing it
 * exactly once (settled on the seconds actually generated, or released when it failed or
 * expired), the body the client sees, and the background poller that finishes jobs nobody polls.
 */
import { budgetWindows } from "../billing/windows.ts";
import { boardOf, type Services } from "../context.ts";
import { CallRoute } from "../routing/attempts.ts";
import type { Charge, VideoJob } from "../store/store.ts";
import { upstreamDeadlines } from "../providers/index.ts";
import { send } from "../routing/send.ts";
import { log } from "../log.ts";

type Json = Record<string, unknown>;

const obj = (value: unknown): Json =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as Json : {};

/** What an upstream poll body says about a job. */
export type UpstreamVideoState =
  | { status: "pending" }
  | { status: "done"; seconds: number | null }
  | { status: "failed" | "expired" };

/**
 * Reads an xAI poll body (`xai.md` §2.2): `done` with `video.duration` seconds; a body without
 * `status` but with a `video.url` counts as done; `failed`/`expired` are terminal; anything else
 * is still pending. Pure.
 */
export function readVideoState(body: unknown): UpstreamVideoState {
  const b = obj(body);
  const video = obj(b.video);
  if (b.status === "done" || (b.status === undefined && typeof video.url === "string")) {
    const seconds = typeof video.duration === "number" && video.duration > 0
      ? Math.ceil(video.duration)
      : null;
    return { status: "done", seconds };
  }
  if (b.status === "failed" || b.status === "expired") return { status: b.status };
  return { status: "pending" };
}

/** The charge for `seconds` of video at `rate` nanoUSD per second. Pure. */
export function videoCharge(seconds: number, rate: number): Charge {
  const amount = seconds * rate;
  return {
    units: [{ unit: "video_seconds", quantity: seconds, amount }],
    amount,
    estimated: false,
  };
}

/** 1 USD = 10^10 ticks (xAI's `cost_in_usd_ticks`); 1 USD = 10^9 nanoUSD. */
const TICKS_PER_NANOUSD = 10;

/**
 * The body a client sees for a job: the upstream's answer with our `request_id` and model id,
 * and `usage` replaced by what Switchyard charged (`cost_in_usd_ticks` and `video_seconds`), so
 * the upstream's own cost never leaks. Pure.
 */
export function renderVideo(job: VideoJob, upstreamBody?: string): Json {
  let upstream: Json = {};
  try {
    upstream = obj(JSON.parse(job.result ?? upstreamBody ?? "{}"));
  } catch { /* an unreadable body: our own fields below */ }
  const { usage: _upstreamCost, ...rest } = upstream;
  const body: Json = { ...rest, request_id: job.id, status: job.status, model: job.model };
  if (job.status === "done") {
    body.usage = {
      cost_in_usd_ticks: (job.amount ?? 0) * TICKS_PER_NANOUSD,
      video_seconds: job.billedSeconds ?? 0,
    };
  } else if (job.status !== "pending") {
    body.usage = { cost_in_usd_ticks: 0, video_seconds: 0 };
    body.error ??= {
      code: job.status,
      message: `The video job ${job.status}; nothing was charged.`,
    };
  }
  return body;
}

/** A job as last seen, with the upstream's latest pending body (progress) if there is one. */
export interface JobView {
  job: VideoJob;
  pendingBody?: string;
}

const inFlight = new Map<string, Promise<JobView>>();

/**
 * Brings a pending job up to date with its upstream. Concurrent calls for one job share a single
 * upstream poll; finishing is exactly-once in the store whatever the number of pollers (or
 * gateway processes).
 */
export function refreshJob(services: Services, job: VideoJob): Promise<JobView> {
  if (job.status !== "pending") return Promise.resolve({ job });
  let view = inFlight.get(job.id);
  if (!view) {
    view = pollUpstream(services, job).finally(() => inFlight.delete(job.id));
    inFlight.set(job.id, view);
  }
  return view;
}

async function pollUpstream(services: Services, job: VideoJob): Promise<JobView> {
  const { config, store } = services;
  /** The budgets' windows a finished job's charge counts in. */
  const windowsNow = () => budgetWindows(Date.now(), config.budgetTimeZone);
  const expired = Date.now() - job.createdAt > config.videoExpireAfterMs;
  const expire = async (result: string) => {
    await store.finishVideoJob(job.id, { status: "expired", result }, windowsNow());
    return { job: (await store.videoJob(job.id))! };
  };
  const expiredBody = JSON.stringify({
    status: "expired",
    error: {
      code: "expired",
      message: "The video job did not finish in time; nothing was charged.",
    },
  });
  const provider = config.catalog.provider(job.provider);
  let response: Response | undefined;
  if (provider?.enabled) {
    response = await send(
      provider,
      {
        method: "GET",
        path: `/videos/${encodeURIComponent(job.upstreamId)}`,
        ...(job.upstreamKey ? { key: job.upstreamKey } : {}),
      },
      new AbortController(),
      upstreamDeadlines(config),
      new CallRoute(config.routing, boardOf(services)),
    ).catch(() => undefined);
  }
  if (!response || (!response.ok && response.status !== 404)) {
    // Unreachable or failing upstream: the job stays pending unless it is past its age limit.
    await response?.body?.cancel();
    return expired ? await expire(expiredBody) : { job };
  }
  const text = await response.text();
  if (response.status === 404) return await expire(text);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return expired ? await expire(expiredBody) : { job };
  }
  const state = readVideoState(body);
  if (state.status === "pending") {
    return expired ? await expire(expiredBody) : { job, pendingBody: text };
  }
  if (state.status === "done") {
    // Never more than was held (and asked for): a longer report is the upstream's fault.
    const reported = state.seconds;
    if (reported !== null && reported > job.heldSeconds) {
      log("warn", "upstream reported more video seconds than were held: charged the hold", {
        video_job: job.id,
        provider: job.provider,
        reported,
        held: job.heldSeconds,
      });
    }
    const seconds = reported === null || reported > job.heldSeconds ? job.heldSeconds : reported;
    await store.finishVideoJob(job.id, {
      status: "done",
      billedSeconds: seconds,
      charge: videoCharge(seconds, job.rate),
      result: text,
    }, windowsNow());
  } else {
    await store.finishVideoJob(job.id, { status: state.status, result: text }, windowsNow());
  }
  return { job: (await store.videoJob(job.id))! };
}

/** A running background poller. */
export interface VideoPoller {
  stop(): void;
}

/** How many jobs one poller round checks at once. */
const CONCURRENCY = 8;

/** Every `videoPollIntervalMs`, checks the unfinished jobs (oldest first), a few at a time. */
export function startVideoPoller(services: Services): VideoPoller {
  let running = false;
  const timer = setInterval(async () => {
    if (running) return;
    running = true;
    try {
      // On a store several hosts share, one of them polls (see `Store.leading`).
      if (services.store.leading && !(await services.store.leading())) return;
      const jobs = await services.store.pendingVideoJobs(200);
      for (let i = 0; i < jobs.length; i += CONCURRENCY) {
        await Promise.all(
          jobs.slice(i, i + CONCURRENCY).map((job) =>
            refreshJob(services, job).catch((error) =>
              log("error", "video poll failed", { job: job.id, error: String(error) })
            )
          ),
        );
      }
    } catch (error) {
      log("error", "video poller failed", { error: String(error) });
    } finally {
      running = false;
    }
  }, services.config.videoPollIntervalMs);
  return { stop: () => clearInterval(timer) };
}
