/**
 * Upstream error responses, seen from our client: 4xx relayed with their status (the body as is
 * when it is already in the client's protocol), the operator's own credential failures and every
 * 5xx turned into 502 — never billed.
 */
import { type ErrorFormat, GatewayError } from "../http/errors.ts";

/**
 * What the client gets for a non-2xx upstream response: the upstream's own body when it is already
 * in the client's protocol, otherwise a thrown `GatewayError` the route renders.
 */
export async function relayUpstreamError(
  upstream: Response,
  format: ErrorFormat,
): Promise<Response> {
  const text = await upstream.text().catch(() => "");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch { /* not JSON */ }
  const message = errorMessage(body) ?? (text.slice(0, 200) || upstream.statusText);
  const status = upstream.status;
  if (status === 401 || status === 403) {
    throw new GatewayError(
      502,
      `The upstream provider refused the gateway's credentials (status ${status}).`,
      { code: "upstream_auth_failed" },
    );
  }
  const relayable = (status >= 400 && status < 500) || (status === 529 && format === "anthropic");
  if (!relayable) {
    throw new GatewayError(502, `The upstream provider failed (status ${status}): ${message}`);
  }
  const headers: Record<string, string> = {};
  const retryAfter = upstream.headers.get("retry-after");
  if (retryAfter) headers["retry-after"] = retryAfter;
  if (isEnvelope(body, format)) {
    return new Response(text, {
      status,
      headers: { "content-type": "application/json", ...headers },
    });
  }
  throw new GatewayError(status, message, { headers });
}

function errorMessage(body: unknown): string | undefined {
  const error = (body as { error?: unknown } | undefined)?.error;
  if (typeof error === "string") return error;
  const message = (error as { message?: unknown } | undefined)?.message;
  return typeof message === "string" ? message : undefined;
}

function isEnvelope(body: unknown, format: ErrorFormat): boolean {
  if (typeof body !== "object" || body === null) return false;
  const b = body as Record<string, unknown>;
  const error = b.error as Record<string, unknown> | undefined;
  if (typeof error !== "object" || error === null || typeof error.message !== "string") {
    return false;
  }
  switch (format) {
    case "openai":
      return "type" in error;
    case "anthropic":
      return b.type === "error" && typeof error.type === "string";
    case "google":
      return typeof error.code === "number" && typeof error.status === "string";
  }
}
