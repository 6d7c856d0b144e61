/**
 * The provider emulator: an offline stand-in for every upstream family on one port. Each provider
 * lives under its own path prefix, so one emulator can be every provider of a config:
 *   /openai/v1/responses  /xai/v1/responses                        (Bearer)
 *   /openai|xai/v1/chat/completions, /deepseek|moonshot|zhipu/compat/chat/completions (Bearer)
 *   /local/v1/chat/completions    an openai-compatible server (vLLM, Ollama): no key needed, any
 *                                 Authorization ignored
 *   /openai/v1/responses/compact|input_tokens, /openai/v1/embeddings, /openai/v1/alpha/search
 *   /xai/v1/videos/generations|edits (POST), /xai/v1/videos/{request_id} (GET)
 *   /openai|xai/v1/images/generations|edits (JSON, or multipart for edits)
 *   /anthropic|deepseek|moonshot|zhipu/v1/messages[/count_tokens]  (x-api-key; deepseek, moonshot
 *                                                                  and zhipu have no count_tokens)
 *   /gemini/v1beta/models/{model}:generateContent|streamGenerateContent|countTokens (x-goog-api-key)
 *   /gemini/v1beta/models/{model}:embedContent|batchEmbedContents                  (x-goog-api-key)
 * Requests must carry an upstream key (as the real services require); with `requiredKey` set, only
 * that key is accepted, and with `keys` only those, each playing its fault (see `keys.ts`):
 * `GET /_emulator/keys` reports each key's requests and fault, `POST /_emulator/keys` with
 * `{"key", "fault", "retryAfter"?}` changes (or adds) one. `GET /openai|xai/v1/responses` upgraded
 * is the Responses API's WebSocket mode (`responses_socket.ts`). Faults and tool calls are asked for in the prompt text (see `text.ts`);
 * with `record`, a prompt can also ask for a lying or broken answer (see `faults.ts`).
 * The text families answer structured-output requests with JSON following the schema, issue
 * reasoning artefacts they can verify statelessly (HMACs under a fixed secret), and refuse
 * histories the real APIs refuse, in each family's own error envelope.
 */
import { openaiError } from "./openai.ts";
import { responses } from "./responses.ts";
import { compact, inputTokens } from "./responses_side.ts";
import { embeddings } from "./embeddings.ts";
import { alphaSearch } from "./search.ts";
import { createVideo, getVideo } from "./videos.ts";
import { images } from "./images.ts";
import { chatCompletions } from "./chat.ts";
import { anthropicError, countTokensHandler as anthropicCount, messages } from "./anthropic.ts";
import { countTokensHandler as geminiCount, generate, googleError } from "./gemini.ts";
import { embedContents } from "./gemini_embeddings.ts";
import { stats } from "./text.ts";
import { KeyBook, type KeySpec, keySpecOf } from "./keys.ts";
import { type AnswerFaults, answerFaults, faultyAnswer } from "./faults.ts";
import { serveResponsesSocket } from "./responses_socket.ts";
import { type CacheContext, PromptCache } from "./prompt_cache.ts";
import { wantsWebSocket } from "../http/websocket.ts";

/**
 * Where each built-in provider family lives on the emulator, and its type: a config's `baseUrl`
 * (and `chatBaseUrl`) is the emulator's URL followed by these (demo mode and the tests use it).
 */
export const PROVIDER_PREFIXES: Record<
  string,
  { type: "openai" | "xai" | "anthropic" | "gemini"; baseUrl: string; chatBaseUrl?: string }
> = {
  openai: { type: "openai", baseUrl: "/openai/v1" },
  xai: { type: "xai", baseUrl: "/xai/v1" },
  anthropic: { type: "anthropic", baseUrl: "/anthropic" },
  deepseek: { type: "anthropic", baseUrl: "/deepseek", chatBaseUrl: "/deepseek/compat" },
  moonshot: { type: "anthropic", baseUrl: "/moonshot", chatBaseUrl: "/moonshot/compat" },
  zhipu: { type: "anthropic", baseUrl: "/zhipu", chatBaseUrl: "/zhipu/compat" },
  gemini: { type: "gemini", baseUrl: "/gemini" },
};

/** How the emulator is started: where it listens, and the upstream keys it accepts. */
export interface EmulatorOptions {
  hostname?: string;
  port?: number;
  /** Accept only this upstream key. */
  requiredKey?: string;
  /** Accept only these upstream keys, each playing its fault. */
  keys?: KeySpec[];
  /** Keep the last 200 requests for `GET /_emulator/requests` (tests; costs a body copy). */
  record?: boolean;
  /** The clock of the prompt caches (ms since the epoch; default the real one). */
  now?: () => number;
}

interface Seen {
  /** The request's number: how many this emulator had received, it included (see `stats`). */
  n: number;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
  /** The body's size in bytes, as received. */
  size: number;
}

interface Family {
  key: (req: Request) => string | null;
  error: (status: number, message: string) => Response;
}

const OPENAI: Family = {
  key: (req) => req.headers.get("authorization")?.replace(/^Bearer\s+/i, "") ?? null,
  error: openaiError,
};
const ANTHROPIC: Family = { key: (req) => req.headers.get("x-api-key"), error: anthropicError };
const GOOGLE: Family = { key: (req) => req.headers.get("x-goog-api-key"), error: googleError };

/** A route's handler, given the prompt cache of the request's key (see `prompt_cache.ts`). */
type Handle = (
  req: Request,
  groups: Record<string, string | undefined>,
  cache: CacheContext,
) => Promise<Response>;

const ROUTES: { pattern: URLPattern; family: Family; handle: Handle; method?: "GET" }[] = [
  {
    pattern: new URLPattern({
      pathname: "/:vendor(openai|xai)/v1/images/:mode(generations|edits)",
    }),
    family: OPENAI,
    handle: (req, g) => images(req, g.mode as "generations" | "edits", g.vendor!),
  },
  {
    pattern: new URLPattern({ pathname: "/xai/v1/videos/:mode(generations|edits)" }),
    family: OPENAI,
    handle: (req, g) => createVideo(req, g.mode as "generations" | "edits"),
  },
  {
    pattern: new URLPattern({ pathname: "/xai/v1/videos/:id" }),
    family: OPENAI,
    handle: (_req, g) => Promise.resolve(getVideo(g.id!)),
    method: "GET",
  },
  {
    pattern: new URLPattern({ pathname: "/:vendor(openai|xai)/v1/responses" }),
    family: OPENAI,
    handle: (req, _g, cache) => responses(req, undefined, cache),
  },
  ...([
    ["/openai/v1/responses/compact", compact],
    ["/openai/v1/responses/input_tokens", inputTokens],
    ["/openai/v1/embeddings", embeddings],
    ["/openai/v1/alpha/search", alphaSearch],
  ] as const).map(([pathname, handle]) => ({
    pattern: new URLPattern({ pathname }),
    family: OPENAI,
    handle,
  })),
  {
    pattern: new URLPattern({
      pathname:
        "/:vendor(openai/v1|xai/v1|deepseek/compat|moonshot/compat|zhipu/compat|local/v1)/chat/completions",
    }),
    family: OPENAI,
    handle: chatCompletions,
  },
  {
    pattern: new URLPattern({
      pathname: "/:vendor(anthropic|deepseek|moonshot|zhipu)/v1/messages",
    }),
    family: ANTHROPIC,
    // Anthropic's cache only: the compatible vendors ignore `cache_control`.
    handle: (req, g, cache) =>
      messages(req, g.vendor, g.vendor === "anthropic" ? cache : undefined),
  },
  {
    pattern: new URLPattern({ pathname: "/anthropic/v1/messages/count_tokens" }),
    family: ANTHROPIC,
    handle: (req) => anthropicCount(req),
  },
  {
    pattern: new URLPattern({
      pathname: "/gemini/v1beta/models/:model\\::action(generateContent|streamGenerateContent)",
    }),
    family: GOOGLE,
    handle: (req, g, cache) => generate(req, g.model!, g.action === "streamGenerateContent", cache),
  },
  {
    pattern: new URLPattern({ pathname: "/gemini/v1beta/models/:model\\:countTokens" }),
    family: GOOGLE,
    handle: geminiCount,
  },
  {
    pattern: new URLPattern({
      pathname: "/gemini/v1beta/models/:model\\::action(embedContent|batchEmbedContents)",
    }),
    family: GOOGLE,
    handle: (req, g) => embedContents(req, g.model!, g.action === "batchEmbedContents"),
  },
];

/** A refused upstream key, as each provider reports it (Gemini and xAI with a 400). */
function keyRefused(pathname: string, key: string): Response {
  const masked = `${key.slice(0, 3)}***${key.slice(-4)}`;
  if (pathname.startsWith("/gemini/")) {
    return Response.json({
      error: {
        code: 400,
        message: "API key not valid. Please pass a valid API key.",
        status: "INVALID_ARGUMENT",
        details: [{
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          reason: "API_KEY_INVALID",
          domain: "googleapis.com",
          metadata: { service: "generativelanguage.googleapis.com" },
        }],
      },
    }, { status: 400 });
  }
  if (pathname.startsWith("/xai/")) {
    return Response.json({
      code: "Client specified an invalid argument",
      error:
        `Incorrect API key provided: ${masked}. You can obtain an API key from https://console.x.ai.`,
    }, { status: 400 });
  }
  const family = familyOf(pathname);
  if (family === ANTHROPIC) return family.error(401, "invalid x-api-key");
  return family.error(
    401,
    `Incorrect API key provided: ${masked}. You can find your API key at https://platform.openai.com/account/api-keys.`,
  );
}

/** The answer a faulty key gets, in its family's envelope. */
function keyFault(family: Family, spec: KeySpec): Response {
  const [status, message] = spec.fault === "exhausted"
    ? [429, "You exceeded your current rate limit for this key (emulated)."]
    : spec.fault === "overloaded"
    ? [family === ANTHROPIC ? 529 : 503, "Overloaded (emulated)."]
    : [500, "The server had an error while processing your request (emulated)."];
  const answer = family.error(status, message);
  answer.headers.delete("retry-after");
  if (spec.fault === "exhausted" && (spec.retryAfter ?? 1) > 0) {
    answer.headers.set("retry-after", String(spec.retryAfter ?? 1));
  }
  return answer;
}

/** `GET /_emulator/keys` (each key's requests and fault) and `POST` (set one key's fault). */
async function keysControl(req: Request, book: KeyBook): Promise<Response> {
  if (req.method === "GET") return Response.json(book.report());
  try {
    return Response.json(book.set(keySpecOf(await req.json())));
  } catch (error) {
    return Response.json({ error: (error as Error).message }, { status: 400 });
  }
}

/**
 * `GET /_emulator/clock` (the prompt caches' now) and `POST` with `{"advanceMs": N}` (moves it on:
 * cache entries expire without waiting).
 */
async function clockControl(req: Request, clock: { offset: number; now(): number }) {
  if (req.method === "POST") {
    const advance = (await req.json().catch(() => ({})) as { advanceMs?: unknown }).advanceMs;
    if (!Number.isInteger(advance) || (advance as number) < 0) {
      return Response.json({ error: "advanceMs must be a whole number ≥ 0" }, { status: 400 });
    }
    clock.offset += advance as number;
  }
  return Response.json({ now: clock.now() });
}

/** The emulated provider a path is under (its first segment: `anthropic`, `openai`…). */
function providerOf(pathname: string): string {
  return pathname.split("/")[1] ?? "";
}

function familyOf(pathname: string): Family {
  if (pathname.startsWith("/gemini/")) return GOOGLE;
  if (/^\/(deepseek|moonshot|zhipu)\/compat\//.test(pathname)) return OPENAI;
  if (/^\/(anthropic|deepseek|moonshot|zhipu)\//.test(pathname)) return ANTHROPIC;
  return OPENAI;
}

/** Starts the emulator on `port` (0 = a free one). */
export function startEmulator(options: EmulatorOptions = {}): Deno.HttpServer<Deno.NetAddr> {
  const seen: Seen[] = [];
  /** The requests this emulator received, ever (its `/_emulator/stats` `requests`). */
  let received = 0;
  // A required key is one more good key of the book; with neither, any key is good.
  const required = options.requiredKey ? [{ key: options.requiredKey }] : [];
  const specs = [...(options.keys ?? []), ...required];
  const book = new KeyBook(specs, specs.length === 0);
  const base = options.now ?? Date.now;
  const clock = { offset: 0, now: () => base() + clock.offset };
  const cache = new PromptCache(clock.now);
  const record = (entry: Seen) => {
    seen.push(entry);
    if (seen.length > 200) seen.shift();
  };
  /**
   * The Responses API's WebSocket mode (see `responses_socket.ts`): the upgrade and every turn are
   * requests (counted; recorded once their key is accepted, as HTTP requests are: the upgrade as
   * `GET`, a turn as `WS` with its message), each with its key checked and its fault played (a
   * turn's as its `error` event).
   */
  const upgrade = (req: Request, url: URL): Response => {
    const n = ++received;
    if (!/^\/(openai|xai)\/v1\/responses$/.test(url.pathname)) {
      return OPENAI.error(404, `Not found: WebSocket ${url.pathname}`);
    }
    const headers = Object.fromEntries(req.headers);
    const key = OPENAI.key(req) ?? "";
    const spec = book.take(key);
    if (!spec || spec.fault === "invalid") return keyRefused(url.pathname, key);
    if (options.record) {
      record({ n, method: "GET", path: url.pathname, headers, body: null, size: 0 });
    }
    return serveResponsesSocket(req, async (body, connection) => {
      const n = ++received;
      const text = JSON.stringify(body);
      const spec = book.take(key);
      if (!spec || spec.fault === "invalid") return keyRefused(url.pathname, key);
      if (spec.fault) return keyFault(OPENAI, spec);
      if (options.record) {
        record({ n, method: "WS", path: url.pathname, headers, body, size: text.length });
      }
      const request = new Request(req.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: text,
      });
      const faults = options.record ? answerFaults(text) : null;
      try {
        const scope = { cache, provider: providerOf(url.pathname), key };
        const answer = await responses(request, connection, scope);
        return faults ? await faultyAnswer(answer, faults) : answer;
      } catch (error) {
        return OPENAI.error(400, `Malformed request: ${(error as Error).message}`);
      }
    });
  };
  return Deno.serve({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port ?? 0,
    onListen: () => {},
  }, async (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/_emulator/requests") return Response.json(seen);
    if (url.pathname === "/_emulator/stats") return Response.json({ ...stats, requests: received });
    if (url.pathname === "/_emulator/keys") return keysControl(req, book);
    if (url.pathname === "/_emulator/clock") return clockControl(req, clock);
    if (wantsWebSocket(req)) return upgrade(req, url);
    let match: { route: typeof ROUTES[number]; groups: Record<string, string | undefined> } | null =
      null;
    for (const route of ROUTES) {
      const result = route.pattern.exec({ pathname: url.pathname });
      if (result) {
        match = { route, groups: result.pathname.groups };
        break;
      }
    }
    const n = ++received;
    const family = match?.route.family ?? familyOf(url.pathname);
    if (!match || req.method !== (match.route.method ?? "POST")) {
      return family.error(404, `Not found: ${req.method} ${url.pathname}`);
    }
    const key = family.key(req);
    const keyless = url.pathname.startsWith("/local/");
    if (!keyless) {
      const spec = key ? book.take(key) : undefined;
      if (!spec || spec.fault === "invalid") return keyRefused(url.pathname, key ?? "");
      if (spec.fault) {
        await req.body?.cancel();
        return keyFault(family, spec);
      }
    }
    let request = req;
    let faults: AnswerFaults | null = null;
    if (options.record) {
      let bytes: Uint8Array<ArrayBuffer> | null = null;
      try {
        bytes = req.body ? await req.bytes() : null;
      } catch {
        return family.error(400, "The request body was cut off.");
      }
      let body: unknown = null;
      try {
        body = bytes && JSON.parse(new TextDecoder().decode(bytes));
      } catch {
        body = { bytes: bytes!.byteLength };
      }
      record({
        n,
        method: req.method,
        path: url.pathname + url.search,
        headers: Object.fromEntries(req.headers),
        body,
        size: bytes?.byteLength ?? 0,
      });
      request = new Request(req.url, { method: req.method, headers: req.headers, body: bytes });
      faults = bytes && answerFaults(new TextDecoder().decode(bytes));
    }
    try {
      const scope = { cache, provider: providerOf(url.pathname), key: key ?? "" };
      const answer = await match.route.handle(request, match.groups, scope);
      return faults ? await faultyAnswer(answer, faults) : answer;
    } catch (error) {
      return family.error(400, `Malformed request: ${(error as Error).message}`);
    }
  });
}
