/**
 * Model listings: `GET /v1/models`, `GET /v1/models/{model}` and Gemini's `GET /v1beta/models`,
 * `GET /v1beta/models/{model}`, each in its protocol's own shape (see `model_shapes.ts`). Free of
 * charge (no ledger entry); they count toward the key's RPM like every authenticated route.
 *
 * A listing holds the catalog's concrete ids (`Catalog.listed`: providers without a key left out)
 * that its protocol's clients can call: OpenAI clients every model of the OpenAI-style endpoints,
 * Anthropic clients the text models, Gemini clients the text models and Gemini's embedding models.
 * Retrieving takes any id the catalog resolves (a dated snapshot of a pattern too); an unknown id,
 * one of a disabled provider or one the protocol cannot call is a 404.
 *
 * `/v1/models` is shared by three protocols, told apart by the request's headers, as their SDKs
 * send them: `x-goog-api-key` → Gemini (`@google/genai` on API version `v1`); `anthropic-version`
 * or `x-api-key` → Anthropic; otherwise OpenAI. The route accepts any of the three keys.
 */
import type { Handler, RequestContext } from "../context.ts";
import type { ModelKind, ProviderEntry } from "../catalog/catalog.ts";
import { type ErrorFormat, errorResponse, GatewayError } from "../http/errors.ts";
import { jsonResponse } from "../http/json.ts";
import { pathModel } from "../http/path_model.ts";
import { principalMayCall } from "../pipeline/resolve.ts";
import { type Endpoint, serves } from "../pipeline/resolve.ts";
import {
  anthropicModel,
  anthropicPage,
  createdOf,
  geminiModel,
  geminiPage,
  type ModelInfo,
  openaiList,
  openaiModel,
} from "./model_shapes.ts";

/** The endpoints each protocol's clients call models on. */
const REACH: Record<ErrorFormat, Endpoint[]> = {
  openai: ["text", "embeddings", "images", "videos"],
  anthropic: ["text"],
  google: ["text", "embedContent"],
};

/** Gemini's method names for the endpoints that serve a model. */
const GEMINI_METHODS: Partial<Record<Endpoint, string[]>> = {
  text: ["generateContent", "streamGenerateContent", "countTokens"],
  embedContent: ["embedContent", "batchEmbedContents"],
};

const SHAPES: Record<
  ErrorFormat,
  {
    list: (models: ModelInfo[], query: URLSearchParams) => unknown;
    model: (m: ModelInfo) => unknown;
  }
> = {
  openai: { list: openaiList, model: openaiModel },
  anthropic: { list: anthropicPage, model: anthropicModel },
  google: { list: geminiPage, model: geminiModel },
};

/** The protocol a request on a shared path speaks, by the headers its SDK sends. */
export function dialectOf(req: Request): ErrorFormat {
  const headers = req.headers;
  if (headers.has("x-goog-api-key")) return "google";
  if (headers.has("anthropic-version") || headers.has("x-api-key")) return "anthropic";
  return "openai";
}

/** How `dialect` describes a model, or undefined when its clients cannot call it. */
function describe(
  dialect: ErrorFormat,
  id: string,
  kind: ModelKind,
  provider: ProviderEntry,
  outputTokenLimit: number | undefined,
): ModelInfo | undefined {
  const reached = REACH[dialect].filter((endpoint) => serves(endpoint, kind, provider));
  if (!reached.length) return undefined;
  return {
    id,
    provider: provider.name,
    created: createdOf(id),
    methods: reached.flatMap((endpoint) => GEMINI_METHODS[endpoint] ?? []),
    outputTokenLimit,
  };
}

/** Every model `dialect`'s clients can call, in catalog order. */
function listed(ctx: RequestContext, dialect: ErrorFormat): ModelInfo[] {
  return ctx.services.config.catalog.listed().flatMap(({ id, entry, provider }) =>
    // A key sees only the models it may call.
    principalMayCall(ctx, id)
      ? describe(dialect, id, entry.kind, provider, entry.maxOutputTokens) ?? []
      : []
  );
}

/** The model the path names, as `dialect` describes it; 404 when its clients cannot call it. */
function found(ctx: RequestContext, dialect: ErrorFormat): ModelInfo {
  const id = pathModel(ctx.params);
  ctx.log.model = id;
  const resolution = ctx.services.config.catalog.resolve(id);
  const resolved = resolution.ok && principalMayCall(ctx, id) ? resolution.model : undefined;
  const model = resolved &&
    describe(dialect, id, resolved.kind, resolved.provider, resolved.maxOutputTokens);
  if (!model) {
    throw new GatewayError(
      404,
      `The model \`${id}\` does not exist or you do not have access to it.`,
      { code: "model_not_found", param: "model" },
    );
  }
  ctx.log.provider = model.provider;
  return model;
}

/**
 * The answer in `dialect`; the route's own errors (in `routeFormat`) are left to the server, the
 * others are written here in the dialect's envelope. Anthropic answers carry `request-id`.
 */
function answer(
  ctx: RequestContext,
  dialect: ErrorFormat,
  routeFormat: ErrorFormat,
  build: () => unknown,
): Response {
  const headers: Record<string, string> = dialect === "anthropic"
    ? { "request-id": ctx.requestId }
    : {};
  try {
    return jsonResponse(build(), 200, headers);
  } catch (error) {
    if (!(error instanceof GatewayError) || dialect === routeFormat) throw error;
    const response = errorResponse(dialect, error, ctx.requestId);
    for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
    return response;
  }
}

/** `GET /v1/models`: the listing in the caller's protocol. */
export const listModels: Handler = (ctx) => {
  const dialect = dialectOf(ctx.req);
  return answer(
    ctx,
    dialect,
    "openai",
    () => SHAPES[dialect].list(listed(ctx, dialect), ctx.url.searchParams),
  );
};

/** `GET /v1/models/{model}`: one model in the caller's protocol. */
export const getModel: Handler = (ctx) => {
  const dialect = dialectOf(ctx.req);
  return answer(ctx, dialect, "openai", () => SHAPES[dialect].model(found(ctx, dialect)));
};

/** `GET /v1beta/models`: Gemini's listing. */
export const listGeminiModels: Handler = (ctx) =>
  answer(ctx, "google", "google", () => geminiPage(listed(ctx, "google"), ctx.url.searchParams));

/** `GET /v1beta/models/{model}`: one model in Gemini's shape. */
export const getGeminiModel: Handler = (ctx) =>
  answer(ctx, "google", "google", () => geminiModel(found(ctx, "google")));
