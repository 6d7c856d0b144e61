/**
 * `POST /v1/messages` and `POST /v1/messages/count_tokens` (Anthropic Messages): to Anthropic or an
 * Anthropic-compatible provider, passed through with `anthropic-version`/`anthropic-beta`.
 */
import type { Handler } from "../../context.ts";
import { readJsonObject } from "../../http/body.ts";
import { jsonResponse } from "../../http/json.ts";
import { validate } from "../../http/validate.ts";
import { anthropicUsage, estimateTextTokens, messagesMeter } from "../../billing/usage.ts";
import { passThrough, withUpstreamModel } from "../../pipeline/passthrough.ts";
import { resolveModel } from "../../pipeline/resolve.ts";
import { anthropicCountsTokens } from "../../providers/anthropic.ts";
import { send } from "../../providers/index.ts";
import { relayUpstreamError } from "../../pipeline/upstream_errors.ts";
import { CountTokensRequest, MessagesRequest } from "./schema.ts";
import { streamErrorEvent } from "./stream.ts";

function forwardedHeaders(req: Request): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of ["anthropic-version", "anthropic-beta"]) {
    const value = req.headers.get(name);
    if (value) headers[name] = value;
  }
  return headers;
}

export const createMessage: Handler = async (ctx) => {
  const body = await readJsonObject(ctx.req, ctx.services.config.maxBodyBytes);
  const request = validate(MessagesRequest, body.value);
  const model = resolveModel(ctx, request.model, "messages");
  return passThrough({
    ctx,
    format: "anthropic",
    endpoint: "messages",
    model,
    inputChars: body.text.length,
    maxOutputTokens: request.max_tokens,
    stream: request.stream === true,
    call: {
      path: "/v1/messages",
      body: withUpstreamModel(body, model),
      headers: forwardedHeaders(ctx.req),
    },
    usageFromJson: (json) => anthropicUsage((json as { usage?: unknown }).usage),
    meter: messagesMeter,
    errorTail: streamErrorEvent,
  });
};

/**
 * Token counting, free of charge: the upstream's own count where it has one, otherwise a local
 * estimate (one token per four characters of the request's text), marked by the response header
 * `x-switchyard-token-count: estimate`.
 */
export const countTokens: Handler = async (ctx) => {
  const body = await readJsonObject(ctx.req, ctx.services.config.maxBodyBytes);
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
      ctx.services.config.upstreamTimeoutMs,
    );
    if (upstream.ok) {
      return new Response(upstream.body, {
        headers: { "content-type": "application/json", "x-switchyard-token-count": "upstream" },
      });
    }
    if (upstream.status !== 404) {
      return await relayUpstreamError(upstream, "anthropic");
    }
    await upstream.body?.cancel();
  }
  return jsonResponse(
    {
      input_tokens: estimateTextTokens([body.value.system, body.value.messages, body.value.tools]),
    },
    200,
    {
      "x-switchyard-token-count": "estimate",
    },
  );
};
