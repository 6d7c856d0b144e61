/**
 * `POST /v1/responses` (spec §4.2): validated, routed by the catalog to an OpenAI or xAI upstream
 * (both speak Responses), and passed through with usage read on the way. `background` responses
 * are refused: they would keep running upstream after the call is settled.
 */
import type { Handler } from "../../context.ts";
import { readJsonObject } from "../../http/body.ts";
import { GatewayError } from "../../http/errors.ts";
import { validate } from "../../http/validate.ts";
import { estimateInput } from "../../billing/estimate.ts";
import { responsesMeter, responsesObjects, responsesUsage } from "../../billing/usage.ts";
import { passThrough, withUpstreamModel } from "../../pipeline/passthrough.ts";
import { resolveModel } from "../../pipeline/resolve.ts";
import { responsesState } from "../../pipeline/upstream_objects.ts";
import { ResponsesRequest } from "./schema.ts";
import { responsesToolUses } from "./metering.ts";
import { DEFAULT_TOOL_CALLS } from "../../billing/reserve.ts";
import { streamErrorEvent } from "./stream.ts";

export const createResponse: Handler = async (ctx) => {
  const body = await readJsonObject(ctx.req, ctx.services.config);
  const request = validate(ResponsesRequest, body.value);
  if (request.background) {
    throw new GatewayError(
      400,
      "Invalid 'background': background responses are not supported through this gateway (they run on upstream after the call is billed); stream instead.",
      { param: "background", code: "unsupported_parameter" },
    );
  }
  const model = resolveModel(ctx, request.model, "responses");
  const state = responsesState(ctx, body.value);
  const tools = responsesToolUses(body.value);
  // Hosted tool calls are held for `max_tool_calls`: without one, the held number is the limit.
  const toolLimit = tools.length && request.max_tool_calls == null
    ? { max_tool_calls: DEFAULT_TOOL_CALLS }
    : undefined;
  return passThrough({
    ctx,
    format: "openai",
    endpoint: "responses",
    model,
    tokens: {
      input: estimateInput(body.value),
      contextTokens: state.contextTokens,
      requestedCap: request.max_output_tokens ?? undefined,
      output: true,
      minCap: 16,
      serviceTier: request.service_tier ?? undefined,
      tierField: "service_tier",
      tools,
    },
    stream: request.stream === true,
    call: (cap) => ({
      path: "/responses",
      body: withUpstreamModel(
        body,
        model,
        cap === undefined ? toolLimit : { ...toolLimit, max_output_tokens: cap },
      ),
    }),
    usageFromJson: responsesUsage,
    meter: responsesMeter,
    errorTail: streamErrorEvent,
    objectsFromJson: responsesObjects,
    // A response stored nowhere (`store: false`) cannot be continued: only its containers count.
    keepResponses: body.value.store !== false,
  });
};
