/**
 * Model resolution as a pipeline step: the catalog's answer for the client's protocol, or an error
 * in the route's format — unknown model 404, provider without a key 503, a model whose provider
 * speaks another protocol 400 with a pointer to the endpoint that serves it.
 */
import type { ProviderEntry, ResolvedModel } from "../catalog/catalog.ts";
import type { RequestContext } from "../context.ts";
import { GatewayError } from "../http/errors.ts";

/** The client protocols whose calls go to a model, with the provider types that serve each. */
const SERVED_BY: Record<ClientProtocol, { path: string; types: ProviderEntry["type"][] }> = {
  responses: { path: "/v1/responses", types: ["openai", "xai"] },
  messages: { path: "/v1/messages", types: ["anthropic"] },
  generate: { path: "/v1beta/models/{model}:generateContent", types: ["gemini"] },
};

export type ClientProtocol = "responses" | "messages" | "generate";

/** Resolves `id` for a call in `protocol`, or throws the error the client should see. */
export function resolveModel(
  ctx: RequestContext,
  id: string,
  protocol: ClientProtocol,
): ResolvedModel {
  const resolution = ctx.services.config.catalog.resolve(id);
  ctx.log.model = id;
  if (!resolution.ok) {
    if (resolution.reason === "disabled") {
      throw new GatewayError(
        503,
        `The model \`${id}\` is served by provider ${resolution.provider}, which has no upstream key configured on this gateway.`,
        { code: "provider_disabled", param: "model" },
      );
    }
    throw new GatewayError(
      404,
      `The model \`${id}\` does not exist or you do not have access to it.`,
      { code: "model_not_found", param: "model" },
    );
  }
  const model = resolution.model;
  ctx.log.provider = model.provider.name;
  if (!SERVED_BY[protocol].types.includes(model.provider.type)) {
    const home = Object.values(SERVED_BY).find((s) => s.types.includes(model.provider.type))!;
    throw new GatewayError(
      400,
      `The model \`${id}\` is not served on ${SERVED_BY[protocol].path}; use ${home.path} for it.`,
      { code: "model_not_supported", param: "model" },
    );
  }
  return model;
}
