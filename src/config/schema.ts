/**
 * The config file's shape, as valibot schemas. Amounts are written in USD (decimal numbers) and
 * converted to integer nanoUSD by `load.ts`; nothing here does I/O.
 */
import * as v from "valibot";
import { HOSTED_TOOLS } from "../billing/price.ts";

/** The most serving threads one process runs (`server.workers`, `--workers`). */
export const MAX_WORKERS = 256;

/** Provider wire families the gateway can talk to. */
export const PROVIDER_TYPES = [
  "openai",
  "xai",
  "anthropic",
  "gemini",
  "openai-compatible",
] as const;
export type ProviderType = typeof PROVIDER_TYPES[number];

const usd = v.pipe(
  v.number("must be a number (USD)"),
  v.minValue(0, "must be ≥ 0"),
  v.finite("must be finite"),
);

/**
 * Token rates, USD per million: the base ones of a price, and those of a service tier or of
 * long-context calls (whose unset fields default as the base rates do).
 */
const TokenRatesSchema = {
  /** Uncached input tokens. */
  input: v.optional(usd),
  /** Input tokens read from a prompt cache. Defaults to `input`. */
  cachedInput: v.optional(usd),
  /** Input tokens written to a prompt cache (5-minute TTL). Defaults to `input`. */
  cacheWrite: v.optional(usd),
  /** Input tokens written to a prompt cache with a 1-hour TTL. Defaults to `cacheWrite`. */
  cacheWrite1h: v.optional(usd),
  /** Input tokens of images given to an image model. Defaults to `input`. */
  imageInput: v.optional(usd),
  /** Output tokens (reasoning/thinking included). */
  output: v.optional(usd),
  /** Image output tokens. Defaults to `output`. */
  imageOutput: v.optional(usd),
};
export type TokenRatesInput = { [K in keyof typeof TokenRatesSchema]?: number };

const count = (min: number) =>
  v.pipe(
    v.number("must be an integer"),
    v.integer("must be an integer"),
    v.minValue(min, `must be ≥ ${min}`),
    v.maxValue(Number.MAX_SAFE_INTEGER, "is too large"),
  );

/** Prices in USD: token rates per million tokens, the others per unit. */
export const PriceSchema = v.strictObject({
  ...TokenRatesSchema,
  /** USD per image returned by an images endpoint. */
  image: v.optional(usd),
  /**
   * USD per image by request size and quality, overriding `image`: keys are `"1024x1024/high"`,
   * `"1024x1024"` or `"high"`, tried in that order.
   */
  imageBy: v.optional(v.record(v.string(), usd)),
  /** USD per second of generated video. */
  videoSecond: v.optional(usd),
  /** USD per second of video by resolution (`"480p"`, `"720p"`…), overriding `videoSecond`. */
  videoSecondBy: v.optional(v.record(v.string(), usd)),
  /** USD per call (web search). */
  call: v.optional(usd),
  /**
   * Token rates by service tier (`priority`, `flex`, `scale`…). A request asking for a tier not
   * listed is refused; an answer served at one is charged at its rates.
   */
  tiers: v.optional(v.record(v.string(), v.strictObject(TokenRatesSchema))),
  /** Rates for every token of a call whose input exceeds `above` tokens (e.g. 200000). */
  longContext: v.optional(v.strictObject({ above: count(1), ...TokenRatesSchema })),
  /** USD per hosted tool call, by tool; a request offering an unpriced hosted tool is refused. */
  tools: v.optional(
    v.record(
      v.picklist(HOSTED_TOOLS, `must be one of ${HOSTED_TOOLS.join(", ")}`),
      usd,
    ),
  ),
});
export type PriceInput = v.InferOutput<typeof PriceSchema>;

const url = v.pipe(v.string("must be a string"), v.url("must be an absolute URL"));

export const ProviderSchema = v.strictObject({
  type: v.picklist(PROVIDER_TYPES, `must be one of ${PROVIDER_TYPES.join(", ")}`),
  baseUrl: url,
  /**
   * For an `anthropic`-type provider: its OpenAI-compatible base URL (the part before
   * `/chat/completions`), which serves `/v1/chat/completions` with Bearer auth.
   */
  chatBaseUrl: v.optional(url),
  /**
   * The upstream key, or `env:NAME` to read it from the environment variable NAME. Optional for
   * an `openai-compatible` provider (a local server needs none); the others are disabled without.
   */
  apiKey: v.optional(v.string('must be a string or "env:NAME"')),
  /** Extra headers sent on every call to this provider (e.g. an aggregator's `HTTP-Referer`). */
  headers: v.optional(
    v.pipe(
      v.record(
        v.pipe(
          v.string(),
          v.regex(/^[A-Za-z0-9-]{1,64}$/, "header names are letters, digits and dashes"),
        ),
        v.pipe(v.string("must be a string"), v.maxLength(1024, "must be at most 1024 characters")),
      ),
      v.check((h) => Object.keys(h).length <= 16, "at most 16 headers"),
    ),
  ),
});
export type ProviderInput = v.InferOutput<typeof ProviderSchema>;

/** Image-output rules of an image model (spec §4.5); enforced before the upstream is called. */
export const ImageRulesSchema = v.strictObject({
  /** Allowed `generationConfig.imageConfig.imageSize` values; `[]` means the field is refused. */
  sizes: v.array(v.string("must be a string"), "must be an array of sizes"),
  /** Allowed aspect ratios (default: the ten of spec §4.5). */
  aspectRatios: v.optional(v.array(v.string("must be a string"), "must be an array of ratios")),
  /** Most reference images (`inlineData` image parts) per request (default 14). */
  maxReferenceImages: v.optional(
    v.pipe(v.number(), v.integer("must be an integer"), v.minValue(0, "must be ≥ 0")),
  ),
});

/** What a model produces, which decides the endpoints that serve it. */
export const MODEL_KINDS = ["text", "embedding", "image", "video"] as const;
export type ModelKind = typeof MODEL_KINDS[number];

export const ModelSchema = v.strictObject({
  provider: v.pipe(v.string("must be a provider name"), v.minLength(1, "must not be empty")),
  /** `text` (default: chat, Responses, Messages, generateContent), `embedding`, `image`, `video`. */
  kind: v.optional(v.picklist(MODEL_KINDS, `must be one of ${MODEL_KINDS.join(", ")}`)),
  /** The model id sent upstream; defaults to the public id (for a pattern, the requested id). */
  upstream: v.optional(v.pipe(v.string(), v.minLength(1, "must not be empty"))),
  price: v.optional(PriceSchema),
  /** The most output tokens one call of this (text) model can produce. */
  maxOutputTokens: v.optional(count(1)),
  /** Serve the model without charge. A model with neither `price` nor `free: true` is refused. */
  free: v.optional(v.boolean("must be true or false")),
  /** Image-output rules, for image models. */
  image: v.optional(ImageRulesSchema),
});
export type ModelInput = v.InferOutput<typeof ModelSchema>;

const port = v.pipe(
  v.number("must be a number"),
  v.integer("must be an integer"),
  v.minValue(0, "must be between 0 and 65535"),
  v.maxValue(65535, "must be between 0 and 65535"),
);

export const ConfigSchema = v.strictObject({
  server: v.optional(
    v.strictObject({
      host: v.optional(v.pipe(v.string(), v.minLength(1, "must not be empty"))),
      port: v.optional(port),
      /** Largest request body accepted, in bytes; larger ones get 413. */
      maxBodyBytes: v.optional(
        v.pipe(v.number(), v.integer("must be an integer"), v.minValue(1024, "must be ≥ 1024")),
      ),
      /** How long to wait for an upstream's response headers, in milliseconds. */
      upstreamTimeoutMs: v.optional(
        v.pipe(v.number(), v.integer("must be an integer"), v.minValue(1, "must be ≥ 1")),
      ),
      /** Largest multipart upload (`/v1/images/edits`), in bytes; streamed, never buffered whole. */
      maxUploadBytes: v.optional(
        v.pipe(v.number(), v.integer("must be an integer"), v.minValue(1024, "must be ≥ 1024")),
      ),
      /** Longest wait for the next chunk of an upstream stream, in milliseconds (0: none). */
      streamIdleTimeoutMs: v.optional(count(0)),
      /** Longest a relayed stream may run, in milliseconds (0: none). */
      streamMaxMs: v.optional(count(0)),
      /** Longest time to receive a request body (a slow upload), in milliseconds. */
      uploadTimeoutMs: v.optional(count(1)),
      /** On SIGTERM, how long streams may go on before they are cut, in milliseconds. */
      drainTimeoutMs: v.optional(count(0)),
      /** Write one JSON access-log line per request to stdout. */
      accessLog: v.optional(v.boolean("must be true or false")),
      /** A second port, bound to 127.0.0.1 only, serving `GET /metrics` without a token. */
      metricsPort: v.optional(port),
      /** Serving threads on the one port (default: the number of cores; 1: a single thread). */
      workers: v.optional(
        v.pipe(
          v.number("must be an integer"),
          v.integer("must be an integer"),
          v.minValue(1, "must be ≥ 1"),
          v.maxValue(MAX_WORKERS, `must be at most ${MAX_WORKERS}`),
        ),
      ),
    }),
  ),
  admin: v.optional(v.strictObject({
    /**
     * The bearer token of `/metrics` and the admin API (`env:NAME` reads it from the environment);
     * at least 16 characters. Unset: those routes answer 404.
     */
    token: v.optional(v.pipe(v.string(), v.minLength(16, "must be at least 16 characters"))),
  })),
  store: v.optional(v.strictObject({
    /** The SQLite file holding accounts, keys, ledger and jobs. */
    path: v.optional(v.pipe(v.string(), v.minLength(1, "must not be empty"))),
  })),
  limits: v.optional(v.strictObject({
    /** Requests per minute for a key created without `--rpm`; 0 means unlimited. */
    defaultRpm: v.optional(
      v.pipe(
        v.number(),
        v.integer("must be an integer"),
        v.minValue(0, "must be ≥ 0"),
        v.maxValue(1_000_000, "must be at most 1000000"),
      ),
    ),
    /** The output cap of a call to a model without `maxOutputTokens` when the client sets none. */
    defaultMaxOutputTokens: v.optional(count(1)),
  })),
  videos: v.optional(v.strictObject({
    /** How often the background poller checks unfinished video jobs, in milliseconds. */
    pollIntervalMs: v.optional(
      v.pipe(v.number(), v.integer("must be an integer"), v.minValue(10, "must be ≥ 10")),
    ),
    /** A job still unfinished this long after submission is expired and its hold released. */
    expireAfterMs: v.optional(
      v.pipe(v.number(), v.integer("must be an integer"), v.minValue(1000, "must be ≥ 1000")),
    ),
  })),
  /**
   * Responses conversations the gateway keeps itself, for `previous_response_id` on models whose
   * provider cannot hold them.
   */
  conversations: v.optional(v.strictObject({
    /** How long a kept answer can be continued, in hours (default 720: 30 days). */
    retentionHours: v.optional(count(1)),
    /** The largest answer (its input and output) kept, in bytes (default 8 MiB). */
    maxBytes: v.optional(count(1024)),
  })),
  /** Merge the built-in providers and models under the file's own (default true). */
  defaultCatalog: v.optional(v.boolean("must be true or false")),
  providers: v.optional(v.record(v.string(), ProviderSchema)),
  models: v.optional(v.record(v.string(), ModelSchema)),
});
export type ConfigInput = v.InferOutput<typeof ConfigSchema>;
