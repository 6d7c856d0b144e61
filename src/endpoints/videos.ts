/**
 * The xAI-shaped asynchronous video API (`xai.md` §2): `POST /v1/videos/generations` and
 * `/v1/videos/edits` hold funds for the requested seconds and answer `{request_id}`;
 * `GET /v1/videos/{request_id}` polls the job — visible only to the account that created it —
 * and settles it exactly once when it is done (see `pipeline/video_jobs.ts`).
 */
import * as v from "valibot";
import { callRoute, type Handler, type RequestContext } from "../context.ts";
import { type JsonBody, readJsonObject } from "../http/body.ts";
import { GatewayError } from "../http/errors.ts";
import { jsonResponse } from "../http/json.ts";
import { validate } from "../http/validate.ts";
import { openBill } from "../billing/ledger.ts";
import { emptyUsage, price, videoSecondRate } from "../billing/price.ts";
import { withUpstreamModel } from "../http/forwarded_body.ts";
import { sendHeld } from "../pipeline/route.ts";
import { resolveModel } from "../pipeline/resolve.ts";
import { scopeOf } from "../pipeline/hold.ts";
import { refreshJob, renderVideo } from "../pipeline/video_jobs.ts";

const ASPECT_RATIOS = ["1:1", "16:9", "9:16", "4:3", "3:4", "3:2", "2:3"];
const text = v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty"));
const media = v.looseObject({ url: text }, "must be an object with a url");

export const VideoGenerationRequest = v.looseObject({
  model: text,
  prompt: text,
  duration: v.optional(v.pipe(
    v.number("must be an integer"),
    v.integer("must be an integer"),
    v.minValue(1, "must be between 1 and 15"),
    v.maxValue(15, "must be between 1 and 15"),
  )),
  aspect_ratio: v.optional(v.picklist(ASPECT_RATIOS, `must be one of ${ASPECT_RATIOS.join(", ")}`)),
  resolution: v.optional(v.picklist(["480p", "720p", "1080p"], "must be 480p, 720p or 1080p")),
  image: v.optional(media),
  reference_images: v.optional(v.array(media, "must be an array of {url} objects")),
});

export const VideoEditRequest = v.looseObject({ model: text, prompt: text, video: media });

/** Generation defaults (billed like explicit values): 8 seconds at 480p. */
const DEFAULT_SECONDS = 8;
const DEFAULT_RESOLUTION = "480p";
/** Edits keep the input's length (at most 8.7 s) and resolution (capped at 720p). */
const EDIT_HELD_SECONDS = 9;
const EDIT_RESOLUTION = "720p";

function submit(mode: "generations" | "edits"): Handler {
  return async (ctx) => {
    const body = await readJsonObject(ctx.req, ctx.services.config);
    let seconds = EDIT_HELD_SECONDS;
    let resolution = EDIT_RESOLUTION;
    if (mode === "generations") {
      const request = validate(VideoGenerationRequest, body.value);
      seconds = request.duration ?? DEFAULT_SECONDS;
      resolution = request.resolution ?? DEFAULT_RESOLUTION;
    } else {
      validate(VideoEditRequest, body.value);
      for (const field of ["duration", "aspect_ratio", "resolution"]) {
        if (field in body.value) {
          throw new GatewayError(
            400,
            `${field} is not supported for video edits: the output keeps the input video's length, aspect ratio and resolution.`,
            { param: field, code: "unsupported_parameter" },
          );
        }
      }
    }
    return await createJob(ctx, mode, body, seconds, resolution);
  };
}

async function createJob(
  ctx: RequestContext,
  mode: "generations" | "edits",
  body: JsonBody,
  seconds: number,
  resolution: string,
): Promise<Response> {
  const { store } = ctx.services;
  const principal = ctx.principal!;
  const model = resolveModel(ctx, body.value.model as string, "videos"); // validated by the schema
  const rate = model.prices ? videoSecondRate(model.prices, resolution) : 0;
  if (rate === null) {
    const allowed = [...model.prices!.videoSecondBy.keys()].join(", ");
    throw new GatewayError(
      400,
      `Invalid 'resolution': ${resolution} is not offered for \`${model.id}\` on this gateway; use one of ${allowed}.`,
      { param: "resolution", code: "unsupported_value" },
    );
  }
  const held = { ...emptyUsage(), videoSeconds: seconds };
  const priced = { ...model, prices: model.prices && { ...model.prices, videoSecond: rate } };
  const bill = await openBill(store, {
    scope: scopeOf(ctx),
    now: ctx.now,
    zone: ctx.services.config.budgetTimeZone,
    principal,
    requestId: ctx.requestId,
    endpoint: `videos.${mode}`,
    model: priced,
    reserve: price(held, priced.prices).amount,
    estimate: held,
  });
  const sent = await sendHeld(
    ctx,
    bill,
    model,
    { path: `/videos/${mode}`, body: withUpstreamModel(body, model) },
    "openai",
  );
  if (!sent.ok) return sent.response;
  const answer = await sent.upstream.json().catch(() => null) as { request_id?: unknown } | null;
  if (typeof answer?.request_id !== "string") {
    await bill.release();
    throw new GatewayError(502, "The upstream accepted the video job but sent no request_id.");
  }
  const id = crypto.randomUUID();
  await store.insertVideoJob({
    id,
    upstreamId: answer.request_id,
    accountId: principal.accountId,
    keyId: principal.keyId,
    ledgerId: bill.id,
    model: model.id,
    provider: model.provider.name,
    upstreamKey: callRoute(ctx).keyUsed ?? null,
    rate,
    heldSeconds: seconds,
    status: "pending",
    billedSeconds: null,
    amount: null,
    result: null,
    createdAt: Date.now(),
    finishedAt: null,
  });
  // From here the job holds the funds: the poller settles or releases them.
  bill.toJob();
  ctx.log.video_job = id;
  return jsonResponse({ request_id: id });
}

export const createVideoGeneration: Handler = submit("generations");
export const createVideoEdit: Handler = submit("edits");

/** `GET /v1/videos/{request_id}`: another account's job is indistinguishable from none (404). */
export const getVideo: Handler = async (ctx) => {
  const id = ctx.params.request_id;
  if (id.length > 256) {
    throw new GatewayError(400, "Invalid 'request_id': must be at most 256 characters.", {
      param: "request_id",
    });
  }
  const job = await ctx.services.store.videoJob(id);
  if (!job || job.accountId !== ctx.principal!.accountId) {
    throw new GatewayError(404, `No video job found with request_id ${id}.`, {
      code: "not_found",
      param: "request_id",
    });
  }
  ctx.log.model = job.model;
  const view = await refreshJob(ctx.services, job);
  return jsonResponse(renderVideo(view.job, view.pendingBody));
};
