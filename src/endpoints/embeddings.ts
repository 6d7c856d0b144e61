/**
 * `POST /v1/embeddings` (`openai-other.md` §2): passed through to the OpenAI upstream and billed
 * per input token (`usage.prompt_tokens`). `float` and `base64` encodings come back as the
 * upstream sent them.
 */
import * as v from "valibot";
import type { Handler } from "../context.ts";
import { readJsonObject } from "../http/body.ts";
import { validate } from "../http/validate.ts";
import { openaiUsage } from "../billing/usage.ts";
import { estimateInput } from "../billing/estimate.ts";
import type { Call } from "../pipeline/call.ts";
import { routeCall } from "../pipeline/route.ts";
import { withUpstreamModel } from "../http/forwarded_body.ts";
import { reaches, resolveModel } from "../pipeline/resolve.ts";
import type { ResolvedModel } from "../catalog/catalog.ts";

const tokenIds = v.pipe(
  v.array(v.pipe(v.number(), v.integer(), v.minValue(0))),
  v.minLength(1, "must not be empty"),
);
const text = v.pipe(v.string(), v.minLength(1, "must not be an empty string"));

export const EmbeddingsRequest = v.looseObject({
  model: v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty")),
  input: v.union([
    text,
    v.pipe(v.array(text), v.minLength(1), v.maxLength(2048)),
    tokenIds,
    v.pipe(v.array(tokenIds), v.minLength(1), v.maxLength(2048)),
  ], "must be a non-empty string, an array of 1–2048 strings, or token-id arrays"),
  encoding_format: v.optional(v.picklist(["float", "base64"], 'must be "float" or "base64"')),
  dimensions: v.optional(v.pipe(
    v.number("must be an integer"),
    v.integer("must be an integer"),
    v.minValue(1, "must be at least 1"),
    v.maxValue(65536, "must be at most 65536"),
  )),
});

export const createEmbeddings: Handler = async (ctx) => {
  const body = await readJsonObject(ctx.req, ctx.services.config);
  const request = validate(EmbeddingsRequest, body.value);
  const model = resolveModel(ctx, request.model, "embeddings");
  const build = (m: ResolvedModel): Call => ({
    ctx,
    format: "openai",
    endpoint: "embeddings",
    model: m,
    tokens: { input: estimateInput(body.value.input), output: false, minCap: 0, tools: [] },
    stream: false,
    call: () => ({ path: "/embeddings", body: withUpstreamModel(body, m) }),
    usageFromJson: (json) => openaiUsage((json as { usage?: unknown }).usage),
    isAnswer: (a) => Array.isArray(a.data),
    showUsage: {
      json: (answer, usage) => ({
        ...answer,
        usage: { prompt_tokens: usage.input, total_tokens: usage.input },
      }),
    },
  });
  return await routeCall(ctx, model, build, true, undefined, reaches("embeddings"));
};
