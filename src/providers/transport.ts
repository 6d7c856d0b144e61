/**
 * The HTTP transport every provider module uses: one `fetch` with the client's abort signal and a
 * deadline for the response headers. Network failures become 502, the deadline 504.
 */
import { GatewayError } from "../http/errors.ts";

/** A request already in the upstream's protocol, addressed relative to the provider's base URL. */
export interface UpstreamCall {
  method?: "GET" | "POST" | "DELETE";
  /** Path after the provider's base URL, e.g. `/responses`; may carry a query string. */
  path: string;
  body?: BodyInit | null;
  headers?: Record<string, string>;
}

/** Sends `request` and resolves when the upstream's headers arrive. */
export async function fetchUpstream(
  url: string,
  init: RequestInit,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<Response> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  try {
    return await fetch(url, { ...init, signal: AbortSignal.any([signal, deadline.signal]) });
  } catch (error) {
    if (deadline.signal.aborted) {
      throw new GatewayError(504, `The upstream did not answer within ${timeoutMs} ms.`);
    }
    if (signal.aborted) throw error;
    throw new GatewayError(
      502,
      `Could not reach the upstream provider (${(error as Error).name}).`,
    );
  } finally {
    clearTimeout(timer);
  }
}
