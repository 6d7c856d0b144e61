/**
 * Request bodies: media-type check, size limit while reading (never buffering more than the
 * limit), and JSON parsing, each failure a `GatewayError` the route renders in its own format.
 */
import { concatBytes } from "./bytes.ts";
import { deadline } from "./deadlines.ts";
import { GatewayError } from "./errors.ts";
import { formatPath } from "../field_path.ts";

/** The deepest nesting of arrays and objects a JSON request body may have. */
export const MAX_JSON_DEPTH = 100;

/**
 * The key path to the first value (in document order) nested deeper than `MAX_JSON_DEPTH`, or
 * null. The walk stops at that depth, so a body nested 200,000 levels deep costs no more stack
 * than one nested 100 deep; it allocates nothing unless it finds one.
 */
export function tooDeep(value: unknown, depth = 0): string[] | null {
  if (value === null || typeof value !== "object") return null;
  if (depth >= MAX_JSON_DEPTH) return [];
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const child = value[i];
      if (child === null || typeof child !== "object") continue;
      const path = tooDeep(child, depth + 1);
      if (path) return [String(i), ...path];
    }
    return null;
  }
  for (const key in value) {
    const child = (value as Record<string, unknown>)[key];
    if (child === null || typeof child !== "object") continue;
    const path = tooDeep(child, depth + 1);
    if (path) return [key, ...path];
  }
  return null;
}

/** How much of a request body is read, and how long it may take to arrive. */
export interface BodyLimits {
  maxBodyBytes: number;
  /** Longest time to receive the body (408 past it). */
  uploadTimeoutMs: number;
}

/** Headers of an answer given before the request body was read: the connection is not reused. */
export const UNREAD_BODY = { connection: "close" };

/** The 408 for a body that did not arrive in time. */
export function uploadTimeout(ms: number): GatewayError {
  return new GatewayError(408, `The request body was not received within ${ms} ms.`, {
    headers: UNREAD_BODY,
  });
}

/** Reads at most `maxBodyBytes` of the body (413 past that) within `uploadTimeoutMs` (408). */
export async function readBytes(req: Request, limits: BodyLimits): Promise<Uint8Array> {
  const limit = limits.maxBodyBytes;
  const declared = Number(req.headers.get("content-length") ?? NaN);
  if (declared > limit) throw tooLarge(limit);
  const ms = limits.uploadTimeoutMs;
  // `req.body` is not touched on this path: it would make a stream of the body for nothing.
  if (declared >= 0) {
    // HTTP framing stops the body at its declared length: read it natively in one go.
    const late = Promise.withResolvers<never>();
    const stop = deadline(ms, () => late.reject(uploadTimeout(ms)));
    const read = req.bytes();
    read.catch(() => {}); // abandoned when the deadline wins
    try {
      return await Promise.race([read, late.promise]);
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      throw new GatewayError(400, "The request body could not be read.");
    } finally {
      stop();
    }
  }
  if (!req.body) return new Uint8Array(0);
  const reader = req.body.getReader();
  let timedOut = false;
  const stop = deadline(ms, () => {
    timedOut = true;
    reader.cancel().catch(() => {});
  });
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (timedOut) throw uploadTimeout(ms);
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        throw tooLarge(limit);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    if (timedOut) throw uploadTimeout(ms);
    throw new GatewayError(400, "The request body could not be read.");
  } finally {
    stop();
  }
  return chunks.length ? concatBytes(chunks, size) : new Uint8Array(0);
}

/** A JSON request body: the text as received and its parsed value. */
export interface JsonBody {
  readonly text: string;
  readonly value: Record<string, unknown>;
}

/**
 * A JSON body as read from a client. Its parsed value can be let go while the text is kept (a
 * conversation of an agent's is many thousands of small objects, which would be carried from one
 * young-generation collection to the next while the call waits on its upstream) and is parsed
 * again from the text if it is read after that.
 */
export class ClientBody implements JsonBody {
  #value: Record<string, unknown> | undefined;

  constructor(readonly text: string, value: Record<string, unknown>) {
    this.#value = value;
  }

  /** The parsed value: the one read, or (after `release`) the text parsed again. */
  get value(): Record<string, unknown> {
    return this.#value ??= JSON.parse(this.text) as Record<string, unknown>;
  }

  /** Lets go of the parsed value (read again, it is parsed again). */
  release(): void {
    this.#value = undefined;
  }
}

const decoder = new TextDecoder("utf-8");
const strict = new TextDecoder("utf-8", { fatal: true });

/**
 * `bytes` as UTF-8 text; throws on malformed UTF-8. Decoded leniently first — in Deno 2.9 a fatal
 * decoder is about ten times slower — and strictly only when the text holds a replacement
 * character, which is where a lenient decoder puts what it could not read.
 */
function decodeUtf8(bytes: Uint8Array): string {
  const text = decoder.decode(bytes);
  return text.includes("\uFFFD") ? strict.decode(bytes) : text;
}

/** Checks the media type, reads within the limits and parses a JSON object body. */
export async function readJsonObject(req: Request, limits: BodyLimits): Promise<ClientBody> {
  const type = req.headers.get("content-type") ?? "";
  if (!/^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(type)) {
    throw new GatewayError(
      415,
      `Content-Type must be application/json${type ? `, not ${type.split(";")[0]}` : ""}`,
    );
  }
  const bytes = await readBytes(req, limits);
  let text: string;
  let value: unknown;
  try {
    text = decodeUtf8(bytes);
    value = JSON.parse(text);
  } catch (error) {
    throw new GatewayError(400, `The request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new GatewayError(400, "The request body must be a JSON object");
  }
  const deep = tooDeep(value);
  if (deep) {
    const param = formatPath(deep.slice(0, 8)) + (deep.length > 8 ? "…" : "");
    throw new GatewayError(
      400,
      `Invalid '${param}': nested more than ${MAX_JSON_DEPTH} levels deep`,
      { param, code: "invalid_value" },
    );
  }
  return new ClientBody(text, value as Record<string, unknown>);
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError(413, `The request body is larger than the limit of ${limit} bytes`, {
    headers: UNREAD_BODY,
  });
}
