/**
 * `POST /v1/messages` and `POST /v1/messages/count_tokens` (Anthropic Messages): to Anthropic or an
 * Anthropic-compatible provider, passed through with `anthropic-version`/`anthropic-beta`.
 */
import type { Handler } from "../../context.ts";
import { readJsonObject } from "../../http/body.ts";
import { GatewayError } from "../../http/errors.ts";
import { jsonResponse } from "../../http/json.ts";
import { validate } from "../../http/validate.ts";
import { estimateInput } from "../../billing/estimate.ts";
import { messagesMeter, messagesObjects, messagesUsage } from "../../billing/usage.ts";
import { passThrough, withUpstreamModel } from "../../pipeline/passthrough.ts";
import { resolveModel } from "../../pipeline/resolve.ts";
import { messagesState } from "../../pipeline/upstream_objects.ts";
import { anthropicCountsTokens } from "../../providers/anthropic.ts";
import { send, upstreamDeadlines } from "../../providers/index.ts";
import { relayUpstreamError } from "../../pipeline/upstream_errors.ts";
import { CountTokensRequest, MessagesRequest } from "./schema.ts";
import { streamErrorEvent } from "./stream.ts";
import { messagesMinCap, messagesToolUses, wantsLongContext, withToolLimits } from "./metering.ts";

function forwardedHeaders(req: Request): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of ["anthropic-version", "anthropic-beta"]) {
    const value = req.headers.get(name);
    if (value) headers[name] = value;
  }
  return headers;
}

export const createMessage: Handler = async (ctx) => {
  const body = await readJsonObject(ctx.req, ctx.services.config);
  const request = validate(MessagesRequest, body.value);
  const model = resolveModel(ctx, request.model, "messages");
  const headers = forwardedHeaders(ctx.req);
  // A container (code execution) is reused by id: only the account that created it may.
  messagesState(ctx, body.value);
  if (model.prices && !model.prices.longContext && wantsLongContext(headers["anthropic-beta"])) {
    throw new GatewayError(
      400,
      `The 1M-token context window (anthropic-beta context-1m) is not priced for \`${model.id}\` on this gateway, so it cannot be used through it.`,
      { param: "anthropic-beta" },
    );
  }
  return passThrough({
    ctx,
    format: "anthropic",
    endpoint: "messages",
    model,
    tokens: {
      input: estimateInput(body.value),
      requestedCap: request.max_tokens,
      output: true,
      minCap: Math.min(request.max_tokens, messagesMinCap(body.value)),
      serviceTier: request.service_tier,
      tools: messagesToolUses(body.value),
    },
    stream: request.stream === true,
    call: (cap) => {
      const limits = withToolLimits(body.value);
      const patch = {
        ...(cap === undefined ? {} : { max_tokens: cap }),
        ...(limits ? { tools: limits } : {}),
      };
      return {
        path: "/v1/messages",
        body: withUpstreamModel(body, model, Object.keys(patch).length ? patch : undefined),
        headers,
      };
    },
    usageFromJson: messagesUsage,
    meter: messagesMeter,
    objectsFromJson: messagesObjects,
    errorTail: streamErrorEvent,
  });
};

/**
 * Token counting, free of charge: the upstream's own count where it has one (its errors relayed
 * as they are), otherwise a local estimate (one token per four bytes of the request's text),
 * marked by the response header `x-switchyard-token-count: estimate`.
 */
export const countTokens: Handler = async (ctx) => {
  const body = await readJsonObject(ctx.req, ctx.services.config);
  const request = validate(CountTokensRequest, body.value);
  const model = resolveModel(ctx, request.model, "messages");
  if (anthropicCountsTokens(model.provider)) {
    const upstream = await send(
      model.provider,
      {
        path: "/v1/messages/count_tokens",
        body: withUpstreamModel(body, model),
        headers: forwardedHeaders(ctx.req),
      },
      new AbortController(),
      upstreamDeadlines(ctx.services.config),
    );
    if (upstream.ok) {
      return new Response(upstream.body, {
        headers: { "content-type": "application/json", "x-switchyard-token-count": "upstream" },
      });
    }
    return await relayUpstreamError(upstream, "anthropic", model);
  }
  const { system, messages, tools } = body.value;
  return jsonResponse(
    { input_tokens: estimateInput([system, messages, tools]).typical },
    200,
    {
      "x-switchyard-token-count": "estimate",
    },
  );
};
