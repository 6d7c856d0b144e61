/**
 * The content-generation protocol (Gemini: `:generateContent`, `:streamGenerateContent` — SSE
 * with `alt=sse`, otherwise one JSON array) as one record: its converters, the client's request
 * (model and action in the path), and calls to a Gemini upstream with the upstream model id in the
 * path and the operator's key in its header.
 */
import { GatewayError, notFound } from "../../http/errors.ts";
import { textOf } from "../../http/json.ts";
import { validate } from "../../http/validate.ts";
import { estimateInput } from "../../billing/estimate.ts";
import { cappedBody, forwardedBody } from "../../http/forwarded_body.ts";
import { newId } from "../../translate/tool_ids.ts";
import type { PreparedCall, WireProtocol } from "../wire.ts";
import { generateCountClient, generateCountUpstream } from "./count.ts";
import { generateConversation } from "./conversation.ts";
import { pathModel } from "../../http/path_model.ts";
import { decodeRequest } from "./decode_request.ts";
import { encodeRequest } from "./encode_request.ts";
import { decodeResponse } from "./decode_response.ts";
import { encodeResponse } from "./encode_response.ts";
import { checkImageRules } from "./image_rules.ts";
import { capSlot, generateShape, generateToolUses } from "./metering.ts";
import { GenerateRequest } from "./schema.ts";
import { generateDecoder, generateEncoder } from "./stream.ts";
import { streamErrorElement, streamErrorEvent } from "./errors.ts";
import { geminiMeter, generateUsage, generateUsageView } from "./usage.ts";

/** The upstream request of a generateContent call to `path` whose body, for the hold's cap, is `text`. */
function generateCall(
  path: string,
  text: (cap: number | undefined) => string,
): PreparedCall["call"] {
  return (cap) => ({ protocol: "generate", path, body: text(cap) });
}

/** Content generation (Gemini) as a wire protocol (see the module's doc). */
export const generate: WireProtocol = {
  id: "generate",
  errors: "google",
  decodeRequest,
  encodeRequest,
  decodeResponse,
  encodeResponse,
  streamDecoder: generateDecoder,
  streamEncoder: generateEncoder,
  answers: {
    id: () => newId("", 11),
    usage: generateUsageView,
    errorTail: (started, jsonArray) => jsonArray ? streamErrorElement(started) : streamErrorEvent(),
    // Older Google SDKs return the text before a last error element as a success.
    abortFailed: true,
  },
  count: { client: generateCountClient, upstream: generateCountUpstream },
  conversation: generateConversation,

  accept(input, body) {
    validate(GenerateRequest, body.value);
    const stream = input.url.pathname.endsWith(":streamGenerateContent");
    // Cached contents cannot be created through the gateway: any named is another's, or none.
    const cached = body.value.cachedContent ?? body.value.cached_content;
    if (cached !== undefined && cached !== null) {
      throw notFound("Cached content", textOf(cached), "cachedContent");
    }
    return {
      model: pathModel(input.params),
      endpoint: stream ? "streamGenerateContent" : "generateContent",
      stream,
      jsonArray: stream && input.url.searchParams.get("alt") !== "sse",
    };
  },

  prepare(_input, body, model, options) {
    const value = body.value;
    const violation = model.image && checkImageRules(value, model.image);
    if (violation) {
      throw new GatewayError(400, `Invalid '${violation.field}': ${violation.message}`, {
        param: violation.field,
      });
    }
    const shape = generateShape(value);
    const action = options.stream ? "streamGenerateContent" : "generateContent";
    const sse = options.stream && !options.jsonArray;
    return {
      tokens: {
        input: estimateInput(value),
        requestedCap: shape.cap,
        output: true,
        minCap: 1,
        choices: shape.choices,
        tools: generateToolUses(value),
      },
      framing: sse || !options.stream ? "sse" : "json-array",
      call: generateCall(
        `/v1beta/models/${encodeURIComponent(model.upstreamId)}:${action}${sse ? "?alt=sse" : ""}`,
        cappedBody(forwardedBody(body), capSlot(value)),
      ),
      usageFromJson: generateUsage,
      meter: geminiMeter,
    };
  },
};
