/**
 * `POST /v1/responses` (spec §4.2): validated, routed by the catalog to an OpenAI or xAI upstream
 * (both speak Responses), and passed through with usage read on the way.
 */
import type { Handler } from "../../context.ts";
import { readJsonObject } from "../../http/body.ts";
import { validate } from "../../http/validate.ts";
import { openaiUsage, responsesMeter } from "../../billing/usage.ts";
import { passThrough, withUpstreamModel } from "../../pipeline/passthrough.ts";
import { resolveModel } from "../../pipeline/resolve.ts";
import { ResponsesRequest } from "./schema.ts";
import { streamErrorEvent } from "./stream.ts";

export const createResponse: Handler = async (ctx) => {
  const body = await readJsonObject(ctx.req, ctx.services.config.maxBodyBytes);
  const request = validate(ResponsesRequest, body.value);
  const model = resolveModel(ctx, request.model, "responses");
  return passThrough({
    ctx,
    format: "openai",
    endpoint: "responses",
    model,
    inputChars: body.text.length,
    maxOutputTokens: request.max_output_tokens ?? undefined,
    stream: request.stream === true,
    call: { path: "/responses", body: withUpstreamModel(body, model) },
    usageFromJson: (json) => openaiUsage((json as { usage?: unknown }).usage),
    meter: responsesMeter,
    errorTail: streamErrorEvent,
  });
};
