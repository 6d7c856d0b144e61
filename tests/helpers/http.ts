/**
 * Plain HTTP clients for the gateway's protocols, as a client without an SDK calls them: each
 * protocol's authentication headers, a JSON POST, and an SSE reader.
 */

// deno-lint-ignore no-explicit-any
export type Json = Record<string, any>;

/** OpenAI-style authentication (Responses, Chat Completions, embeddings, images, videos…). */
export const bearer = (key: string): Record<string, string> => ({
  authorization: `Bearer ${key}`,
});

/** Anthropic's authentication and version header (`extra` adds e.g. `anthropic-beta`). */
export const anthropic = (key: string, extra: Record<string, string> = {}) => ({
  "x-api-key": key,
  "anthropic-version": "2023-06-01",
  ...extra,
});

/** Google's API-key header (generateContent, embedContent). */
export const goog = (key: string): Record<string, string> => ({ "x-goog-api-key": key });

/**
 * POSTs `body` (JSON-encoded unless it is a string, bytes, a stream, a form or a blob) to
 * `base + path` with `content-type: application/json` (but for a form) and `headers`; the
 * response as it came.
 */
export function post(
  base: string,
  path: string,
  headers: Record<string, string>,
  body: unknown,
  init: RequestInit = {},
): Promise<Response> {
  const raw = typeof body === "string" || body instanceof Uint8Array ||
    body instanceof ReadableStream || body instanceof FormData || body instanceof Blob;
  // A form sets its own content type (with its boundary).
  const type: Record<string, string> = body instanceof FormData
    ? {}
    : { "content-type": "application/json" };
  return fetch(`${base}${path}`, {
    method: "POST",
    ...init,
    headers: { ...type, ...headers },
    body: raw ? body as BodyInit : JSON.stringify(body),
  });
}

/** A response read whole: status, headers, text, and the parsed JSON (null when it is not). */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  // deno-lint-ignore no-explicit-any
  json: any;
}

/** Reads a response whole (see `Answer`). */
export async function answerOf(res: Response): Promise<Answer> {
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch { /* a stream, or not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

/** `post`, read whole. */
export async function postJson(
  base: string,
  path: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<Answer> {
  return await answerOf(await post(base, path, headers, body));
}

/** SSE text as (event, data) pairs, the data parsed as JSON (`[DONE]` kept as a string). */
export function sseEvents(text: string): { event: string; data: Json | string }[] {
  const out: { event: string; data: Json | string }[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let event = "";
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (!data.length) continue;
    const joined = data.join("\n");
    out.push({ event, data: joined === "[DONE]" ? joined : JSON.parse(joined) });
  }
  return out;
}

/** A body read to its end: its text, and whether the transfer failed instead of ending cleanly. */
export interface BodyRead {
  text: string;
  /** The body's read failed (the server aborted it: no clean end of a chunked body). */
  failed: boolean;
}

/** Reads a response's body to its end, or to the failure of its transfer (see `BodyRead`). */
export async function readBody(res: Response): Promise<BodyRead> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text: text + decoder.decode(), failed: false };
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return { text: text + decoder.decode(), failed: true };
  }
}
