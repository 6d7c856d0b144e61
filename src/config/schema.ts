/**
 * The config file's shape, as valibot schemas. Amounts are written in USD (decimal numbers) and
 * converted to integer nanoUSD by `load.ts`; nothing here does I/O.
 */
import * as v from "valibot";
import { HOSTED_TOOLS } from "../catalog/hosted_tools.ts";
import { MODEL_KINDS, PROVIDER_TYPES } from "../catalog/kinds.ts";
import { usdToNano } from "../money.ts";

export {
  MODEL_KINDS,
  type ModelKind,
  PROVIDER_TYPES,
  type ProviderType,
} from "../catalog/kinds.ts";

/** The most serving threads one process runs (`server.workers`, `--workers`). */
/** Whether `text` is a PostgreSQL URL the driver can parse (`postgres://` or `postgresql://`). */
export function isPostgresUrl(text: string): boolean {
  return /^postgres(ql)?:\/\//.test(text) && URL.canParse(text);
}

export const MAX_WORKERS = 256;

/**
 * Whether `name` is an IANA time zone the runtime knows ("Europe/Berlin", "UTC", "Etc/GMT-14", and
 * the tz database's aliases such as "US/Eastern"; Intl accepts them in any case). Offset strings
 * such as "+05:30" are refused although Intl accepts them: they are not zones, and a fixed offset
 * is spelled "Etc/GMT-5" style in the tz database.
 */
export function isTimeZone(name: string): boolean {
  if (name === "" || name !== name.trim() || /^[+\-\u2212]/.test(name)) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** Whether `text` is an absolute `http://` or `https://` URL (an alert webhook). */
export function isWebhookUrl(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const { protocol } = new URL(text);
  return protocol === "http:" || protocol === "https:";
}

/** The most budget thresholds `alerts.budgetThresholds` lists, and retries `retryDelaysMs`. */
export const MAX_ALERT_THRESHOLDS = 10;
export const MAX_ALERT_RETRIES = 10;

/** Distinct model ids served by open patterns that get series of their own in the metrics. */
export const DEFAULT_METRICS_MODELS = 100;
/** The most `server.metricsModels` may be. */
export const MAX_METRICS_MODELS = 10_000;

/** The upstream failures a call may be retried on (`routing.retryOn`). */
export const RETRY_TRIGGERS = ["connection", "timeout", "429", "5xx"] as const;
export type RetryTrigger = typeof RETRY_TRIGGERS[number];

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

/** The most keys one provider lists, and deployments or fallbacks one model lists. */
export const MAX_KEYS = 32;
export const MAX_DEPLOYMENTS = 16;
export const MAX_FALLBACKS = 8;

const keyText = v.pipe(
  v.string('must be a string or "env:NAME"'),
  v.minLength(1, "must not be empty"),
  v.maxLength(4096, "must be at most 4096 characters"),
);

/** An integer from `min` to `max` (refused as "must be between `min` and `max`"). */
function between(min: number, max: number, notANumber = "must be an integer") {
  const range = `must be between ${min} and ${max}`;
  return v.pipe(
    v.number(notANumber),
    v.integer("must be an integer"),
    v.minValue(min, range),
    v.maxValue(max, range),
  );
}

/** An integer from `min` to `max` (refused as "must be ≥ `min`" or "must be at most `max`"). */
function within(min: number, max: number, notANumber?: string) {
  return v.pipe(
    v.number(notANumber),
    v.integer("must be an integer"),
    v.minValue(min, `must be ≥ ${min}`),
    v.maxValue(max, `must be at most ${max}`),
  );
}

/** A share of calls, relative to the others' (default 1). */
const weight = between(1, 100);

export const ProviderSchema = v.strictObject({
  type: v.picklist(PROVIDER_TYPES, `must be one of ${PROVIDER_TYPES.join(", ")}`),
  baseUrl: url,
  /**
   * For an `anthropic`-type provider: its OpenAI-compatible base URL (the part before
   * `/chat/completions`), which serves `/v1/chat/completions` with Bearer auth.
   */
  chatBaseUrl: v.optional(url),
  /**
   * For an `anthropic`-type provider: whether it holds Messages threads itself (the
   * `message-threads-2026-08-12` beta), so a request's `thread` goes to it as it is; default true.
   * False for an Anthropic-compatible server that does not: the gateway holds its threads.
   */
  messageThreads: v.optional(v.boolean("must be a boolean")),
  /**
   * The upstream key, or `env:NAME` to read it from the environment variable NAME; or several
   * (`["env:KEY_1", {"key": "env:KEY_2", "weight": 2}]`), which calls spread over by weight and
   * move between when one is rate-limited or refused (see `routing/keys.ts`). Optional for an
   * `openai-compatible` provider (a local server needs none); the others are disabled without.
   */
  apiKey: v.optional(
    v.union(
      [
        keyText,
        v.pipe(
          v.array(
            v.union(
              [keyText, v.strictObject({ key: keyText, weight: v.optional(weight) })],
              'each key must be a string or {"key": …, "weight": …}',
            ),
            "must be a list of keys",
          ),
          v.minLength(1, "must list at least one key"),
          v.maxLength(MAX_KEYS, `must list at most ${MAX_KEYS} keys`),
        ),
      ],
      'must be a string, "env:NAME", or a list of keys',
    ),
  ),
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

const providerName = v.pipe(
  v.string("must be a provider name"),
  v.minLength(1, "must not be empty"),
);

/** Limits toward one deployment: calls at once, and calls per minute (both optional). */
const DeploymentLimits = {
  /** The most calls this deployment serves at once; more wait briefly (`routing.queueMs`). */
  maxConcurrent: v.optional(count(1)),
  /** The most calls per minute sent to this deployment (all its keys together). */
  rpm: v.optional(count(1)),
};

/** One provider (and upstream id) serving a model; the model's own fields are its defaults. */
export const DeploymentSchema = v.strictObject({
  provider: providerName,
  upstream: v.optional(v.pipe(v.string(), v.minLength(1, "must not be empty"))),
  /** This deployment's price, when it differs from the model's. */
  price: v.optional(PriceSchema),
  free: v.optional(v.boolean("must be true or false")),
  /** Its share of the model's calls, relative to the other deployments' (default 1). */
  weight: v.optional(weight),
  ...DeploymentLimits,
});
export type DeploymentInput = v.InferOutput<typeof DeploymentSchema>;

const modelId = v.pipe(
  v.string("must be a model id"),
  v.minLength(1, "must not be empty"),
  v.maxLength(256, "must be at most 256 characters"),
);

export const ModelSchema = v.strictObject({
  /** The provider serving the model (or `deployments`, for several). */
  provider: v.optional(providerName),
  /** Several providers (or upstream ids) serving the model, calls spread over them by weight. */
  deployments: v.optional(
    v.pipe(
      v.array(DeploymentSchema, "must be a list of deployments"),
      v.minLength(1, "must list at least one deployment"),
      v.maxLength(MAX_DEPLOYMENTS, `must list at most ${MAX_DEPLOYMENTS} deployments`),
    ),
  ),
  /** Other public model ids tried in order when every deployment of this one failed. */
  fallbacks: v.optional(
    v.pipe(
      v.array(modelId, "must be a list of model ids"),
      v.maxLength(MAX_FALLBACKS, `must list at most ${MAX_FALLBACKS} models`),
    ),
  ),
  /** The model a call goes to when the upstream says its input exceeds the context window. */
  contextFallback: v.optional(modelId),
  ...DeploymentLimits,
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
  /**
   * Whether calls to this (text) model from clients of a protocol that caches by itself
   * (Responses, chat, generateContent) get prompt-cache breakpoints placed by the gateway when
   * its provider caches only at breakpoints (Messages); default true.
   */
  cacheBreakpoints: v.optional(v.boolean("must be true or false")),
});
export type ModelInput = v.InferOutput<typeof ModelSchema>;

const port = between(0, 65535, "must be a number");

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
      /**
       * Longest wait for a request's line and headers, in milliseconds — on a new connection, and
       * on a kept-alive one once no request is in flight (0: none).
       */
      headerTimeoutMs: v.optional(count(0)),
      /** Largest total of a request's headers, in bytes; more get 431. */
      maxHeaderBytes: v.optional(
        v.pipe(
          v.number("must be an integer"),
          v.integer("must be an integer"),
          v.minValue(1024, "must be ≥ 1024"),
          // Deno's HTTP server refuses a request head over 64 KiB itself (400, before the gateway).
          v.maxValue(65536, "must be at most 65536 (the HTTP server's own limit)"),
        ),
      ),
      /** Open client connections the process keeps at most; more are closed at once (0: no cap). */
      maxConnections: v.optional(
        v.pipe(count(0), v.maxValue(1_000_000, "must be at most 1000000")),
      ),
      /**
       * Serve the Responses API over WebSocket (`GET /v1/responses`): on, the process serves with
       * Deno's listener, which keeps upgraded connections but enforces neither `headerTimeoutMs`
       * nor `maxConnections`; off, the upgrade is answered 426 and clients fall back to HTTP.
       */
      webSockets: v.optional(v.boolean("must be true or false")),
      /**
       * Bytes a serving thread holds at most, give or take, for WebSocket clients that read
       * slower than their answers arrive, all together (each is bounded on its own as well).
       */
      webSocketQueueBytes: v.optional(
        v.pipe(
          v.number("must be an integer"),
          v.integer("must be an integer"),
          v.minValue(65536, "must be ≥ 65536"),
        ),
      ),
      /** Write one JSON access-log line per request to stdout. */
      accessLog: v.optional(v.boolean("must be true or false")),
      /** A second port, bound to 127.0.0.1 only, serving `GET /metrics` without a token. */
      metricsPort: v.optional(port),
      /**
       * Model ids served by open patterns (`local-*`) that get series of their own in the metrics,
       * the first ones called; later ones are counted under `other` (the catalog's exact ids are
       * always kept).
       */
      metricsModels: v.optional(within(0, MAX_METRICS_MODELS, "must be an integer")),
      /** Serving threads on the one port (default: the number of cores; 1: a single thread). */
      workers: v.optional(within(1, MAX_WORKERS, "must be an integer")),
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
    /**
     * The SQLite file holding accounts, keys, ledger and jobs; with `url`, the directory beside
     * it still holds the process's local files (reload requests, upload and settlement spools).
     */
    path: v.optional(v.pipe(v.string(), v.minLength(1, "must not be empty"))),
    /**
     * A PostgreSQL database instead of the SQLite file, shared by every replica:
     * `postgres://user:password@host:5432/db` (`env:NAME` reads it from the environment).
     */
    url: v.optional(v.pipe(
      v.string(),
      v.check(
        (url) => url.startsWith("env:") || isPostgresUrl(url),
        "must be a postgres:// URL (or env:NAME; characters such as / # ? in the password percent-encoded)",
      ),
    )),
    /**
     * Connections each serving thread keeps to PostgreSQL for its queries (default 2: the driver
     * pipelines queries on a connection, and fewer connections write fewer, fuller packets).
     */
    poolSize: v.optional(v.pipe(
      v.number(),
      v.integer("must be an integer"),
      v.minValue(1, "must be at least 1"),
      v.maxValue(100, "must be at most 100"),
    )),
  })),
  limits: v.optional(v.strictObject({
    /** Requests per minute for a key created without `--rpm`; 0 means unlimited. */
    defaultRpm: v.optional(within(0, 1_000_000)),
    /** The output cap of a call to a model without `maxOutputTokens` when the client sets none. */
    defaultMaxOutputTokens: v.optional(count(1)),
  })),
  /** Budgets of keys and accounts (see "Keys a team can hand out" in docs/billing.md). */
  budgets: v.optional(v.strictObject({
    /**
     * The time zone whose calendar days, weeks and months budgets reset on (an IANA name, default
     * UTC); 5-hour windows are counted from the epoch whatever the zone.
     */
    timeZone: v.optional(v.pipe(
      v.string(),
      v.check(isTimeZone, "must be an IANA time zone name, e.g. Europe/Berlin or UTC"),
    )),
  })),
  /** Alerts on budgets, balances and keys about to expire, POSTed to a webhook (see `alerts/`). */
  alerts: v.optional(v.strictObject({
    /**
     * Where alert events are POSTed: an `http://` or `https://` URL, or `env:NAME` to read it from
     * the environment. Unset: alerts are raised, logged and listed, not sent.
     */
    webhookUrl: v.optional(v.pipe(
      v.string("must be a URL or env:NAME"),
      v.check(
        (url) => url.startsWith("env:") || isWebhookUrl(url),
        "must be an http:// or https:// URL (or env:NAME)",
      ),
    )),
    /**
     * The key deliveries are signed with (HMAC-SHA256, `x-switchyard-signature`), at least 16
     * characters, or `env:NAME`. Unset: deliveries are not signed.
     */
    secret: v.optional(v.pipe(
      v.string("must be a string or env:NAME"),
      v.check(
        (secret) => secret.startsWith("env:") || secret.length >= 16,
        "must be at least 16 characters (or env:NAME)",
      ),
    )),
    /** Percents of a budget whose reaching raises an alert, once per window (default 50, 80, 100). */
    budgetThresholds: v.optional(v.pipe(
      v.array(
        v.pipe(
          v.number("must be a percent from 1 to 100"),
          v.integer("must be a whole percent"),
          v.minValue(1, "must be a percent from 1 to 100"),
          v.maxValue(100, "must be a percent from 1 to 100"),
        ),
        "must be a list of percents",
      ),
      v.maxLength(MAX_ALERT_THRESHOLDS, `must list at most ${MAX_ALERT_THRESHOLDS} percents`),
      v.check((list) => new Set(list).size === list.length, "must not list a percent twice"),
    )),
    /** An account whose balance falls below this (decimal USD, e.g. "5") raises an alert. */
    balanceBelowUsd: v.optional(v.pipe(
      v.string('must be a decimal string such as "5" or "2.50"'),
      v.rawCheck(({ dataset, addIssue }) => {
        if (!dataset.typed) return;
        const nano = usdToNano(dataset.value);
        if (typeof nano === "string") addIssue({ message: nano });
        else if (nano <= 0) addIssue({ message: "must be more than 0" });
      }),
    )),
    /** A key expiring within this many hours raises an alert (default 72; 0: none). */
    expiringWithinHours: v.optional(v.pipe(count(0), v.maxValue(8760, "must be at most 8760"))),
    /** How often budgets, balances and expiring keys are checked, in milliseconds (30000). */
    checkIntervalMs: v.optional(count(10)),
    /** The waits before each retry of a failed delivery, in ms; then it is given up. */
    retryDelaysMs: v.optional(v.pipe(
      v.array(count(0), "must be a list of milliseconds"),
      v.maxLength(MAX_ALERT_RETRIES, `must list at most ${MAX_ALERT_RETRIES} retries`),
    )),
    /** How long one delivery may take, in milliseconds (default 5000). */
    timeoutMs: v.optional(count(1)),
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
  /** Retries, failover and upstream health (see `routing/`). */
  routing: v.optional(v.strictObject({
    /** Upstream attempts one call may make in all: keys, deployments and fallbacks (default 3). */
    maxAttempts: v.optional(
      v.pipe(count(1), v.maxValue(10, "must be at most 10")),
    ),
    /** No attempt starts this long after the first (default 30000 ms); later ones end by then. */
    budgetMs: v.optional(count(1)),
    /** The base of the jittered backoff before an attempt on a target that just failed (ms). */
    backoffMs: v.optional(count(0)),
    /** The failures that move a call on: `connection`, `timeout`, `429`, `5xx` (default all). */
    retryOn: v.optional(
      v.array(
        v.picklist(RETRY_TRIGGERS, `must be one of ${RETRY_TRIGGERS.join(", ")}`),
        "must be a list of failures",
      ),
    ),
    /** A rate-limited key without `retry-after` rests this long, doubled per repeat (ms). */
    cooldownMs: v.optional(count(1)),
    /** Calls wait at most this long for a deployment's `maxConcurrent` or `rpm` (ms). */
    queueMs: v.optional(count(0)),
    /** A conversation's calls go to the deployment and key holding its cache (default true). */
    cacheAffinity: v.optional(v.boolean("must be true or false")),
    /** When a deployment's circuit opens, and for how long. */
    circuit: v.optional(v.strictObject({
      /** Consecutive failures that open it (default 5). */
      failures: v.optional(count(1)),
      /** The share of failed calls in the window that opens it (default 0.5)… */
      errorRate: v.optional(
        v.pipe(v.number(), v.minValue(0.01, "must be > 0"), v.maxValue(1, "must be ≤ 1")),
      ),
      /** …once the window holds this many calls (default 20). */
      minCalls: v.optional(count(1)),
      /** The window of that share (default 60000 ms). */
      windowMs: v.optional(count(1000)),
      /** How long it stays open before one probe call may try (default 30000 ms). */
      coolOffMs: v.optional(count(1)),
    })),
  })),
  /** Merge the built-in providers and models under the file's own (default true). */
  defaultCatalog: v.optional(v.boolean("must be true or false")),
  providers: v.optional(v.record(v.string(), ProviderSchema)),
  models: v.optional(v.record(
    // The model id grammar of the catalog (`isModelId`): what clients can send.
    v.pipe(
      v.string(),
      v.regex(
        /^[\x21-\x7e]{1,256}$/,
        "a model id must be 1–256 visible ASCII characters (no spaces or control characters)",
      ),
    ),
    ModelSchema,
  )),
});
export type ConfigInput = v.InferOutput<typeof ConfigSchema>;
