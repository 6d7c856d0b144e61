/** Model resolution as a pipeline step: the catalog's answer, or a 404/503 in the route's format. */
import type { ResolvedModel } from "../catalog/catalog.ts";
import type { RequestContext } from "../context.ts";
import { GatewayError } from "../http/errors.ts";

/** Resolves `id` or throws: unknown → 404 naming the model; provider disabled → 503. */
export function resolveModel(ctx: RequestContext, id: string, param = "model"): ResolvedModel {
  const resolution = ctx.services.config.catalog.resolve(id);
  ctx.log.model = id;
  if (resolution.ok) {
    ctx.log.provider = resolution.model.provider.name;
    return resolution.model;
  }
  if (resolution.reason === "disabled") {
    throw new GatewayError(
      503,
      `The model \`${id}\` is served by provider ${resolution.provider}, which has no upstream key configured on this gateway.`,
      { code: "provider_disabled", param },
    );
  }
  throw new GatewayError(
    404,
    `The model \`${id}\` does not exist or you do not have access to it.`,
    { code: "model_not_found", param },
  );
}
