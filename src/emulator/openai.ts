/**
 * What every OpenAI-shaped endpoint of the emulator shares (`openai-other.md`,
 * `openai-responses.md`): OpenAI's error envelope (a 429 with `retry-after`), the faults a prompt
 * asks for (`text.ts` directives: a status, a full context window), the error event a stream ends
 * with at a rate limit, the 404 for a model the OpenAI-shaped vendors do not serve, and the
 * service tier an answer reports.
 */
import type { Directives } from "./text.ts";

type Json = Record<string, unknown>;

/** OpenAI's error envelope. */
export function openaiError(status: number, message: string): Response {
  const type = status === 429
    ? "requests"
    : status >= 500
    ? "server_error"
    : "invalid_request_error";
  const code = status === 429
    ? "rate_limit_exceeded"
    : status === 401
    ? "invalid_api_key"
    : status === 404
    ? "model_not_found"
    : null;
  return Response.json({ error: { message, type, param: null, code } }, {
    status,
    headers: status === 429 ? { "retry-after": "1" } : {},
  });
}

const MESSAGES: Record<number, string> = {
  400: "Invalid request (emulated).",
  404: "The model does not exist or you do not have access to it.",
  429: "Rate limit reached for requests (emulated).",
  500: "The server had an error while processing your request.",
  503: "The engine is currently overloaded, please try again later.",
};

/** The emulated operator's organization, named in rate-limit messages as OpenAI does. */
export const EMULATED_ORG = "org-EmuLat3dOperat0r";

/** The `error` event a stream ends with when the provider hits a limit mid-stream. */
export function streamRateLimit(model: unknown): Json {
  return {
    type: "error",
    code: "rate_limit_exceeded",
    message:
      `Rate limit reached for ${model} in organization ${EMULATED_ORG} on tokens per min (TPM).`,
    param: null,
  };
}

/** Fault by directive: an error response, or undefined to go on. */
export function openaiFault(d: Directives, model?: unknown): Response | undefined {
  if (d.context) {
    return Response.json({
      error: {
        message:
          "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
        type: "invalid_request_error",
        param: "messages",
        code: "context_length_exceeded",
      },
    }, { status: 400 });
  }
  if (d.status === 429 && typeof model === "string") {
    return openaiError(
      429,
      `Rate limit reached for ${model} in organization ${EMULATED_ORG} on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.`,
    );
  }
  if (d.status) return openaiError(d.status, MESSAGES[d.status] ?? `Emulated error ${d.status}.`);
}

/** Model families the OpenAI-shaped vendors serve; others get 404 as the real services answer. */
const KNOWN_MODELS = /^(gpt-|o\d|chatgpt-|codex-|computer-use|text-embedding-|dall-e|grok-)/;

/** The 404 for a model the upstream does not serve, or undefined. */
export function unknownModel(model: unknown): Response | undefined {
  if (typeof model !== "string" || KNOWN_MODELS.test(model)) return undefined;
  return openaiError(
    404,
    `The model \`${model}\` does not exist or you do not have access to it.`,
  );
}

/** The tier a response reports: the one asked for when the emulated project offers it. */
export function servedTier(asked: unknown): string {
  return asked === "priority" || asked === "flex" ? asked : "default";
}
