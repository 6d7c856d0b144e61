/**
 * What each provider family speaks, as data (pure): its wire protocols in order of preference,
 * where each is served and how it is authenticated. The request path picks a surface by protocol;
 * a client protocol the provider does not speak is translated to the first one.
 */
import type { ProviderType } from "./kinds.ts";
import type { Surface } from "./catalog.ts";

/** The `anthropic-version` every current client sends. */
export const ANTHROPIC_VERSION = "2023-06-01";

const BEARER = { header: "authorization", prefix: "Bearer " };

/**
 * The surfaces of a provider of `type` at `baseUrl`: OpenAI and xAI speak Responses (preferred)
 * and chat completions; Anthropic-type vendors speak Messages, and chat completions at their
 * `chatBaseUrl` when one is given; Gemini speaks generateContent; an `openai-compatible` server
 * only chat completions. No auth header is sent for a provider without a key (a local server).
 */
export function surfacesOf(
  type: ProviderType,
  baseUrl: string,
  chatBaseUrl?: string,
  headers?: Record<string, string>,
): Surface[] {
  const extra = headers && Object.keys(headers).length ? { headers } : {};
  switch (type) {
    case "openai":
    case "xai":
      return [
        { protocol: "responses", baseUrl, auth: BEARER, ...extra },
        { protocol: "chat", baseUrl, auth: BEARER, ...extra },
      ];
    case "anthropic":
      return [
        {
          protocol: "messages",
          baseUrl,
          auth: { header: "x-api-key" },
          headers: { "anthropic-version": ANTHROPIC_VERSION, ...headers },
        },
        ...(chatBaseUrl
          ? [{ protocol: "chat" as const, baseUrl: chatBaseUrl, auth: BEARER, ...extra }]
          : []),
      ];
    case "gemini":
      return [{ protocol: "generate", baseUrl, auth: { header: "x-goog-api-key" }, ...extra }];
    case "openai-compatible":
      return [{ protocol: "chat", baseUrl, auth: BEARER, ...extra }];
  }
}
