/**
 * Upstream error responses, seen from our client: 4xx relayed with their status (the body as is
 * when it is already in the client's protocol), the operator's own credential failures — whatever
 * status the provider reports them with — and every 5xx turned into 502, never billed. Nothing of
 * the operator leaks: organization and project ids and key fragments are redacted, and the
 * upstream model id is replaced by the public one.
 */
import type { ResolvedModel } from "../catalog/catalog.ts";
import { credentialsRefused, type ErrorFormat, GatewayError } from "../http/errors.ts";
import { log } from "../log.ts";
import { readBounded } from "../providers/key_failure.ts";

/** Operator identifiers and secrets as providers write them into error messages. */
const SECRETS: [RegExp, string][] = [
  [/\borg-[A-Za-z0-9]{4,}/g, "org-[redacted]"],
  [/\bproj_[A-Za-z0-9]{4,}/g, "proj_[redacted]"],
  [/\b(sk|xai|sy)-[A-Za-z0-9_*.-]{3,}/g, "[redacted key]"],
  [/\bAIza[0-9A-Za-z_-]{8,}/g, "[redacted key]"],
];

/** How providers say the operator's key is wrong, whatever status they send it with. */
const KEY_FAILURE =
  /API_KEY_INVALID|API key not valid|api[_ -]?key[^"]{0,40}(invalid|incorrect|expired|revoked)|(invalid|incorrect|expired|revoked)[^"]{0,20}api[_ -]?key|invalid x-api-key|authentication_error|permission_error/i;

/**
 * Whether an error answer says the operator's credentials are at fault (any 401 or 403, or words
 * to that effect): the client gets a 502 for it, never the upstream's words. Broader than
 * `keyRefusal`, which takes a key out of turn and so reads only the provider's own fields.
 */
function isKeyFailure(status: number, text: string): boolean {
  return status === 401 || status === 403 || (status < 500 && KEY_FAILURE.test(text));
}

/** `text` with operator identifiers redacted and the upstream model id replaced by the public one. */
export function redact(text: string, model?: ResolvedModel): string {
  let out = text;
  for (const [pattern, replacement] of SECRETS) out = out.replace(pattern, replacement);
  if (model && model.upstreamId !== model.id && model.upstreamId.length >= 3) {
    out = out.replaceAll(model.upstreamId, model.id);
  }
  return out;
}

/**
 * What the client gets for a non-2xx upstream response: the upstream's own body (redacted) when
 * it is already in the client's protocol (`upstreamFormat`, the upstream's envelope, is the
 * client's `format`), otherwise a thrown `GatewayError` the route renders in the client's
 * format with the upstream's status and message. Anthropic's 529 (overloaded) is a 503 for
 * clients of the other protocols.
 */
export async function relayUpstreamError(
  upstream: Response,
  format: ErrorFormat,
  model?: ResolvedModel,
  upstreamFormat: ErrorFormat = format,
): Promise<Response> {
  const raw = await readBounded(upstream);
  const status = upstream.status;
  if (isKeyFailure(status, raw)) {
    log("error", "upstream refused the gateway's credentials", {
      provider: model?.provider.name,
      status,
      body: redact(raw).slice(0, 2000),
    });
    throw credentialsRefused();
  }
  const text = redact(raw, model);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch { /* not JSON */ }
  const message = errorMessage(body) ?? (text.slice(0, 200) || upstream.statusText);
  const headers: Record<string, string> = {};
  const retryAfter = upstream.headers.get("retry-after");
  if (retryAfter && /^\d{1,6}$/.test(retryAfter)) headers["retry-after"] = retryAfter;
  if (status === 529 && format !== "anthropic") {
    throw new GatewayError(503, `The upstream provider is overloaded: ${message}`, { headers });
  }
  const relayable = (status >= 400 && status < 500) || (status === 529 && format === "anthropic");
  if (!relayable) {
    throw new GatewayError(502, `The upstream provider failed (status ${status}): ${message}`);
  }
  if (upstreamFormat === format && isEnvelope(body, format)) {
    return new Response(text, {
      status,
      headers: { "content-type": "application/json", ...headers },
    });
  }
  throw new GatewayError(status, message, { headers });
}

function errorMessage(body: unknown): string | undefined {
  const error = (body as { error?: unknown } | undefined)?.error;
  if (typeof error === "string") return error.slice(0, 1000);
  const message = (error as { message?: unknown } | undefined)?.message ??
    // vLLM and other OpenAI-compatible servers: `{"object":"error","message":…}`.
    (body as { message?: unknown } | undefined)?.message;
  return typeof message === "string" ? message.slice(0, 1000) : undefined;
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
