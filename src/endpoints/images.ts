/**
 * `POST /v1/images/generations` (JSON) and `POST /v1/images/edits` (multipart with `image`,
 * `image[]` and `mask`, or JSON with `images[]`), to the OpenAI and xAI image models
 * (`openai-other.md` §3–4, `xai.md` §3). Billed per image returned, at the catalog's price for the
 * size and quality the answer states (each `*.completed` event on a stream), else those asked for.
 * The hold covers the dearest variant the request allows (`quality: auto` may come back `high`).
 *
 * Multipart bodies are spooled to a temporary file under the data directory while their fields
 * are read — all of them, wherever they stand — so the price never depends on field order; the
 * body then streams to the upstream from the file with `model` rewritten. A key without balance is
 * refused before the body is accepted.
 */
import * as v from "valibot";
import type { Handler, RequestContext } from "../context.ts";
import { readJsonObject } from "../http/body.ts";
import { GatewayError } from "../http/errors.ts";
import { boundaryOf, spoolMultipart, uploadTooLarge } from "../http/multipart.ts";
import { validate } from "../http/validate.ts";
import type { SseEvent } from "../http/sse.ts";
import { encodeSse } from "../http/sse.ts";
import { count as usageCount, type StreamMeter } from "../billing/usage.ts";
import { emptyUsage, imageRate, type Usage } from "../billing/price.ts";
import { estimateInput } from "../billing/estimate.ts";
import { insufficientBalance } from "../billing/ledger.ts";
import type { Prices, ResolvedModel } from "../catalog/catalog.ts";
import type { Call } from "../pipeline/call.ts";
import { passThrough, routeCall } from "../pipeline/route.ts";
import { withUpstreamModel } from "../http/forwarded_body.ts";
import { reaches, resolveModel } from "../pipeline/resolve.ts";
import type { UpstreamCall } from "../providers/index.ts";

const text = v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty"));
const count = v.pipe(
  v.number("must be an integer"),
  v.integer("must be an integer"),
  v.minValue(1, "must be between 1 and 10"),
  v.maxValue(10, "must be between 1 and 10"),
);
const variant = v.pipe(
  v.string("must be a string"),
  v.maxLength(64, "must be at most 64 characters"),
);
const common = {
  model: text,
  prompt: text,
  n: v.optional(v.nullable(count)),
  size: v.optional(v.nullable(variant)),
  quality: v.optional(v.nullable(variant)),
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
  /** Input tokens: the prompt's (typical and bound) and the input images' bound. */
  input: { typical: number; bound: number; images: number };
  call: UpstreamCall;
}

/** Input tokens held per input image (high input fidelity costs thousands). */
const IMAGE_INPUT_TOKENS = 6_000;

/** Sizes and qualities that leave the choice to the upstream. */
const CHOSEN_UPSTREAM = new Set(["auto", ""]);

/**
 * The per-image price to hold for a request: the variant's own price when size and quality are
 * both given, else the dearest price the catalog has for what the upstream may choose.
 */
function holdRate(prices: Prices, size?: string, quality?: string): number | null {
  const sized = size !== undefined && !CHOSEN_UPSTREAM.has(size);
  const qualified = quality !== undefined && !CHOSEN_UPSTREAM.has(quality);
  if (sized && qualified) return imageRate(prices, size, quality);
  let rate = prices.image;
  for (const [key, value] of prices.imageBy) {
    const [keySize, keyQuality] = key.includes("/") ? key.split("/") : [key, key];
    if ((!sized || keySize === size || key === quality) && (!qualified || keyQuality === quality)) {
      rate = Math.max(rate, value);
    }
  }
  return rate || null;
}

/** The model's prices with `rate` as the per-image price. */
function withImageRate(prices: Prices, rate: number): Prices {
  return { ...prices, image: rate };
}

/** Prices for what an answer states it delivered, falling back to what was held. */
function deliveredPrices(
  c: ImageCall,
  held: number,
  size?: unknown,
  quality?: unknown,
): Prices | null {
  const prices = c.model.prices;
  if (!prices) return null;
  const s = typeof size === "string" ? size : c.size;
  const q = typeof quality === "string" ? quality : c.quality;
  const stated = s !== undefined && q !== undefined && !CHOSEN_UPSTREAM.has(s) &&
    !CHOSEN_UPSTREAM.has(q);
  return withImageRate(prices, (stated ? imageRate(prices, s, q) : null) ?? held);
}

const images = (n: number): Usage => ({ ...emptyUsage(), images: n });

/**
 * The images and the input tokens an answer's `usage` reports (GPT image models): text tokens at
 * the input rate, image tokens at the image-input rate.
 */
function imageUsage(n: number, usage: unknown): Usage {
  const u = (usage ?? {}) as Record<string, unknown>;
  const details = (u.input_tokens_details ?? {}) as Record<string, unknown>;
  const imageTokens = usageCount(details.image_tokens);
  const textTokens = details.text_tokens !== undefined
    ? usageCount(details.text_tokens)
    : Math.max(0, usageCount(u.input_tokens) - imageTokens);
  return { ...images(n), inputTokens: textTokens, imageInputTokens: imageTokens };
}

/**
 * Counts `*.completed` events (one per finished image), keeps the size and quality stated, and
 * the input tokens (each event repeats the request's: the first one counts).
 */
function imageMeter(n: number): StreamMeter & { stated: { size?: unknown; quality?: unknown } } {
  let completed = 0;
  let input: unknown;
  const stated: { size?: unknown; quality?: unknown } = {};
  return {
    stated,
    onEvent(e: SseEvent) {
      if (!e.event.endsWith(".completed")) return;
      completed++;
      try {
        const data = JSON.parse(e.data());
        stated.size ??= data.size;
        stated.quality ??= data.quality;
        input ??= data.usage;
      } catch { /* counted, priced as held */ }
    },
    usage: () => completed ? imageUsage(completed, input) : null,
    complete: () => completed >= n,
    finished: () => completed >= n,
    outputBytes: () => 0,
    objects: () => [],
  };
}

/** The error event for an image stream the upstream cut (openai-node throws on it). */
function imageStreamError(): Uint8Array {
  const error = {
    type: "error",
    error: {
      type: "server_error",
      code: "upstream_error",
      message: "The upstream provider ended the stream unexpectedly.",
      param: null,
    },
  };
  return new TextEncoder().encode(encodeSse(JSON.stringify(error), "error"));
}

/** The call of an image request as `c.model`'s deployment takes it (400 for an unpriced size). */
function imageCall(ctx: RequestContext, c: ImageCall): Call {
  const prices = c.model.prices;
  const held = prices ? holdRate(prices, c.size, c.quality) : 0;
  if (held === null) {
    throw new GatewayError(
      400,
      `Invalid 'size': no price is set for \`${c.model.id}\` images of size ${c.size} and quality ${c.quality}.`,
      { param: "size", code: "unsupported_value" },
    );
  }
  const model = { ...c.model, prices: prices && withImageRate(prices, held) };
  return {
    ctx,
    format: "openai",
    endpoint: `images.${c.mode}`,
    model,
    units: { ...images(c.n), inputTokens: c.input.typical },
    // Input tokens at the image-input rate, the dearer one: the hold covers either kind.
    unitsHold: { ...images(c.n), imageInputTokens: c.input.bound + c.input.images },
    stream: c.stream,
    call: () => c.call,
    usageFromJson: (json) => {
      const answer = json as { data?: unknown; usage?: unknown };
      return imageUsage(Array.isArray(answer.data) ? answer.data.length : 0, answer.usage);
    },
    pricesFromJson: (json) => {
      const answer = json as { size?: unknown; quality?: unknown };
      return deliveredPrices(c, held, answer.size, answer.quality);
    },
    meter: () => imageMeter(c.n),
    pricesFromMeter: (meter) => {
      const { stated } = meter as ReturnType<typeof imageMeter>;
      return deliveredPrices(c, held, stated.size, stated.quality);
    },
    errorTail: imageStreamError,
  };
}

async function fromJson(ctx: RequestContext, mode: ImageCall["mode"]): Promise<Response> {
  const body = await readJsonObject(ctx.req, ctx.services.config);
  const request = validate(
    mode === "generations" ? ImageGenerationRequest : ImageEditJsonRequest,
    body.value,
  );
  const model = resolveModel(ctx, request.model, "images");
  // Each deployment (or fallback) the router tries gets the call at its own id and prices.
  const build = (m: ResolvedModel) =>
    imageCall(ctx, {
      mode,
      model: m,
      n: request.n ?? 1,
      size: request.size ?? undefined,
      quality: request.quality ?? undefined,
      stream: request.stream === true,
      input: { ...estimateInput(body.value), images: 0 },
      call: { path: `/images/${mode}`, body: withUpstreamModel(body, m) },
    });
  return await routeCall(ctx, model, build, true, undefined, reaches("images"));
}

export const createImage: Handler = (ctx) => fromJson(ctx, "generations");

/** Text fields that decide the model or the price: each may appear once. */
const ONCE = ["model", "n", "size", "quality", "stream", "partial_images"];
/** Largest text field of a multipart edit (prompts are at most 32,000 characters). */
const MAX_FIELD_BYTES = 256 * 1024;

/** Edits: multipart (spooled, all fields read) or JSON. */
export const editImage: Handler = async (ctx) => {
  const contentType = ctx.req.headers.get("content-type") ?? "";
  const boundary = boundaryOf(contentType);
  if (!boundary) {
    if (/^multipart\//i.test(contentType)) {
      throw new GatewayError(400, "multipart/form-data needs a boundary parameter");
    }
    return await fromJson(ctx, "edits");
  }
  const { config, store } = ctx.services;
  const limit = config.maxUploadBytes;
  if (Number(ctx.req.headers.get("content-length") ?? 0) > limit) throw uploadTooLarge(limit);
  if (!ctx.req.body) throw new GatewayError(400, "The request has no body", { param: "image" });
  // No upload is accepted for an account that could not pay for any image (unless some image
  // model is free: which one is asked for is only known once the body is read).
  const principal = ctx.principal!;
  if ((await store.available(principal.accountId)) <= 0 && !config.catalog.hasFree("image")) {
    throw insufficientBalance(principal, 1);
  }
  const form = await spoolMultipart(ctx.req.body, boundary, {
    dir: config.spoolDir,
    limit,
    maxFieldBytes: MAX_FIELD_BYTES,
    signal: AbortSignal.timeout(config.uploadTimeoutMs),
  });
  try {
    for (const name of ONCE) {
      if (form.files.has(name)) {
        throw new GatewayError(400, `The field '${name}' must be a text field, not a file.`, {
          param: name,
        });
      }
    }
    const fields = new Map<string, string>();
    for (const field of form.fields) {
      if (ONCE.includes(field.name) && fields.has(field.name)) {
        throw new GatewayError(400, `The field '${field.name}' is given more than once.`, {
          param: field.name,
        });
      }
      if (!fields.has(field.name)) fields.set(field.name, field.value);
    }
    const id = fields.get("model");
    if (!id) {
      throw new GatewayError(400, "Missing required parameter: 'model'.", { param: "model" });
    }
    const model = resolveModel(ctx, id, "images");
    const n = fields.has("n") ? Number(fields.get("n")) : 1;
    if (!Number.isInteger(n) || n < 1 || n > 10) {
      throw new GatewayError(400, "Invalid 'n': must be between 1 and 10", { param: "n" });
    }
    const modelIndex = form.fields.findIndex((field) => field.name === "model");
    const upload = form.open(new Map([[modelIndex, model.upstreamId]]));
    const prompt = estimateInput(fields.get("prompt") ?? "");
    const files = [...form.files.values()].reduce((sum, count) => sum + count, 0);
    return await passThrough(imageCall(ctx, {
      mode: "edits",
      model,
      n,
      size: fields.get("size"),
      quality: fields.get("quality"),
      stream: fields.get("stream") === "true",
      input: { ...prompt, images: files * IMAGE_INPUT_TOKENS },
      call: {
        path: "/images/edits",
        body: upload.body,
        headers: { "content-type": contentType },
      },
    }));
  } finally {
    await form.remove();
  }
};
