/**
 * The content-generation protocol (Gemini): `:generateContent`, `:streamGenerateContent` (SSE with
 * `alt=sse`, otherwise one JSON array) and `:countTokens`, passed through to the Gemini provider
 * with the upstream model id in the path and the operator's key in its header.
 */
import type { Handler, RequestContext } from "../../context.ts";
import { readJsonObject } from "../../http/body.ts";
import { GatewayError } from "../../http/errors.ts";
import { validate } from "../../http/validate.ts";
import { geminiArrayMeter, geminiSseMeter, geminiUsage } from "../../billing/usage.ts";
import { passThrough } from "../../pipeline/passthrough.ts";
import { resolveModel } from "../../pipeline/resolve.ts";
import { relayUpstreamError } from "../../pipeline/upstream_errors.ts";
import { send } from "../../providers/index.ts";
import type { ResolvedModel } from "../../catalog/catalog.ts";
import { CountTokensRequest, GenerateRequest } from "./schema.ts";
import { streamErrorEvent } from "./stream.ts";
import { checkImageRules } from "./image_rules.ts";

function geminiModel(ctx: RequestContext): ResolvedModel {
  const id = decodeURIComponent(ctx.params.model ?? "").replace(/^models\//, "");
  return resolveModel(ctx, id, "generate");
}

function generateHandler(action: "generateContent" | "streamGenerateContent"): Handler {
  return async (ctx) => {
    const body = await readJsonObject(ctx.req, ctx.services.config.maxBodyBytes);
    const request = validate(GenerateRequest, body.value);
    const model = geminiModel(ctx);
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
      inputChars: body.text.length,
      maxOutputTokens: request.generationConfig?.maxOutputTokens,
      stream,
      call: {
        path: `/v1beta/models/${encodeURIComponent(model.upstreamId)}:${action}${
          sse ? "?alt=sse" : ""
        }`,
        body: body.text,
      },
      usageFromJson: (json) => geminiUsage((json as { usageMetadata?: unknown }).usageMetadata),
      meter: sse ? geminiSseMeter : geminiArrayMeter,
      errorTail: sse ? streamErrorEvent : undefined,
    });
  };
}

export const generateContent = generateHandler("generateContent");
export const streamGenerateContent = generateHandler("streamGenerateContent");

/** `:countTokens`, free: the upstream's count. */
export const countTokens: Handler = async (ctx) => {
  const body = await readJsonObject(ctx.req, ctx.services.config.maxBodyBytes);
  validate(CountTokensRequest, body.value);
  const model = geminiModel(ctx);
  const upstream = await send(
    model.provider,
    {
      path: `/v1beta/models/${encodeURIComponent(model.upstreamId)}:countTokens`,
      body: body.text,
    },
    new AbortController(),
    ctx.services.config.upstreamTimeoutMs,
  );
  if (!upstream.ok) {
    return await relayUpstreamError(upstream, "google");
  }
  return new Response(upstream.body, { headers: { "content-type": "application/json" } });
};
