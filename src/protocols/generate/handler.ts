/**
 * The content-generation protocol (Gemini): `:generateContent`, `:streamGenerateContent` (SSE with
 * `alt=sse`, otherwise one JSON array) and `:countTokens`, passed through to the Gemini provider
 * with the upstream model id in the path and the operator's key in its header.
 */
import type { Handler, RequestContext } from "../../context.ts";
import { readJsonObject } from "../../http/body.ts";
import { GatewayError } from "../../http/errors.ts";
import { textOf } from "../../http/json.ts";
import { validate } from "../../http/validate.ts";
import { estimateInput } from "../../billing/estimate.ts";
import { geminiMeter, generateUsage } from "../../billing/usage.ts";
import { forwardedBody, passThrough } from "../../pipeline/passthrough.ts";
import { resolveModel } from "../../pipeline/resolve.ts";
import { notFound } from "../../pipeline/upstream_objects.ts";
import { relayUpstreamError } from "../../pipeline/upstream_errors.ts";
import { send, upstreamDeadlines } from "../../providers/index.ts";
import type { ResolvedModel } from "../../catalog/catalog.ts";
import { CountTokensRequest, GenerateRequest } from "./schema.ts";
import { streamErrorElement, streamErrorEvent } from "./stream.ts";
import { checkImageRules } from "./image_rules.ts";
import { generateShape, generateToolUses, withMaxOutputTokens } from "./metering.ts";

function geminiModel(ctx: RequestContext): ResolvedModel {
  let id: string;
  try {
    id = decodeURIComponent(ctx.params.model ?? "");
  } catch {
    throw new GatewayError(400, "The model name in the path is not validly percent-encoded.", {
      param: "model",
    });
  }
  return resolveModel(ctx, id.replace(/^models\//, ""), "generate");
}

function generateHandler(action: "generateContent" | "streamGenerateContent"): Handler {
  return async (ctx) => {
    const body = await readJsonObject(ctx.req, ctx.services.config);
    validate(GenerateRequest, body.value);
    const shape = generateShape(body.value);
    const model = geminiModel(ctx);
    // Cached contents cannot be created through the gateway: any named is another's, or none.
    const cached = body.value.cachedContent ?? body.value.cached_content;
    if (cached !== undefined && cached !== null) {
      throw notFound("Cached content", textOf(cached), "cachedContent");
    }
    const violation = model.image && checkImageRules(body.value, model.image);
    if (violation) {
      throw new GatewayError(400, `Invalid '${violation.field}': ${violation.message}`, {
        param: violation.field,
      });
    }
    const stream = action === "streamGenerateContent";
    const sse = stream && ctx.url.searchParams.get("alt") === "sse";
    return passThrough({
      ctx,
      format: "google",
      endpoint: action,
      model,
      tokens: {
        input: estimateInput(body.value),
        requestedCap: shape.cap,
        output: true,
        minCap: 1,
        choices: shape.choices,
        tools: generateToolUses(body.value),
      },
      stream,
      call: (cap) => ({
        path: `/v1beta/models/${encodeURIComponent(model.upstreamId)}:${action}${
          sse ? "?alt=sse" : ""
        }`,
        body: cap === undefined
          ? forwardedBody(body)
          : JSON.stringify(withMaxOutputTokens(body.value, cap)),
      }),
      usageFromJson: generateUsage,
      meter: geminiMeter,
      framing: sse ? "sse" : "json-array",
      errorTail: sse ? streamErrorEvent : streamErrorElement,
    });
  };
}

export const generateContent = generateHandler("generateContent");
export const streamGenerateContent = generateHandler("streamGenerateContent");

/** `:countTokens`, free: the upstream's count. */
export const countTokens: Handler = async (ctx) => {
  const body = await readJsonObject(ctx.req, ctx.services.config);
  validate(CountTokensRequest, body.value);
  const model = geminiModel(ctx);
  const upstream = await send(
    model.provider,
    {
      path: `/v1beta/models/${encodeURIComponent(model.upstreamId)}:countTokens`,
      body: body.text,
    },
    new AbortController(),
    upstreamDeadlines(ctx.services.config),
  );
  if (!upstream.ok) {
    return await relayUpstreamError(upstream, "google", model);
  }
  return new Response(upstream.body, { headers: { "content-type": "application/json" } });
};
