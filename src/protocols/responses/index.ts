/**
 * The Responses protocol (`/v1/responses`, spec §4.2) as one record: its converters, the client's
 * request, calls to a Responses upstream (OpenAI, xAI) passed through with usage read on the way,
 * and the conversations the gateway keeps for `previous_response_id` when the model's provider
 * cannot. `background` responses are refused: they would keep running upstream after the call is
 * billed.
 */
import { GatewayError } from "../../http/errors.ts";
import { validate } from "../../http/validate.ts";
import { estimateInput } from "../../billing/estimate.ts";
import { DEFAULT_TOOL_CALLS } from "../../billing/reserve.ts";
import { cappedUpstreamBody } from "../../http/forwarded_body.ts";
import type { TextParts } from "../../http/utf8.ts";
import { responsesNames, responsesState } from "./state.ts";
import { newId } from "../../translate/tool_ids.ts";
import type { PreparedCall, WireProtocol } from "../wire.ts";
import { responsesCountClient, responsesCountUpstream } from "./count.ts";
import { responsesConversation } from "./conversation.ts";
import { decodeRequest } from "./decode_request.ts";
import { encodeRequest } from "./encode_request.ts";
import { decodeResponse } from "./decode_response.ts";
import { encodeResponse } from "./encode_response.ts";
import { responsesToolUses } from "./metering.ts";
import { ResponsesRequest } from "./schema.ts";
import { responsesDecoder, responsesEncoder } from "./stream.ts";
import { streamErrorEvent } from "./errors.ts";
import { responsesMeter, responsesObjects, responsesUsage, responsesUsageView } from "./usage.ts";

/** The upstream request of a Responses call whose body, for the hold's cap, is `text`. */
function responsesCall(
  text: (cap: number | undefined) => string | TextParts,
): PreparedCall["call"] {
  return (sent) => ({ protocol: "responses", path: "/responses", body: text(sent) });
}

/** Responses as a wire protocol (see the module's doc). */
export const responses: WireProtocol = {
  id: "responses",
  errors: "openai",
  decodeRequest,
  encodeRequest,
  decodeResponse,
  encodeResponse,
  streamDecoder: responsesDecoder,
  streamEncoder: responsesEncoder,
  answers: {
    id: () => newId("resp_", 24),
    usage: responsesUsageView,
    errorTail: () => streamErrorEvent(),
  },
  names: { of: responsesNames, chained: true },
  count: { client: responsesCountClient, upstream: responsesCountUpstream },
  conversation: responsesConversation,

  accept(_input, body) {
    const request = validate(ResponsesRequest, body.value);
    if (request.background) {
      throw new GatewayError(
        400,
        "Invalid 'background': background responses are not supported through this gateway (they run on upstream after the call is billed); stream instead.",
        { param: "background", code: "unsupported_parameter" },
      );
    }
    return { model: request.model, endpoint: "responses", stream: request.stream === true };
  },

  prepare(input, body, model, options) {
    const value = body.value;
    // Upstream state named by the request must be the caller's (a translated body names none).
    const state = options.passthrough ? responsesState(input, value) : {};
    const tools = responsesToolUses(value);
    const cap = value.max_output_tokens;
    // Hosted tool calls are held for `max_tool_calls`: without one, the held number is the limit.
    const toolLimit = tools.length && value.max_tool_calls == null
      ? { max_tool_calls: DEFAULT_TOOL_CALLS }
      : undefined;
    return {
      tokens: {
        input: estimateInput(value),
        contextTokens: state.contextTokens,
        requestedCap: typeof cap === "number" ? cap : undefined,
        output: true,
        minCap: 16,
        serviceTier: typeof value.service_tier === "string" ? value.service_tier : undefined,
        tierField: "service_tier",
        tools,
      },
      framing: "sse",
      call: responsesCall(cappedUpstreamBody(body, model, toolLimit, "max_output_tokens")),
      usageFromJson: responsesUsage,
      meter: responsesMeter,
      objectsFromJson: responsesObjects,
      // A response stored nowhere (`store: false`) cannot be continued: only its containers count.
      keepResponses: value.store !== false,
    };
  },
};
