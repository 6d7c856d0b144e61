/**
 * Errors in each client protocol's own shape. The route decides the format; handlers and pipeline
 * steps throw `GatewayError` with a status and a message and never build bodies themselves.
 */

/** The three error envelopes clients understand. */
export type ErrorFormat = "openai" | "anthropic" | "google";

export interface ErrorOptions {
  /** OpenAI `code` (e.g. `model_not_found`); defaults by status. */
  code?: string;
  /** OpenAI `param`: the request field at fault. */
  param?: string;
  /** Overrides the protocol's error type (Anthropic `type`, Google `status`, OpenAI `type`). */
  type?: string;
  /** Extra response headers (e.g. `retry-after`). */
  headers?: Record<string, string>;
  /** Anthropic `error.details` (e.g. `{error_code: "thread_not_found"}`); other formats have none. */
  details?: Record<string, unknown>;
}

/** Whole seconds for a `retry-after` header, at least 1, for a wait of `ms`. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** Go-style duration as OpenAI sends it in `x-ratelimit-reset-*`: `0s`, `250ms`, `12s`, `1m0s`. */
export function formatDuration(ms: number): string {
  if (ms <= 0) return "0s";
  if (ms < 1000) return `${Math.ceil(ms)}ms`;
  const seconds = Math.ceil(ms / 1000);
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m${seconds % 60}s`;
}

/** An error the pipeline raises on purpose; rendered in the route's protocol format. */
export class GatewayError extends Error {
  override name = "GatewayError";
  constructor(readonly status: number, message: string, readonly options: ErrorOptions = {}) {
    super(message);
  }
}

const OPENAI_TYPE: Record<number, string> = {
  402: "insufficient_quota",
  403: "permission_error",
  429: "requests",
};
const OPENAI_CODE: Record<number, string> = {
  401: "invalid_api_key",
  402: "insufficient_balance",
  405: "method_not_allowed",
  408: "request_timeout",
  413: "request_too_large",
  415: "unsupported_media_type",
  429: "rate_limit_exceeded",
  431: "request_header_fields_too_large",
  502: "upstream_error",
  504: "upstream_timeout",
};
const ANTHROPIC_TYPE: Record<number, string> = {
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  408: "timeout_error",
  413: "request_too_large",
  429: "rate_limit_error",
  431: "request_too_large",
  500: "api_error",
  502: "api_error",
  503: "api_error",
  504: "timeout_error",
  529: "overloaded_error",
};
const GOOGLE_STATUS: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  402: "FAILED_PRECONDITION",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  405: "UNIMPLEMENTED",
  408: "DEADLINE_EXCEEDED",
  409: "ABORTED",
  413: "INVALID_ARGUMENT",
  415: "INVALID_ARGUMENT",
  429: "RESOURCE_EXHAUSTED",
  499: "CANCELLED",
  500: "INTERNAL",
  501: "UNIMPLEMENTED",
  502: "UNAVAILABLE",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

/** The JSON error body for `status` in `format`. */
export function errorBody(
  format: ErrorFormat,
  status: number,
  message: string,
  options: ErrorOptions = {},
  requestId?: string,
): unknown {
  switch (format) {
    case "openai":
      return {
        error: {
          message,
          type: options.type ?? OPENAI_TYPE[status] ??
            (status >= 500 ? "server_error" : "invalid_request_error"),
          param: options.param ?? null,
          code: options.code ?? OPENAI_CODE[status] ?? null,
        },
      };
    case "anthropic":
      return {
        type: "error",
        error: {
          type: options.type ?? ANTHROPIC_TYPE[status] ??
            (status >= 500 ? "api_error" : "invalid_request_error"),
          message,
          ...(options.details ? { details: options.details } : {}),
        },
        ...(requestId ? { request_id: requestId } : {}),
      };
    case "google":
      return {
        error: {
          code: status,
          message,
          status: options.type ?? GOOGLE_STATUS[status] ??
            (status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT"),
        },
      };
  }
}

/** A complete JSON error response. */
export function errorResponse(
  format: ErrorFormat,
  error: GatewayError,
  requestId?: string,
): Response {
  const body = errorBody(format, error.status, error.message, error.options, requestId);
  return new Response(JSON.stringify(body), {
    status: error.status,
    headers: { "content-type": "application/json", ...error.options.headers },
  });
}

/** The error format for a path no route matched (so even a 404 speaks the client's protocol). */
export function formatForPath(pathname: string): ErrorFormat {
  if (pathname.startsWith("/v1beta/") || /^\/v1\/models\/[^/]+:/.test(pathname)) return "google";
  if (pathname === "/v1/messages" || pathname.startsWith("/v1/messages/")) return "anthropic";
  return "openai";
}

/** The 502 for an upstream that refused the operator's credentials (never the client's fault). */
export function credentialsRefused(): GatewayError {
  return new GatewayError(
    502,
    "The upstream provider refused the gateway's credentials; the operator has been notified.",
    { code: "upstream_auth_failed" },
  );
}

/** The 404 for a named object the caller may not use (another account's and an unknown one alike). */
export function notFound(what: string, id: string, field: string): GatewayError {
  const shown = id.length > 64 ? `${id.slice(0, 64)}…` : id;
  return new GatewayError(404, `${what} with id '${shown}' not found.`, {
    param: field,
    code: "not_found",
  });
}
