/**
 * Model resolution as a pipeline step: the catalog's answer for the client's protocol, or an error
 * in the route's format — unknown model 404, provider without a key 503, a model of another kind
 * (or an endpoint its provider does not offer) 400 with a pointer to the endpoint that serves it.
 */
import {
  isModelId,
  MAX_MODEL_ID,
  type ModelKind,
  type ProviderEntry,
  type ResolvedModel,
} from "../catalog/catalog.ts";
import type { RequestContext } from "../context.ts";
import { GatewayError } from "../http/errors.ts";
import { mayCall } from "../auth/model_access.ts";

const byType = (...types: ProviderEntry["type"][]) => (p: ProviderEntry) => types.includes(p.type);

/**
 * The endpoints that call a model: the kind of model each serves and the providers that can serve
 * it. The first entries are the models' home endpoints, named in the error for a wrong endpoint.
 */
const ENDPOINTS: Record<Endpoint, { path: string; kind: ModelKind; serves: Serves }> = {
  // Every text model is reachable from every text route (translated when its provider speaks
  // another protocol).
  text: { path: "/v1/responses", kind: "text", serves: () => true },
  embeddings: { path: "/v1/embeddings", kind: "embedding", serves: byType("openai") },
  embedContent: {
    path: "/v1beta/models/{model}:embedContent",
    kind: "embedding",
    serves: byType("gemini"),
  },
  images: { path: "/v1/images/generations", kind: "image", serves: byType("openai", "xai") },
  videos: { path: "/v1/videos/generations", kind: "video", serves: byType("xai") },
  compact: { path: "/v1/responses/compact", kind: "text", serves: byType("openai") },
  search: { path: "/v1/alpha/search", kind: "text", serves: byType("openai") },
};

type Serves = (provider: ProviderEntry) => boolean;

/** The gateway endpoints that call a model (`embedContent`: Gemini's embedding routes). */
export type Endpoint =
  | "text"
  | "embeddings"
  | "embedContent"
  | "images"
  | "videos"
  | "compact"
  | "search";

/** Whether `endpoint` can send a call to `provider` (a deployment or fallback the router tries). */
export function reaches(endpoint: Endpoint): (provider: ProviderEntry) => boolean {
  return ENDPOINTS[endpoint].serves;
}

/** Whether `endpoint` serves a model of `kind` whose provider is `provider` (for listings). */
export function serves(endpoint: Endpoint, kind: ModelKind, provider: ProviderEntry): boolean {
  const served = ENDPOINTS[endpoint];
  return served.kind === kind && served.serves(provider);
}

/** Resolves `id` for a call to `endpoint`, or throws the error the client should see. */
export function resolveModel(
  ctx: RequestContext,
  id: string,
  endpoint: Endpoint,
): ResolvedModel {
  ctx.log.model = id;
  if (id.length > MAX_MODEL_ID) {
    throw new GatewayError(400, `Invalid 'model': must be at most ${MAX_MODEL_ID} characters.`, {
      param: "model",
      code: "invalid_value",
    });
  }
  // Ids reach stricter grammars than JSON (a response header, metric labels, upstream URLs).
  if (!isModelId(id)) {
    throw new GatewayError(
      400,
      "Invalid 'model': a model id is visible ASCII characters only (letters, digits and punctuation; no spaces, control or non-ASCII characters).",
      { param: "model", code: "invalid_value" },
    );
  }
  const resolution = ctx.services.config.catalog.resolve(id);
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
  if (!principalMayCall(ctx, id)) {
    throw new GatewayError(403, `This API key may not use the model \`${id}\`.`, {
      code: "model_not_allowed",
      param: "model",
    });
  }
  ctx.log.provider = model.provider.name;
  const served = ENDPOINTS[endpoint];
  if (!serves(endpoint, model.kind, model.provider)) {
    const home = Object.values(ENDPOINTS).find((e) =>
      e.kind === model.kind && e.serves(model.provider)
    );
    throw new GatewayError(
      400,
      `The model \`${id}\` is not served on ${served.path}${
        home ? `; use ${home.path} for it` : ""
      }.`,
      { code: "model_not_supported", param: "model" },
    );
  }
  return model;
}

/** Whether the request's key (and its account) may call model `id` (see `auth/model_access.ts`). */
export function principalMayCall(ctx: RequestContext, id: string): boolean {
  const principal = ctx.principal;
  if (!principal) return true;
  return mayCall(principal.limits.models, principal.accountLimits.models, id);
}
