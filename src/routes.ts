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

/** A row of the table: method, path, handler. */
type Row = readonly [Route["method"], string, Handler];

/** The routes of `rows`, in order, all with one auth scheme and error format. */
function group(auth: AuthScheme, errors: Route["errors"], rows: readonly Row[]): Route[] {
  return rows.map(([method, path, handle]) => ({ method, path, auth, errors, handle }));
}

export const routes: Route[] = [
  ...group("none", "openai", [
    ["GET", "/healthz", getHealth],
    ["GET", "/readyz", getReady],
    // The page holds no data: it loads without a token and asks the admin API with one.
    ["GET", "/admin", getDashboard],
    // The admin token is checked by the handlers (it is not an API key).
    ["GET", "/metrics", getMetrics],
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
  ]),
  ...group("bearer", "openai", [
    ["GET", "/v1/usage", getUsage],
    ["POST", "/v1/responses", textCall(PROTOCOLS.responses)],
  ]),
  // The Responses API over WebSocket: the upgrade is authenticated, each turn is a call.
  {
    method: "GET",
    path: "/v1/responses",
    auth: "bearer",
    errors: "openai",
    handle: responsesSocket,
    perMinute: false,
  },
  ...group("bearer", "openai", [
    // The responses-protocol family's auxiliary endpoints (spec §4.1), all Bearer-authenticated.
    ["POST", "/v1/responses/compact", compactResponse],
    ["POST", "/v1/responses/input_tokens", countCall(PROTOCOLS.responses)],
    ["POST", "/v1/embeddings", createEmbeddings],
    ["POST", "/v1/alpha/search", search],
    ["POST", "/v1/images/generations", createImage],
    ["POST", "/v1/images/edits", editImage],
    ["POST", "/v1/videos/generations", createVideoGeneration],
    ["POST", "/v1/videos/edits", createVideoEdit],
    ["GET", "/v1/videos/:request_id", getVideo],
    ["POST", "/v1/chat/completions", textCall(PROTOCOLS.chat)],
  ]),
  ...group("anthropic", "anthropic", [
    ["POST", "/v1/messages", textCall(PROTOCOLS.messages)],
    ["POST", "/v1/messages/count_tokens", countCall(PROTOCOLS.messages)],
  ]),
  // The content-generation protocol, under /v1beta (spec) and /v1 (newer @google/genai default).
  ...["/v1beta", "/v1"].flatMap((version) =>
    group("goog", "google", [
      ["POST", `${version}/models/:model\\:generateContent`, textCall(PROTOCOLS.generate)],
      ["POST", `${version}/models/:model\\:streamGenerateContent`, textCall(PROTOCOLS.generate)],
      ["POST", `${version}/models/:model\\:countTokens`, countCall(PROTOCOLS.generate)],
      ["POST", `${version}/models/:model\\:embedContent`, embedContent],
      ["POST", `${version}/models/:model\\:batchEmbedContents`, batchEmbedContents],
    ])
  ),
  // Model listings, after the `…/models/{model}:action` routes (the first matching path wins).
  // Gemini's under /v1beta; /v1/models is shared by the three protocols, which the handlers tell
  // apart by the headers their SDKs send (see endpoints/models.ts), so it takes any key.
  ...group("goog", "google", [
    ["GET", "/v1beta/models", listGeminiModels],
    ["GET", "/v1beta/models/:model", getGeminiModel],
  ]),
  ...group("any", dialectOf, [
    ["GET", "/v1/models", listModels],
    ["GET", "/v1/models/:model", getModel],
  ]),
];
