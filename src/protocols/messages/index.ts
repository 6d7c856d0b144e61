/**
 * The Messages protocol (`/v1/messages`, Anthropic and the Anthropic-compatible vendors) as one
 * record: its converters, the client's request, and calls to a Messages upstream — on
 * pass-through with the client's `anthropic-version`/`anthropic-beta` forwarded (and a `thread`
 * as it is: the upstream holds it).
 */
import { GatewayError } from "../../http/errors.ts";
import { validate } from "../../http/validate.ts";
import { estimateInput } from "../../billing/estimate.ts";
import { cappedUpstreamBody } from "../../http/forwarded_body.ts";
import { messagesNames, messagesState } from "./state.ts";
import { newId } from "../../translate/tool_ids.ts";
import type { WireProtocol } from "../wire.ts";
import type { JsonBody } from "../../http/body.ts";
import type { ResolvedModel } from "../../catalog/catalog.ts";
import type { UpstreamCall } from "../../providers/index.ts";
import { messagesCountClient, messagesCountUpstream } from "./count.ts";
import { messagesConversation } from "./conversation.ts";
import { decodeRequest } from "./decode_request.ts";
import { encodeRequest } from "./encode_request.ts";
import { decodeResponse } from "./decode_response.ts";
import { encodeResponse } from "./encode_response.ts";
import { messagesMinCap, messagesToolUses, wantsLongContext, withToolLimits } from "./metering.ts";
import { MessagesRequest } from "./schema.ts";
import { messagesDecoder, messagesEncoder } from "./stream.ts";
import { streamErrorEvent } from "./errors.ts";
import { threadOf } from "./thread.ts";
import { messagesMeter, messagesObjects, messagesUsage, messagesUsageView } from "./usage.ts";

/** The client headers a Messages upstream gets on pass-through. */
function forwardedHeaders(from: Headers): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of ["anthropic-version", "anthropic-beta"]) {
    const value = from.get(name);
    if (value) headers[name] = value;
  }
  return headers;
}

/**
 * The upstream request of a Messages call, for the output cap the hold decides (`sent`). Its text
 * is made when the call is planned, and it holds nothing else of the client's body: not the
 * parsed value, let go then (see `PreparedCall.call`).
 */
function messagesCall(
  body: JsonBody,
  model: ResolvedModel,
  headers: Record<string, string>,
): (sent: number | undefined) => UpstreamCall {
  const limits = withToolLimits(body.value);
  const text = cappedUpstreamBody(
    body,
    model,
    limits ? { tools: limits } : undefined,
    "max_tokens",
  );
  return (sent) => ({ protocol: "messages", path: "/v1/messages", body: text(sent), headers });
}

/** Messages as a wire protocol (see the module's doc). */
export const messages: WireProtocol = {
  id: "messages",
  errors: "anthropic",
  decodeRequest,
  encodeRequest,
  decodeResponse,
  encodeResponse,
  streamDecoder: messagesDecoder,
  streamEncoder: messagesEncoder,
  answers: {
    id: () => newId("msg_", 12),
    usage: messagesUsageView,
    errorTail: () => streamErrorEvent(),
  },
  names: { of: messagesNames },
  count: { client: messagesCountClient, upstream: messagesCountUpstream },
  conversation: messagesConversation,

  accept(_input, body) {
    const request = validate(MessagesRequest, body.value);
    return { model: request.model, endpoint: "messages", stream: request.stream === true };
  },

  prepare(input, body, model, options) {
    const value = body.value;
    const headers = options.passthrough ? forwardedHeaders(input.headers) : {};
    // A container (code execution) is reused by id, and a thread continued upstream by its last
    // answer's: only the account that created it may.
    const state = messagesState(input, value);
    // On pass-through the upstream holds a thread the body creates or continues: each answer is
    // the caller's to continue (recorded as a stored response of its provider).
    const threaded = options.passthrough && threadOf(value) !== undefined;
    if (model.prices && !model.prices.longContext && wantsLongContext(headers["anthropic-beta"])) {
      throw new GatewayError(
        400,
        `The 1M-token context window (anthropic-beta context-1m) is not priced for \`${model.id}\` on this gateway, so it cannot be used through it.`,
        { param: "anthropic-beta" },
      );
    }
    const cap = typeof value.max_tokens === "number" ? value.max_tokens : undefined;
    return {
      tokens: {
        input: estimateInput(value),
        ...(state.contextTokens ? { contextTokens: state.contextTokens } : {}),
        requestedCap: cap,
        // Messages requires `max_tokens`: a translated request without one gets the hold's cap.
        capRequired: cap === undefined,
        output: true,
        minCap: Math.min(cap ?? Infinity, messagesMinCap(value)),
        serviceTier: typeof value.service_tier === "string" ? value.service_tier : undefined,
        tools: messagesToolUses(value),
      },
      framing: "sse",
      call: messagesCall(body, model, headers),
      usageFromJson: messagesUsage,
      meter: () => messagesMeter(threaded),
      objectsFromJson: (answer) => messagesObjects(answer, threaded),
    };
  },
};
