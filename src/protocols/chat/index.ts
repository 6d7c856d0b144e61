/**
 * Chat completions (`/v1/chat/completions`, `openai-other.md` §1) as one record: its converters,
 * the client's request, and calls to a chat upstream — OpenAI, xAI, the Anthropic-type vendors'
 * OpenAI-compatible surfaces and `openai-compatible` servers. Streams always ask the upstream for
 * usage (`stream_options.include_usage`), so every stream can be billed; on pass-through, a client
 * that did not ask gets the stream without what asking caused (the usage chunk, `usage: null`).
 */
import { validate } from "../../http/validate.ts";
import { estimateInput } from "../../billing/estimate.ts";
import { cappedUpstreamBody } from "../../http/forwarded_body.ts";
import { newId } from "../../translate/tool_ids.ts";
import type { WireProtocol } from "../wire.ts";
import type { JsonBody } from "../../http/body.ts";
import type { ResolvedModel } from "../../catalog/catalog.ts";
import type { UpstreamCall } from "../../providers/index.ts";
import type { ToolUse } from "../../billing/reserve.ts";
import { decodeRequest } from "./decode_request.ts";
import { encodeRequest } from "./encode_request.ts";
import { decodeResponse } from "./decode_response.ts";
import { encodeResponse } from "./encode_response.ts";
import { capField, chatToolUses, DEFAULT_SEARCH_RESULTS } from "./metering.ts";
import { ChatRequest } from "./schema.ts";
import { chatDecoder, chatEncoder, withoutUsage } from "./stream.ts";
import { streamErrorChunk } from "./errors.ts";
import { chatMeter, chatUsage, chatUsageView } from "./usage.ts";
import { chatConversation } from "./conversation.ts";

type Json = Record<string, unknown>;

/**
 * The upstream request of a chat call, for the output cap the hold decides (`sent`), in `field`.
 * Its text is made when the call is planned, and it holds nothing else of the client's body: not
 * the parsed value, let go then (see `PreparedCall.call`).
 */
function chatCall(
  body: JsonBody,
  model: ResolvedModel,
  field: string,
  tools: ToolUse[],
): (sent: number | undefined) => UpstreamCall {
  const value = body.value;
  const options = value.stream_options as Json | null | undefined;
  const patch: Json = {};
  if (value.stream === true && options?.include_usage !== true) {
    patch.stream_options = { ...options, include_usage: true };
  }
  const live = value.search_parameters as Json | undefined;
  if (tools.some((use) => use.field === "search_parameters") && !live?.max_search_results) {
    patch.search_parameters = { ...live, max_search_results: DEFAULT_SEARCH_RESULTS };
  }
  const text = cappedUpstreamBody(
    body,
    model,
    Object.keys(patch).length ? patch : undefined,
    field,
  );
  return (sent) => ({ protocol: "chat", path: "/chat/completions", body: text(sent) });
}

/** Chat completions as a wire protocol (see the module's doc). */
export const chat: WireProtocol = {
  id: "chat",
  errors: "openai",
  decodeRequest,
  encodeRequest,
  decodeResponse,
  encodeResponse,
  streamDecoder: chatDecoder,
  streamEncoder: chatEncoder,
  answers: {
    id: () => newId("chatcmpl-", 14),
    usage: chatUsageView,
    errorTail: () => streamErrorChunk(),
  },
  conversation: chatConversation,

  accept(_input, body) {
    const request = validate(ChatRequest, body.value);
    return {
      model: request.model,
      endpoint: "chat",
      stream: request.stream === true,
      usageChunk: request.stream_options?.include_usage === true,
    };
  },

  prepare(_input, body, model, options) {
    const value = body.value;
    const stream = value.stream === true;
    const tools = chatToolUses(value);
    const webSearch = tools.some((use) => use.tools.includes("web_search"));
    const field = capField(value, model.provider.type === "openai");
    const cap = value.max_completion_tokens ?? value.max_tokens;
    return {
      tokens: {
        input: estimateInput(value),
        requestedCap: typeof cap === "number" ? cap : undefined,
        output: true,
        minCap: 1,
        choices: typeof value.n === "number" ? value.n : 1,
        serviceTier: typeof value.service_tier === "string" ? value.service_tier : undefined,
        tierField: "service_tier",
        tools,
      },
      framing: "sse",
      call: chatCall(body, model, field, tools),
      usageFromJson: (json) => chatUsage(json, webSearch),
      meter: () => chatMeter(webSearch),
      // A pass-through client that did not ask for usage does not get what asking for it caused.
      strip: options.passthrough && stream && !options.usageChunk ? withoutUsage : undefined,
    };
  },
};
