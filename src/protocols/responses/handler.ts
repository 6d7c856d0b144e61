/**
 * `POST /v1/responses` (spec §4.2): validated, routed by the catalog to an OpenAI or xAI upstream
 * (both speak Responses), and passed through with usage read on the way. `background` responses
 * are refused: they would keep running upstream after the call is settled.
 */
import type { Handler, RequestContext } from "../../context.ts";
import { readJsonObject } from "../../http/body.ts";
import { GatewayError } from "../../http/errors.ts";
import { textOf } from "../../http/json.ts";
import { validate } from "../../http/validate.ts";
import { estimateInput } from "../../billing/estimate.ts";
import { responsesMeter, responsesObjects, responsesUsage } from "../../billing/usage.ts";
import { passThrough, withUpstreamModel } from "../../pipeline/passthrough.ts";
import { resolveModel } from "../../pipeline/resolve.ts";
import { notFound, ownObject } from "../../pipeline/upstream_objects.ts";
import { ResponsesRequest } from "./schema.ts";
import { responsesToolUses } from "./metering.ts";
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
  const previous = request.previous_response_id
    ? ownObject(ctx, request.previous_response_id, "response", "previous_response_id")
    : undefined;
  checkUpstreamState(ctx, body.value);
  return passThrough({
    ctx,
    format: "openai",
    endpoint: "responses",
    model,
    tokens: {
      input: estimateInput(body.value),
      contextTokens: previous?.contextTokens,
      requestedCap: request.max_output_tokens ?? undefined,
      output: true,
      minCap: 16,
      serviceTier: request.service_tier ?? undefined,
      tierField: "service_tier",
      tools: responsesToolUses(body.value),
    },
    stream: request.stream === true,
    call: (cap) => ({
      path: "/responses",
      body: withUpstreamModel(
        body,
        model,
        cap === undefined ? undefined : { max_output_tokens: cap },
      ),
    }),
    usageFromJson: responsesUsage,
    meter: responsesMeter,
    errorTail: streamErrorEvent,
    objectsFromJson: responsesObjects,
  });
};

/**
 * Refuses upstream state the caller does not own: a conversation (none can be created through the
 * gateway), stored items by reference, and code interpreter containers of other accounts.
 */
function checkUpstreamState(ctx: RequestContext, body: Record<string, unknown>): void {
  const conversation = body.conversation;
  if (conversation !== undefined && conversation !== null) {
    const id = typeof conversation === "string"
      ? conversation
      : textOf((conversation as { id?: unknown }).id);
    throw notFound("Conversation", id, "conversation");
  }
  if (Array.isArray(body.input)) {
    body.input.forEach((item, i) => {
      if ((item as { type?: unknown } | null)?.type === "item_reference") {
        throw new GatewayError(
          400,
          `Invalid 'input[${i}]': item references are not supported through this gateway; send the item itself.`,
          { param: `input[${i}]`, code: "unsupported_value" },
        );
      }
    });
  }
  if (Array.isArray(body.tools)) {
    body.tools.forEach((tool, i) => {
      const container = (tool as { container?: unknown } | null)?.container;
      if (typeof container === "string") {
        ownObject(ctx, container, "container", `tools[${i}].container`);
      }
    });
  }
}
