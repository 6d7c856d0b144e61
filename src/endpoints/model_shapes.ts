/**
 * Model listings in each protocol's own shape (pure): OpenAI's one list, Anthropic's cursor pages
 * (`limit`, `after_id`, `before_id`; `data`, `has_more`, `first_id`, `last_id`) and Gemini's
 * token pages (`pageSize`, `pageToken`; `models`, `nextPageToken`), and each one's model object.
 * Bad paging parameters are a 400 naming the parameter.
 */
import * as v from "valibot";
import { GatewayError } from "../http/errors.ts";
import { validate } from "../http/validate.ts";

/** A model as every listing describes it. */
export interface ModelInfo {
  id: string;
  /** The provider that serves it (OpenAI's `owned_by`). */
  provider: string;
  /** Seconds since the epoch: the date the id carries, else 0 (see `createdOf`). */
  created: number;
  /** The Gemini methods the gateway serves for it (`generateContent`, `embedContent`…). */
  methods: string[];
  /** The most output tokens one call can produce, when the catalog knows it. */
  outputTokenLimit?: number;
}

type Query = URLSearchParams;

/**
 * When a model was released, as far as the gateway knows: the date its id carries
 * (`claude-opus-4-20250514`, `gpt-4o-2024-05-13`), else 0 — the catalog has no release dates.
 */
export function createdOf(id: string): number {
  const m = /(?:^|-)(20\d\d)-?(\d\d)-?(\d\d)(?=$|-)/.exec(id);
  if (!m) return 0;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const ms = Date.UTC(year, month - 1, day);
  const date = new Date(ms);
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day ? ms / 1000 : 0;
}

/** OpenAI's model object (`GET /v1/models/{model}`). */
export function openaiModel(m: ModelInfo): Record<string, unknown> {
  return { id: m.id, object: "model", created: m.created, owned_by: m.provider };
}

/** OpenAI's list: every model at once (the API has no paging). */
export function openaiList(models: ModelInfo[]): Record<string, unknown> {
  return { object: "list", data: models.map(openaiModel) };
}

/** Anthropic's model object; `created_at` in RFC 3339. */
export function anthropicModel(m: ModelInfo): Record<string, unknown> {
  return {
    type: "model",
    id: m.id,
    display_name: m.id,
    created_at: new Date(m.created * 1000).toISOString().replace(/\.000Z$/, "Z"),
  };
}

const AnthropicQuery = v.looseObject({
  limit: v.optional(v.pipe(
    v.string(),
    v.regex(/^\d{1,4}$/, "must be an integer from 1 to 1000"),
    v.transform(Number),
    v.minValue(1, "must be an integer from 1 to 1000"),
    v.maxValue(1000, "must be an integer from 1 to 1000"),
  )),
  after_id: v.optional(v.string()),
  before_id: v.optional(v.string()),
});

/**
 * One page of Anthropic's list: `limit` models (default 20) after `after_id`, or the `limit` just
 * before `before_id`; `has_more` tells whether more lie further in that direction.
 */
export function anthropicPage(models: ModelInfo[], query: Query): Record<string, unknown> {
  const q = validate(AnthropicQuery, Object.fromEntries(query));
  if (q.after_id !== undefined && q.before_id !== undefined) {
    throw new GatewayError(400, "Give at most one of 'after_id' and 'before_id'.", {
      param: "before_id",
    });
  }
  const limit = q.limit ?? 20;
  let page: ModelInfo[];
  let hasMore: boolean;
  if (q.before_id !== undefined) {
    const end = cursor(models, q.before_id, "before_id");
    page = models.slice(Math.max(0, end - limit), end);
    hasMore = end - limit > 0;
  } else {
    const start = q.after_id === undefined ? 0 : cursor(models, q.after_id, "after_id") + 1;
    page = models.slice(start, start + limit);
    hasMore = start + limit < models.length;
  }
  return {
    data: page.map(anthropicModel),
    has_more: hasMore,
    first_id: page[0]?.id ?? null,
    last_id: page.at(-1)?.id ?? null,
  };
}

function cursor(models: ModelInfo[], id: string, param: string): number {
  const at = models.findIndex((m) => m.id === id);
  if (at < 0) {
    throw new GatewayError(400, `Invalid '${param}': no model \`${id}\` in this listing.`, {
      param,
    });
  }
  return at;
}

/**
 * Gemini's model object. The gateway knows no upstream version or input limit: `version` is
 * `001`, the API's first stable version, and `inputTokenLimit` is left out.
 */
export function geminiModel(m: ModelInfo): Record<string, unknown> {
  return {
    name: `models/${m.id}`,
    baseModelId: m.id,
    version: "001",
    displayName: m.id,
    ...(m.outputTokenLimit ? { outputTokenLimit: m.outputTokenLimit } : {}),
    supportedGenerationMethods: m.methods,
  };
}

const pageSize = v.optional(v.pipe(
  v.string(),
  v.regex(/^\d{1,9}$/, "must be a non-negative integer"),
  v.transform(Number),
));
const GeminiQuery = v.looseObject({
  pageSize,
  page_size: pageSize,
  pageToken: v.optional(v.string()),
  page_token: v.optional(v.string()),
});

/** Gemini's page size when none (or 0) is asked for, and the most it returns. */
const DEFAULT_PAGE = 50;
const MAX_PAGE = 1000;
const TOKEN_PREFIX = "after:";

/**
 * One page of Gemini's list: `pageSize` models (default 50, at most 1000) from `pageToken`, with
 * `nextPageToken` while more remain. Tokens are opaque to clients (base64url of the last id given);
 * one the gateway did not issue is a 400.
 */
export function geminiPage(models: ModelInfo[], query: Query): Record<string, unknown> {
  const q = validate(GeminiQuery, Object.fromEntries(query));
  const size = Math.min(q.pageSize || q.page_size || DEFAULT_PAGE, MAX_PAGE);
  const token = q.pageToken || q.page_token;
  const start = token ? afterToken(models, token) : 0;
  const page = models.slice(start, start + size);
  const more = start + size < models.length;
  return {
    models: page.map(geminiModel),
    ...(more ? { nextPageToken: pageToken(page.at(-1)!.id) } : {}),
  };
}

function pageToken(lastId: string): string {
  const bytes = new TextEncoder().encode(TOKEN_PREFIX + lastId);
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}

/** The index a page token continues from; 400 for a token this listing did not issue. */
function afterToken(models: ModelInfo[], token: string): number {
  let text = "";
  try {
    const binary = atob(token.replaceAll("-", "+").replaceAll("_", "/"));
    text = new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from(binary, (c) => c.charCodeAt(0)),
    );
  } catch { /* not base64: refused below */ }
  const id = text.startsWith(TOKEN_PREFIX) ? text.slice(TOKEN_PREFIX.length) : undefined;
  const at = id === undefined ? -1 : models.findIndex((m) => m.id === id);
  if (at < 0) {
    throw new GatewayError(
      400,
      "Invalid 'pageToken': not a page token of this listing (pass the nextPageToken of the previous page).",
      { param: "pageToken" },
    );
  }
  return at + 1;
}
