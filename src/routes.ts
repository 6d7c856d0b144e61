/**
 * THE routing table: every public path with its method, auth scheme, error format and handler.
 * Paths are `URLPattern` pathnames; a literal colon is written `\\:`.
 */
import type { AuthScheme } from "./auth/authenticate.ts";
import type { Handler } from "./context.ts";
import type { ErrorFormat } from "./http/errors.ts";
import { getHealth } from "./endpoints/health.ts";
import { getUsage } from "./endpoints/usage.ts";
import { getMetrics } from "./endpoints/metrics.ts";
import { PROTOCOLS } from "./protocols/index.ts";
import { textCall } from "./pipeline/text_call.ts";
import { createEmbeddings } from "./endpoints/embeddings.ts";
import { compactResponse } from "./endpoints/compact.ts";
import { search } from "./endpoints/search.ts";
import { createImage, editImage } from "./endpoints/images.ts";
import { createVideoEdit, createVideoGeneration, getVideo } from "./endpoints/videos.ts";
import { countCall } from "./pipeline/count_tokens.ts";

export interface Route {
  method: "GET" | "POST" | "DELETE";
  path: string;
  auth: AuthScheme;
  /** The protocol whose error envelope this route answers with. */
  errors: ErrorFormat;
  handle: Handler;
}

export const routes: Route[] = [
  { method: "GET", path: "/healthz", auth: "none", errors: "openai", handle: getHealth },
  // The admin token is checked by the handler (not an API key).
  { method: "GET", path: "/metrics", auth: "none", errors: "openai", handle: getMetrics },
  { method: "GET", path: "/v1/usage", auth: "bearer", errors: "openai", handle: getUsage },
  {
    method: "POST",
    path: "/v1/responses",
    auth: "bearer",
    errors: "openai",
    handle: textCall(PROTOCOLS.responses),
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
  ]),
];
