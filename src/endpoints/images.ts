/**
 * `POST /v1/images/generations` (JSON) and `POST /v1/images/edits` (multipart with `image`,
 * `image[]` and `mask`, or JSON with `images[]`), to the OpenAI and xAI image models
 * (`openai-other.md` §3–4, `xai.md` §3). Billed per image returned, at the catalog's price for the
 * size and quality — those of the answer when it states them, else of the request. Multipart
 * bodies are streamed to the upstream: only the part up to the `model` field is read first.
 */
import * as v from "valibot";
import type { Handler, RequestContext } from "../context.ts";
import { readJsonObject } from "../http/body.ts";
import { GatewayError } from "../http/errors.ts";
import {
  boundaryOf,
  continueUpload,
  readMultipartHead,
  uploadTooLarge,
  withField,
} from "../http/multipart.ts";
import { validate } from "../http/validate.ts";
import type { SseEvent } from "../http/sse.ts";
import type { StreamMeter } from "../billing/usage.ts";
import { emptyUsage, imageRate, type Usage } from "../billing/price.ts";
import type { Prices, ResolvedModel } from "../catalog/catalog.ts";
import { passThrough, withUpstreamModel } from "../pipeline/passthrough.ts";
import { resolveModel } from "../pipeline/resolve.ts";
import type { UpstreamCall } from "../providers/index.ts";

const text = v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty"));
const count = v.pipe(
  v.number("must be an integer"),
  v.integer("must be an integer"),
  v.minValue(1, "must be between 1 and 10"),
  v.maxValue(10, "must be between 1 and 10"),
);
const common = {
  model: text,
  prompt: text,
  n: v.optional(v.nullable(count)),
  size: v.optional(v.nullable(v.string("must be a string"))),
  quality: v.optional(v.nullable(v.string("must be a string"))),
  stream: v.optional(v.nullable(v.boolean("must be a boolean"))),
  partial_images: v.optional(v.nullable(v.pipe(
    v.number("must be an integer"),
    v.integer("must be an integer"),
    v.minValue(0, "must be between 0 and 3"),
    v.maxValue(3, "must be between 0 and 3"),
  ))),
};

export const ImageGenerationRequest = v.looseObject(common);
export const ImageEditJsonRequest = v.looseObject({
  ...common,
  images: v.pipe(
    v.array(v.looseObject({}, "must be {image_url} or {file_id}"), "must be an array"),
    v.minLength(1, "must contain at least one image"),
  ),
});

/** What a call needs to know about the request, whichever encoding it came in. */
interface ImageCall {
  mode: "generations" | "edits";
  model: ResolvedModel;
  n: number;
  size?: string;
  quality?: string;
  stream: boolean;
  inputChars: number;
  call: UpstreamCall;
}

/** The model's prices with the per-image rate for `size` and `quality`. */
function pricesFor(model: ResolvedModel, size?: string, quality?: string): Prices | null {
  return model.prices && { ...model.prices, image: imageRate(model.prices, size, quality) };
}

const images = (n: number): Usage => ({ ...emptyUsage(), images: n });

/** Counts `*.completed` events (one per finished image) in an image stream. */
function imageMeter(): StreamMeter {
  let completed = 0;
  return {
    onEvent(e: SseEvent) {
      if (e.event.endsWith(".completed")) completed++;
    },
    usage: () => completed ? images(completed) : null,
    outputEvents: () => completed,
  };
}

function run(ctx: RequestContext, c: ImageCall): Promise<Response> {
  const model = { ...c.model, prices: pricesFor(c.model, c.size, c.quality) };
  return passThrough({
    ctx,
    format: "openai",
    endpoint: `images.${c.mode}`,
    model,
    inputChars: c.inputChars,
    units: { reserve: images(c.n), estimate: images(c.n) },
    stream: c.stream,
    call: c.call,
    usageFromJson: (json) => {
      const data = (json as { data?: unknown }).data;
      return images(Array.isArray(data) ? data.length : 0);
    },
    pricesFromJson: (json) => {
      const answer = json as { size?: unknown; quality?: unknown };
      return pricesFor(
        c.model,
        typeof answer.size === "string" ? answer.size : c.size,
        typeof answer.quality === "string" ? answer.quality : c.quality,
      );
    },
    meter: imageMeter,
  });
}

async function fromJson(ctx: RequestContext, mode: ImageCall["mode"]): Promise<Response> {
  const body = await readJsonObject(ctx.req, ctx.services.config.maxBodyBytes);
  const request = validate(
    mode === "generations" ? ImageGenerationRequest : ImageEditJsonRequest,
    body.value,
  );
  const model = resolveModel(ctx, request.model, "images");
  return await run(ctx, {
    mode,
    model,
    n: request.n ?? 1,
    size: request.size ?? undefined,
    quality: request.quality ?? undefined,
    stream: request.stream === true,
    inputChars: body.text.length,
    call: { path: `/images/${mode}`, body: withUpstreamModel(body, model) },
  });
}

export const createImage: Handler = (ctx) => fromJson(ctx, "generations");

/** Edits: multipart (streamed) or JSON. */
export const editImage: Handler = async (ctx) => {
  const contentType = ctx.req.headers.get("content-type") ?? "";
  const boundary = boundaryOf(contentType);
  if (!boundary) {
    if (/^multipart\//i.test(contentType)) {
      throw new GatewayError(400, "multipart/form-data needs a boundary parameter");
    }
    return await fromJson(ctx, "edits");
  }
  const limit = ctx.services.config.maxUploadBytes;
  if (Number(ctx.req.headers.get("content-length") ?? 0) > limit) throw uploadTooLarge(limit);
  if (!ctx.req.body) throw new GatewayError(400, "The request has no body", { param: "image" });
  const head = await readMultipartHead(ctx.req.body, boundary, "model", limit);
  const f = head.fields;
  if (!f.model) {
    throw new GatewayError(400, "Missing required parameter: 'model'.", { param: "model" });
  }
  const model = resolveModel(ctx, f.model, "images");
  const n = f.n === undefined ? 1 : Number(f.n);
  if (!Number.isInteger(n) || n < 1 || n > 10) {
    throw new GatewayError(400, "n: must be between 1 and 10", { param: "n" });
  }
  const upload = continueUpload(
    { ...head, prefix: withField(head.prefix, head.scanner.parts, "model", model.upstreamId) },
    limit,
  );
  try {
    return await run(ctx, {
      mode: "edits",
      model,
      n,
      size: f.size,
      quality: f.quality,
      stream: f.stream === "true",
      inputChars: 0,
      call: {
        path: "/images/edits",
        body: upload.stream,
        headers: { "content-type": contentType },
      },
    });
  } catch (error) {
    if (upload.exceeded) throw uploadTooLarge(limit);
    throw error;
  }
};
