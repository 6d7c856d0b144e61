/**
 * `POST /v1/alpha/search`: the standalone web search Codex calls (`xai.md` §4.1), request
 * `{id, model, input, commands, settings, …}` → `{output, encrypted_output}`. Forwarded to the
 * model's OpenAI-type upstream and billed per call (the model's `call` price).
 */
import * as v from "valibot";
import type { Handler } from "../context.ts";
import { readJsonObject } from "../http/body.ts";
import { validate } from "../http/validate.ts";
import { emptyUsage } from "../billing/price.ts";
import type { Call } from "../pipeline/call.ts";
import { routeCall } from "../pipeline/route.ts";
import { withUpstreamModel } from "../http/forwarded_body.ts";
import { reaches, resolveModel } from "../pipeline/resolve.ts";
import type { ResolvedModel } from "../catalog/catalog.ts";

export const SearchRequest = v.looseObject({
  id: v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty")),
  model: v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty")),
  input: v.optional(v.union(
    [v.string(), v.array(v.unknown())],
    "must be a string or an array of input items",
  )),
  commands: v.optional(v.looseObject({}, "must be an object")),
  settings: v.optional(v.looseObject({}, "must be an object")),
});

const ONE_CALL = { ...emptyUsage(), searchCalls: 1 };

export const search: Handler = async (ctx) => {
  const body = await readJsonObject(ctx.req, ctx.services.config);
  const request = validate(SearchRequest, body.value);
  const model = resolveModel(ctx, request.model, "search");
  const build = (m: ResolvedModel): Call => ({
    ctx,
    format: "openai",
    endpoint: "search",
    model: m,
    units: ONE_CALL,
    stream: false,
    call: () => ({ path: "/alpha/search", body: withUpstreamModel(body, m) }),
    usageFromJson: () => ONE_CALL,
  });
  return await routeCall(ctx, model, build, true, undefined, reaches("search"));
};
