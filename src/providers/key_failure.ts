/**
 * Upstream error answers: reading one's body (bounded in size and time), and telling from the
 * provider's own fields whether it refused the operator's key — whatever status it reports that
 * with (Gemini and xAI answer 400).
 */
import { concatBytes } from "../http/bytes.ts";

/** The most of an upstream error body that is read. */
const MAX_ERROR_BYTES = 64 * 1024;
/** The longest an error body may take to arrive. */
const ERROR_BODY_MS = 10_000;

/**
 * Whether an upstream answer refuses the key itself, read from the provider's own structured
 * fields (never free text a client could have put in the request and the upstream echoed):
 * `key` — a 401, or a 400 whose error is the provider's invalid-key code (Gemini's
 * `API_KEY_INVALID` reason, xAI's "Incorrect API key provided", OpenAI's `invalid_api_key`);
 * `model` — a 403 (the key may use other models); null otherwise.
 */
export function keyRefusal(status: number, text: string): "key" | "model" | null {
  if (status === 401) return "key";
  if (status === 403) return "model";
  if (status !== 400) return null;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  const error = (body as { error?: unknown } | null)?.error;
  if (typeof error === "string") return /^Incorrect API key provided/.test(error) ? "key" : null;
  const e = error as { code?: unknown; details?: unknown } | null | undefined;
  if (e?.code === "invalid_api_key") return "key";
  const details = Array.isArray(e?.details) ? e.details : [];
  return details.some((d) => (d as { reason?: unknown } | null)?.reason === "API_KEY_INVALID")
    ? "key"
    : null;
}

/** The start of an error body (at most 64 KiB, within 10 s), as text; the rest is cancelled. */
export async function readBounded(upstream: Response): Promise<string> {
  if (!upstream.body) return "";
  const reader = upstream.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const timer = setTimeout(() => reader.cancel().catch(() => {}), ERROR_BODY_MS);
  try {
    while (size < MAX_ERROR_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } catch {
    /* a broken body: what arrived */
  } finally {
    clearTimeout(timer);
  }
  reader.cancel().catch(() => {});
  const bytes = chunks.length ? concatBytes(chunks, size) : new Uint8Array(0);
  return new TextDecoder().decode(bytes.subarray(0, MAX_ERROR_BYTES));
}

/** Whether an upstream error refuses the key (reading a 400's body to tell; see `keyRefusal`). */
export async function refusal(
  response: Response,
): Promise<{ refused: "key" | "model" | null; response: Response }> {
  const { status } = response;
  if (status !== 400) return { refused: keyRefusal(status, ""), response };
  const text = await readBounded(response);
  const copy = new Response(text, {
    status,
    statusText: response.statusText,
    headers: response.headers,
  });
  return { refused: keyRefusal(status, text), response: copy };
}
