/**
 * `POST /v1/responses/compact` (`openai-responses.md` §8): context compaction by the OpenAI
 * upstream, billed by the tokens in its `usage`. Models of providers that cannot compact get a 400
 * naming the endpoint that serves them (the gateway does not compact by itself yet).
 */
import { responsesUsageView } from "../protocols/responses/usage.ts";
import * as v from "valibot";
import type { Handler } from "../context.ts";
import { readJsonObject } from "../http/body.ts";
import { validate } from "../http/validate.ts";
import { openaiUsage } from "../billing/usage.ts";
import { estimateInput } from "../billing/estimate.ts";
import type { Call } from "../pipeline/call.ts";
import { routeCall } from "../pipeline/route.ts";
import { withUpstreamModel } from "../http/forwarded_body.ts";
import { reaches, resolveModel } from "../pipeline/resolve.ts";
import type { ResolvedModel } from "../catalog/catalog.ts";
import { responsesNames, responsesState } from "../protocols/responses/state.ts";
import { callInput, continuedProvider, loadNamedState } from "../pipeline/resolve.ts";

export const CompactRequest = v.looseObject({
  model: v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty")),
  input: v.optional(v.union(
    [v.string(), v.array(v.unknown())],
    "must be a string or an array of input items",
  )),
  instructions: v.optional(v.nullable(v.string("must be a string"))),
  service_tier: v.optional(v.nullable(v.string("must be a string"))),
});

export const compactResponse: Handler = async (ctx) => {
  const body = await readJsonObject(ctx.req, ctx.services.config);
  const request = validate(CompactRequest, body.value);
  const model = resolveModel(ctx, request.model, "compact");
  const names = responsesNames(body.value);
  await loadNamedState(ctx, names);
  const input = callInput(ctx);
  const state = responsesState(input, body.value);
  const build = (m: ResolvedModel): Call => ({
    ctx,
    format: "openai",
    endpoint: "compact",
    model: m,
    tokens: {
      input: estimateInput(body.value),
      contextTokens: state.contextTokens,
      serviceTier: request.service_tier ?? undefined,
      tierField: "service_tier",
      output: true,
      cappable: false,
      minCap: 1,
      tools: [],
    },
    stream: false,
    call: () => ({ path: "/responses/compact", body: withUpstreamModel(body, m) }),
    usageFromJson: (json) => openaiUsage((json as { usage?: unknown }).usage),
    showUsage: responsesUsageView,
  });
  // A compaction of a stored response goes to the provider holding it.
  const pin = continuedProvider(ctx, names);
  return await routeCall(ctx, model, build, true, pin, reaches("compact"));
};
