/**
 * The HTTP transport every provider module uses: one `fetch` with an abort controller and a
 * deadline for the response headers. Network failures become 502, the deadline 504.
 */
import type { ProviderEntry } from "../catalog/catalog.ts";
import { GatewayError } from "../http/errors.ts";

/** A request already in the upstream's protocol, addressed relative to the provider's base URL. */
export interface UpstreamCall {
  method?: "GET" | "POST" | "DELETE";
  /** Path after the provider's base URL, e.g. `/responses`; may carry a query string. */
  path: string;
  body?: BodyInit | null;
  headers?: Record<string, string>;
  /**
   * `openai-compatible`: the call goes to an Anthropic-type vendor's OpenAI-compatible surface
   * (its `chatBaseUrl`, Bearer auth) instead of its Messages API.
   */
  surface?: "openai-compatible";
}

/**
 * Sends the request and resolves when the upstream's headers arrive. `abort` cancels the request
 * (the client went away); it is also what the header deadline fires.
 */
async function fetchUpstream(
  url: string,
  init: RequestInit,
  abort: AbortController,
  timeoutMs: number,
): Promise<Response> {
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    abort.abort();
  }, timeoutMs);
  try {
    return await fetch(url, { ...init, signal: abort.signal });
  } catch (error) {
    if (timedOut) {
      throw new GatewayError(504, `The upstream did not answer within ${timeoutMs} ms.`);
    }
    if (abort.signal.aborted) throw error;
    throw new GatewayError(
      502,
      `Could not reach the upstream provider (${(error as Error).name}).`,
    );
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Sends a call to `provider` with its auth headers: the URL is the base URL plus the call's path,
 * JSON bodies get their content type, and the call's own headers come last.
 */
export function sendWithAuth(
  provider: ProviderEntry,
  call: UpstreamCall,
  abort: AbortController,
  timeoutMs: number,
  auth: Record<string, string>,
): Promise<Response> {
  return fetchUpstream(
    `${provider.baseUrl}${call.path}`,
    {
      method: call.method ?? "POST",
      headers: {
        ...auth,
        ...(call.body && !call.headers?.["content-type"]
          ? { "content-type": "application/json" }
          : {}),
        ...call.headers,
      },
      // Streamed uploads (multipart image edits) need a half-duplex request.
      ...(call.body instanceof ReadableStream ? { duplex: "half" } : {}),
      body: call.body,
    },
    abort,
    timeoutMs,
  );
}
