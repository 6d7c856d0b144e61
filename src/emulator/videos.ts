/**
 * Emulated xAI video API (`xai.md` §2): `POST /v1/videos/generations|edits` answer
 * `{request_id}` at once; `GET /v1/videos/{request_id}` reports `{status:"pending", progress}`
 * until the job is ready, then `done` with `video.{url, duration, respect_moderation}` and
 * `usage.cost_in_usd_ticks` — or `failed`/`expired` with an `error` when the prompt asks for it.
 * Jobs live in memory and move through their states over time (default 600 ms, `ready=MS`).
 */
import { openaiError, openaiFault } from "./openai.ts";
import { type Directives, directives } from "./text.ts";

type Json = Record<string, unknown>;

interface Job {
  model: string;
  createdAt: number;
  readyAfterMs: number;
  seconds: number;
  resolution: string;
  d: Directives;
}

const jobs = new Map<string, Job>();

/** xAI list prices per second in USD ticks (1 USD = 10^10 ticks). */
const TICKS_PER_SECOND: Record<string, number> = { "480p": 500_000_000, "720p": 700_000_000 };
/** The length of the (emulated) input video of an edit. */
const EDIT_INPUT_SECONDS = 6;

/** `POST /v1/videos/generations` and `/v1/videos/edits`. */
export async function createVideo(req: Request, mode: "generations" | "edits"): Promise<Response> {
  const body = await req.json() as Json;
  const prompt = typeof body.prompt === "string" ? body.prompt : "";
  const d = directives([prompt]);
  const fault = openaiFault(d);
  if (fault) return fault;
  if (typeof body.model !== "string") return openaiError(400, "Missing required field: model");
  if (!prompt) return openaiError(400, "Missing required field: prompt");
  if (mode === "edits" && typeof (body.video as Json | undefined)?.url !== "string") {
    return openaiError(400, "Missing required field: video.url");
  }
  const duration = typeof body.duration === "number" ? body.duration : 8;
  if (mode === "generations" && (duration < 1 || duration > 15 || !Number.isInteger(duration))) {
    return openaiError(400, "duration must be an integer between 1 and 15");
  }
  const id = crypto.randomUUID();
  jobs.set(id, {
    model: body.model,
    createdAt: Date.now(),
    readyAfterMs: d.ready ?? 600,
    seconds: d.seconds ?? (mode === "edits" ? EDIT_INPUT_SECONDS : duration),
    resolution: mode === "edits" ? "720p" : String(body.resolution ?? "480p"),
    d,
  });
  return Response.json({ request_id: id });
}

/** `GET /v1/videos/{request_id}`. */
export function getVideo(id: string): Response {
  const job = jobs.get(id);
  const elapsed = job ? Date.now() - job.createdAt : 0;
  if (!job || (job.d.gone && elapsed >= job.readyAfterMs)) {
    return openaiError(404, `No video generation request found with id ${id}`);
  }
  if (elapsed < job.readyAfterMs) {
    return Response.json({
      status: "pending",
      progress: Math.floor((elapsed / job.readyAfterMs) * 100),
    });
  }
  if (job.d.fail) {
    return Response.json({
      status: "failed",
      model: job.model,
      error: { code: "generation_failed", message: "The video could not be generated (emulated)." },
    });
  }
  if (job.d.expire) {
    return Response.json({
      status: "expired",
      model: job.model,
      error: { code: "expired", message: "The video generation request expired (emulated)." },
    });
  }
  return Response.json({
    status: "done",
    model: job.model,
    video: {
      url: `https://vidgen.x.ai/xai-vidgen-bucket/xai-video-${id}.mp4`,
      duration: job.seconds,
      respect_moderation: true,
    },
    progress: 100,
    usage: { cost_in_usd_ticks: job.seconds * (TICKS_PER_SECOND[job.resolution] ?? 500_000_000) },
  });
}
