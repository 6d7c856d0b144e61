/**
 * THE routing table: every public path with its method, auth scheme, error format and handler.
 * Paths are literal text with `:name` segments (see `router.ts`); a literal colon is written `\\:`.
 */
import type { AuthScheme } from "./auth/authenticate.ts";
import type { Handler } from "./context.ts";
import type { ErrorFormat } from "./http/errors.ts";
import { getHealth, getReady } from "./endpoints/health.ts";
import { getUsage } from "./endpoints/usage.ts";
import { getMetrics } from "./endpoints/metrics.ts";
import * as admin from "./endpoints/admin.ts";
import { getDashboard } from "./endpoints/dashboard.ts";
import { getOpenApi, OPENAPI_PATH } from "./endpoints/openapi.ts";
import { listAlerts } from "./endpoints/alerts.ts";
import { PROTOCOLS } from "./protocols/index.ts";
import { textCall } from "./pipeline/text_call.ts";
import { responsesSocket } from "./pipeline/responses_socket.ts";
import { createEmbeddings } from "./endpoints/embeddings.ts";
import { compactResponse } from "./endpoints/compact.ts";
import { search } from "./endpoints/search.ts";
import { createImage, editImage } from "./endpoints/images.ts";
import { createVideoEdit, createVideoGeneration, getVideo } from "./endpoints/videos.ts";
import { countCall } from "./pipeline/count_tokens.ts";
import {
  dialectOf,
  getGeminiModel,
  getModel,
  listGeminiModels,
  listModels,
} from "./endpoints/models.ts";
import { batchEmbedContents, embedContent } from "./endpoints/gemini_embeddings.ts";

export interface Route {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  auth: AuthScheme;
  /**
   * The protocol whose error envelope this route answers with; a function for the paths several
   * protocols share, decided by what the request carries.
   */
  errors: ErrorFormat | ((req: Request) => ErrorFormat);
  handle: Handler;
  /**
   * False: the request is authenticated but not counted against the key's requests per minute
   * (a WebSocket's upgrade: each of its turns is).
   */
  perMinute?: false;
}

export const routes: Route[] = [
  { method: "GET", path: "/healthz", auth: "none", errors: "openai", handle: getHealth },
  { method: "GET", path: "/readyz", auth: "none", errors: "openai", handle: getReady },
  // The page holds no data: it loads without a token and asks the admin API with one.
  { method: "GET", path: "/admin", auth: "none", errors: "openai", handle: getDashboard },
  // The admin token is checked by the handlers (it is not an API key).
  { method: "GET", path: "/metrics", auth: "none", errors: "openai", handle: getMetrics },
  ...([
    ["GET", "/admin/api/keys", admin.listKeys],
    ["POST", "/admin/api/keys", admin.createKeyRoute],
    ["GET", "/admin/api/keys/:id", admin.getKey],
    ["PATCH", "/admin/api/keys/:id", admin.updateKeyRoute],
    ["DELETE", "/admin/api/keys/:id", admin.revokeKey],
    ["POST", "/admin/api/keys/:id/rotate", admin.rotateKeyRoute],
    ["GET", "/admin/api/accounts", admin.listAccounts],
    ["POST", "/admin/api/accounts", admin.createAccount],
    ["PATCH", "/admin/api/accounts/:name", admin.updateAccountRoute],
    ["POST", "/admin/api/accounts/:name/credit", admin.creditAccountRoute],
    ["GET", "/admin/api/accounts/:name/usage", admin.accountUsage],
    ["GET", "/admin/api/ledger", admin.ledger],
    ["GET", "/admin/api/usage", admin.totalUsage],
    // The admin API's OpenAPI document: no data in it, so no token (404 when the API is off).
    ["GET", OPENAPI_PATH, getOpenApi],
    ["GET", "/admin/api/alerts", listAlerts],
  ] as const).map(([method, path, handle]): Route => ({
    method,
    path,
    auth: "none",
    errors: "openai",
    handle,
  })),
  { method: "GET", path: "/v1/usage", auth: "bearer", errors: "openai", handle: getUsage },
  {
    method: "POST",
    path: "/v1/responses",
    auth: "bearer",
    errors: "openai",
    handle: textCall(PROTOCOLS.responses),
  },
  // The Responses API over WebSocket: the upgrade is authenticated, each turn is a call.
  {
    method: "GET",
    path: "/v1/responses",
    auth: "bearer",
    errors: "openai",
    handle: responsesSocket,
    perMinute: false,
  },
  // The responses-protocol family's auxiliary endpoints (spec §4.1), all Bearer-authenticated.
  ...([
    ["/v1/responses/compact", compactResponse],
    ["/v1/responses/input_tokens", countCall(PROTOCOLS.responses)],
    ["/v1/embeddings", createEmbeddings],
    ["/v1/alpha/search", search],
    ["/v1/images/generations", createImage],
    ["/v1/images/edits", editImage],
    ["/v1/videos/generations", createVideoGeneration],
    ["/v1/videos/edits", createVideoEdit],
  ] as const).map(([path, handle]): Route => ({
    method: "POST",
    path,
    auth: "bearer",
    errors: "openai",
    handle,
  })),
  {
    method: "GET",
    path: "/v1/videos/:request_id",
    auth: "bearer",
    errors: "openai",
    handle: getVideo,
  },
  {
    method: "POST",
    path: "/v1/chat/completions",
    auth: "bearer",
    errors: "openai",
    handle: textCall(PROTOCOLS.chat),
  },
  {
    method: "POST",
    path: "/v1/messages",
    auth: "anthropic",
    errors: "anthropic",
    handle: textCall(PROTOCOLS.messages),
  },
  {
    method: "POST",
    path: "/v1/messages/count_tokens",
    auth: "anthropic",
    errors: "anthropic",
    handle: countCall(PROTOCOLS.messages),
  },
  // The content-generation protocol, under /v1beta (spec) and /v1 (newer @google/genai default).
  ...["/v1beta", "/v1"].flatMap((version): Route[] => [
    {
      method: "POST",
      path: `${version}/models/:model\\:generateContent`,
      auth: "goog",
      errors: "google",
      handle: textCall(PROTOCOLS.generate),
    },
    {
      method: "POST",
      path: `${version}/models/:model\\:streamGenerateContent`,
      auth: "goog",
      errors: "google",
      handle: textCall(PROTOCOLS.generate),
    },
    {
      method: "POST",
      path: `${version}/models/:model\\:countTokens`,
      auth: "goog",
      errors: "google",
      handle: countCall(PROTOCOLS.generate),
    },
    {
      method: "POST",
      path: `${version}/models/:model\\:embedContent`,
      auth: "goog",
      errors: "google",
      handle: embedContent,
    },
    {
      method: "POST",
      path: `${version}/models/:model\\:batchEmbedContents`,
      auth: "goog",
      errors: "google",
      handle: batchEmbedContents,
    },
  ]),
  // Model listings, after the `…/models/{model}:action` routes (the first matching path wins).
  // Gemini's under /v1beta; /v1/models is shared by the three protocols, which the handlers tell
  // apart by the headers their SDKs send (see endpoints/models.ts), so it takes any key.
  {
    method: "GET",
    path: "/v1beta/models",
    auth: "goog",
    errors: "google",
    handle: listGeminiModels,
  },
  {
    method: "GET",
    path: "/v1beta/models/:model",
    auth: "goog",
    errors: "google",
    handle: getGeminiModel,
  },
  { method: "GET", path: "/v1/models", auth: "any", errors: dialectOf, handle: listModels },
  { method: "GET", path: "/v1/models/:model", auth: "any", errors: dialectOf, handle: getModel },
];
