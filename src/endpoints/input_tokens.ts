/**
 * `POST /v1/responses/input_tokens` (`openai-responses.md` §7): `{object:"response.input_tokens",
 * input_tokens}`, free of charge (the call still counts toward the key's RPM). OpenAI models get
 * the upstream's own count; any other Responses model, or a body without `model`, a local
 * estimate marked by the header `x-switchyard-token-count: estimate`.
 */
import * as v from "valibot";
import type { Handler } from "../context.ts";
import { readJsonObject } from "../http/body.ts";
import { jsonResponse } from "../http/json.ts";
import { validate } from "../http/validate.ts";
import { estimateInput } from "../billing/estimate.ts";
import { withUpstreamModel } from "../pipeline/passthrough.ts";
import { resolveModel } from "../pipeline/resolve.ts";
import { responsesState } from "../pipeline/upstream_objects.ts";
import { relayUpstreamError } from "../pipeline/upstream_errors.ts";
import { send, upstreamDeadlines } from "../providers/index.ts";

export const InputTokensRequest = v.looseObject({
  model: v.optional(v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty"))),
  input: v.optional(v.union(
    [v.string(), v.array(v.unknown())],
    "must be a string or an array of input items",
  )),
  instructions: v.optional(v.nullable(v.string("must be a string"))),
});

export const countInputTokens: Handler = async (ctx) => {
  const body = await readJsonObject(ctx.req, ctx.services.config);
  const request = validate(InputTokensRequest, body.value);
  const model = request.model ? resolveModel(ctx, request.model, "responses") : undefined;
  // Counting another account's conversation would tell its size.
  responsesState(ctx, body.value);
  if (model?.provider.type === "openai") {
    const upstream = await send(
      model.provider,
      { path: "/responses/input_tokens", body: withUpstreamModel(body, model) },
      new AbortController(),
      upstreamDeadlines(ctx.services.config),
    );
    if (!upstream.ok) return await relayUpstreamError(upstream, "openai", model);
    return new Response(upstream.body, {
      headers: { "content-type": "application/json", "x-switchyard-token-count": "upstream" },
    });
  }
  const { instructions, input, tools } = body.value;
  return jsonResponse(
    {
      object: "response.input_tokens",
      input_tokens: estimateInput([instructions, input, tools]).typical,
    },
    200,
    { "x-switchyard-token-count": "estimate" },
  );
};
