/**
 * Gemini embeddings: `POST /v1beta/models/{model}:embedContent` and `:batchEmbedContents` (and the
 * same under `/v1`), for the Gemini provider's embedding models. Passed through like
 * `/v1/embeddings`: the body goes upstream as it came, with the model swapped for the catalog's
 * upstream id — in the path and in every `model` field the body names, which must name the
 * path's model (`models/{model}`, as the API requires) — and the answer comes back as it is.
 * Billed per input token: `usageMetadata.promptTokenCount` when the API reports it, else the
 * input estimate (as `/v1/embeddings` does when `usage` is missing).
 */
import * as v from "valibot";
import type { Handler, RequestContext } from "../context.ts";
import { type JsonBody, readJsonObject } from "../http/body.ts";
import { GatewayError } from "../http/errors.ts";
import { asObject, textOf } from "../http/json.ts";
import { pathModel } from "../http/path_model.ts";
import { validate } from "../http/validate.ts";
import { estimateInput } from "../billing/estimate.ts";
import { emptyUsage, type Usage } from "../billing/price.ts";
import { count } from "../billing/usage.ts";
import type { ResolvedModel } from "../catalog/catalog.ts";
import { passThrough } from "../pipeline/route.ts";
import { forwardedBody } from "../http/forwarded_body.ts";
import { resolveModel } from "../pipeline/resolve.ts";

const Content = v.looseObject({
  parts: v.pipe(
    v.array(
      v.looseObject({ text: v.optional(v.string("must be a string")) }, "must be an object"),
      "must be an array of parts",
    ),
    v.minLength(1, "must not be empty"),
  ),
}, "must be an object with parts");

const dimensions = v.optional(v.pipe(
  v.number("must be an integer"),
  v.integer("must be an integer"),
  v.minValue(1, "must be at least 1"),
));

/** One `EmbedContentRequest` (the API's proto-JSON takes both spellings of its fields). */
const EmbedContentRequest = v.looseObject({
  model: v.optional(v.string("must be a string")),
  content: Content,
  outputDimensionality: dimensions,
  output_dimensionality: dimensions,
});

const BatchEmbedContentsRequest = v.looseObject({
  requests: v.pipe(
    v.array(EmbedContentRequest, "must be an array of embedContent requests"),
    v.minLength(1, "must not be empty"),
  ),
});

type Json = Record<string, unknown>;
type Action = "embedContent" | "batchEmbedContents";

/**
 * Input tokens from the answer's `usageMetadata` (`EmbeddingUsageMetadata.promptTokenCount`), or
 * null when it has none.
 */
export function embeddingUsage(answer: unknown): Usage | null {
  const usage = asObject(asObject(answer).usageMetadata);
  if (!("promptTokenCount" in usage)) return null;
  return { ...emptyUsage(), inputTokens: count(usage.promptTokenCount) };
}

/**
 * The requests a body holds with their field paths: the body itself (`embedContent`) or each of
 * its `requests`.
 */
function requestsOf(body: Json, action: Action): [string, Json][] {
  return action === "embedContent"
    ? [["", body]]
    : (body.requests as Json[]).map((request, i) => [`requests[${i}].`, request]);
}

/**
 * The body sent upstream: every `model` it names replaced by `models/{upstream id}` (the text as
 * it came when nothing changes); 400 for a `model` other than the path's.
 */
function upstreamBody(body: JsonBody, action: Action, model: ResolvedModel): string {
  const upstream = `models/${model.upstreamId}`;
  let changed = false;
  const swap = (request: Json, at: string): Json => {
    if (request.model === undefined) return request;
    const named = textOf(request.model).replace(/^models\//, "");
    if (named !== model.id) {
      throw new GatewayError(
        400,
        `Invalid '${at}model': must name the model of the path, models/${model.id}.`,
        { param: `${at}model` },
      );
    }
    if (request.model === upstream) return request;
    changed = true;
    return { ...request, model: upstream };
  };
  const value = body.value;
  const sent = action === "embedContent"
    ? swap(value, "")
    : { ...value, requests: requestsOf(value, action).map(([at, r]) => swap(r, at)) };
  return changed ? JSON.stringify(sent) : forwardedBody(body);
}

function embed(action: Action): Handler {
  return async (ctx: RequestContext) => {
    const body = await readJsonObject(ctx.req, ctx.services.config);
    validate(
      action === "embedContent" ? EmbedContentRequest : BatchEmbedContentsRequest,
      body.value,
    );
    const model = resolveModel(ctx, pathModel(ctx.params), "embedContent");
    // What the estimate reads when the answer has no usage: the parts, as /v1/embeddings its input.
    const parts = requestsOf(body.value, action).map(([, request]) =>
      (request.content as Json).parts
    );
    const sent = upstreamBody(body, action, model);
    return await passThrough({
      ctx,
      format: "google",
      endpoint: action,
      model,
      tokens: { input: estimateInput(parts), output: false, minCap: 0, tools: [] },
      stream: false,
      call: () => ({
        protocol: "generate",
        path: `/v1beta/models/${encodeURIComponent(model.upstreamId)}:${action}`,
        body: sent,
      }),
      usageFromJson: embeddingUsage,
      showUsage: {
        json: (answer, usage) => ({
          ...answer,
          usageMetadata: { promptTokenCount: usage.input, totalTokenCount: usage.input },
        }),
      },
    });
  };
}

/** `POST …/models/{model}:embedContent`: one content's embedding. */
export const embedContent: Handler = embed("embedContent");

/** `POST …/models/{model}:batchEmbedContents`: several contents' embeddings (`@google/genai`). */
export const batchEmbedContents: Handler = embed("batchEmbedContents");
