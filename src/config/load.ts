/**
 * Loading the configuration: embedded defaults, then the JSON file, then environment variables,
 * then command-line flags. A bad value stops startup with one `ConfigError` naming the field path
 * and the rule it breaks.
 */
import * as v from "valibot";
import { sha256 } from "../sha256.ts";
import {
  ASPECT_RATIOS,
  Catalog,
  type Deployment,
  type ModelEntry,
  type Prices,
  type ProviderEntry,
  type ProviderKey,
  type TokenRates,
} from "../catalog/catalog.ts";
import { usdToNano } from "../money.ts";
import { DEFAULT_MODELS, DEFAULT_PROVIDERS } from "./defaults.ts";
import {
  type ConfigInput,
  ConfigSchema,
  DEFAULT_METRICS_MODELS,
  type DeploymentInput,
  isPostgresUrl,
  isWebhookUrl,
  MAX_WORKERS,
  type ModelKind,
  type PriceInput,
  RETRY_TRIGGERS,
  type RetryTrigger,
  type TokenRatesInput,
} from "./schema.ts";
import { formatPath, issueKeys } from "../field_path.ts";
import { surfacesOf } from "../catalog/surfaces.ts";

/** The validated, resolved settings the server and CLI run on. */
export interface Config {
  host: string;
  port: number;
  maxBodyBytes: number;
  /** Largest multipart upload, streamed to the upstream. */
  maxUploadBytes: number;
  upstreamTimeoutMs: number;
  /** Longest silence between upstream stream chunks before the stream is cut (0: none). */
  streamIdleTimeoutMs: number;
  /** Longest a relayed stream may run (0: none). */
  streamMaxMs: number;
  /** Longest time to receive a request body. */
  uploadTimeoutMs: number;
  /** On shutdown, how long streams may go on before they are cut. */
  drainTimeoutMs: number;
  /** Longest wait for a request's head, on a new or an idle kept-alive connection (0: none). */
  headerTimeoutMs: number;
  /** Largest total of a request's headers (431 past it). */
  maxHeaderBytes: number;
  /** Open client connections the process keeps at most, across its threads (0: no cap). */
  maxConnections: number;
  /**
   * Whether the Responses API is served over WebSocket (`GET /v1/responses`); the process then
   * serves with Deno's listener, without the header deadline and the connection cap.
   */
  webSockets: boolean;
  /** What a thread holds for its slow WebSocket clients together (see `http/held_bytes.ts`). */
  webSocketQueueBytes: number;
  /** Serving threads sharing the port (1: the process serves on its main thread alone). */
  workers: number;
  /**
   * Whether `workers` was asked for (`--workers`, `SWITCHYARD_WORKERS` or `server.workers`) rather
   * than the default, the number of cores.
   */
  workersSet: boolean;
  accessLog: boolean;
  /** The admin bearer token (`/metrics`, admin API); null: those routes are off. */
  adminToken: string | null;
  /** The loopback port serving `/metrics` without a token; null: none. */
  metricsPort: number | null;
  /** Model ids served by open patterns that get series of their own (see `metrics/gateway.ts`). */
  metricsModels: number;
  /** The time zone budgets' days, weeks and months follow (`budgets.timeZone`). */
  budgetTimeZone: string;
  dbPath: string;
  /** The PostgreSQL store's URL (`store.url`, `SWITCHYARD_DB_URL`); null: the SQLite file. */
  dbUrl: string | null;
  /** Connections per serving thread to PostgreSQL. */
  dbPoolSize: number;
  /** Where uploads are spooled while they arrive: `tmp/` beside the store file. */
  spoolDir: string;
  defaultRpm: number;
  /** Output cap for models without `maxOutputTokens` when the client sets none. */
  defaultMaxOutputTokens: number;
  /** Background poller period for unfinished video jobs. */
  videoPollIntervalMs: number;
  /** Age after which an unfinished video job is expired (hold released). */
  videoExpireAfterMs: number;
  /** How long the gateway keeps the Responses conversations it stores itself. */
  conversationRetentionMs: number;
  /** The largest conversation step (one answer's input and output) kept, in bytes. */
  conversationMaxBytes: number;
  /** Retries, failover and upstream health. */
  routing: RoutingSettings;
  /** Alerts on budgets, balances and expiring keys (see `alerts/`). */
  alerts: AlertSettings;
  catalog: Catalog;
  /** Lines to log once at startup (disabled providers). */
  notices: string[];
}

/** How calls move between keys, deployments and fallbacks (see `routing/`). */
export interface RoutingSettings {
  maxAttempts: number;
  budgetMs: number;
  backoffMs: number;
  retryOn: ReadonlySet<RetryTrigger>;
  cooldownMs: number;
  queueMs: number;
  /** A conversation's calls keep to the deployment and key holding its cache. */
  cacheAffinity: boolean;
  circuit: CircuitSettings;
}

/** What raises an alert, and how alerts are delivered (see `alerts/`). */
export interface AlertSettings {
  /** Where events are POSTed; null: alerts are logged and listed only. */
  webhookUrl: string | null;
  /** The HMAC key of `x-switchyard-signature`; null: deliveries are not signed. */
  secret: string | null;
  /** Percents of a budget that raise an alert, ascending. */
  budgetThresholds: number[];
  /** A balance below this (nanoUSD) raises an alert; null: none. */
  balanceBelow: number | null;
  /** A key expiring within this (ms) raises an alert; 0: none. */
  expiringWithinMs: number;
  checkIntervalMs: number;
  /** The wait before each retry of a failed delivery (ms); after the last, it is given up. */
  retryDelaysMs: number[];
  /** How long one delivery may take (ms). */
  timeoutMs: number;
}

/** When a deployment's circuit opens, and for how long. */
export interface CircuitSettings {
  failures: number;
  errorRate: number;
  minCalls: number;
  windowMs: number;
  coolOffMs: number;
}

/** A configuration problem, already phrased for the operator. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Settings given on the command line; they win over the environment and the file. */
export interface Overrides {
  host?: string;
  port?: number;
  workers?: number;
  /**
   * Where providers are reached, by name, over the file's and the built-in catalog's (demo mode
   * points every built-in provider at the emulator, see `serve/demo.ts`).
   */
  providers?: Record<string, { baseUrl: string; chatBaseUrl?: string; apiKey: string }>;
}

export type Env = (name: string) => string | undefined;

/** A config file as read: its path (none: no file) and its parsed JSON. */
export interface ConfigRead {
  path?: string;
  raw: unknown;
}

/** Reads and parses the config file, if any (`file`, else `SWITCHYARD_CONFIG`). */
export async function readConfigFile(file: string | undefined, env: Env): Promise<ConfigRead> {
  const path = file ?? env("SWITCHYARD_CONFIG");
  if (!path) return { raw: {} };
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    const why = error instanceof Deno.errors.NotFound
      ? "no such file"
      : error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied
      ? "not readable with this binary's permissions (it reads ./switchyard.json and /etc/switchyard/)"
      : String((error as Error).message);
    throw new ConfigError(`config file ${path}: ${why}`);
  }
  try {
    return { path, raw: JSON.parse(text) };
  } catch (error) {
    throw new ConfigError(`config file ${path}: invalid JSON: ${(error as Error).message}`);
  }
}

/** `buildConfig` of a file as read, its errors naming the file. */
export function configFrom(read: ConfigRead, env: Env, overrides: Overrides = {}): Config {
  try {
    return buildConfig(read.raw, env, overrides);
  } catch (error) {
    if (error instanceof ConfigError && read.path) {
      throw new ConfigError(`config file ${read.path}: ${error.message}`);
    }
    throw error;
  }
}

/** Reads and validates the config file (if any) and applies env and flag overrides. */
export async function loadConfig(
  file: string | undefined,
  env: Env,
  overrides: Overrides = {},
): Promise<Config> {
  return configFrom(await readConfigFile(file, env), env, overrides);
}

/** The directory of the store file (where its spool and reload file live too). */
export function storeDir(dbPath: string): string {
  return dbPath.includes("/") ? dbPath.replace(/\/[^/]*$/, "") || "/" : ".";
}

/** Validates parsed config JSON and resolves it into a `Config`; throws `ConfigError`. */
export function buildConfig(raw: unknown, env: Env, overrides: Overrides = {}): Config {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ConfigError("the config: must be a JSON object");
  }
  const parsed = v.safeParse(ConfigSchema, raw);
  if (!parsed.success) throw new ConfigError(describeIssue(parsed.issues[0]));
  const file = parsed.output;

  const useDefaults = file.defaultCatalog ?? true;
  const providerInputs = { ...(useDefaults ? DEFAULT_PROVIDERS : {}), ...file.providers };
  for (const [name, at] of Object.entries(overrides.providers ?? {})) {
    if (providerInputs[name]) providerInputs[name] = { ...providerInputs[name], ...at };
  }
  const modelInputs = { ...(useDefaults ? DEFAULT_MODELS : {}), ...file.models };

  const notices: string[] = [];
  const providers: ProviderEntry[] = Object.entries(providerInputs).map(([name, p]) => {
    const listed = p.apiKey === undefined ? [] : Array.isArray(p.apiKey) ? p.apiKey : [p.apiKey];
    const missing: string[] = [];
    const keys: ProviderKey[] = listed.flatMap((item, i) => {
      const written = typeof item === "string" ? item : item.key;
      const weight = typeof item === "string" ? 1 : item.weight ?? 1;
      const secret = written.startsWith("env:") ? env(written.slice(4)) ?? "" : written;
      if (!secret) {
        missing.push(written.slice(4));
        return [];
      }
      const id = sha256(secret).toHex().slice(0, 12);
      return [{ secret, weight, id, label: `key ${i + 1} of ${listed.length} (sha256 ${id}…)` }];
    });
    // A local OpenAI-compatible server needs no key; every other upstream does.
    const enabled = keys.length > 0 || (p.type === "openai-compatible" && p.apiKey === undefined);
    if (missing.length && !keys.length) {
      notices.push(
        `provider ${name} disabled: ${missing.join(", ")} ${
          missing.length > 1 ? "are" : "is"
        } not set`,
      );
    } else if (missing.length) {
      notices.push(`provider ${name}: ${missing.join(", ")} not set; using its other keys`);
    } else if (!enabled) {
      notices.push(`provider ${name} disabled: no apiKey configured`);
    }
    const baseUrl = p.baseUrl.replace(/\/+$/, "");
    return {
      name,
      type: p.type,
      baseUrl,
      keys,
      enabled,
      surfaces: surfacesOf(p.type, baseUrl, p.chatBaseUrl?.replace(/\/+$/, ""), p.headers),
      messageThreads: p.type === "anthropic" && p.messageThreads !== false,
    };
  });
  const providerNames = new Set(providers.map((p) => p.name));

  const models: ModelEntry[] = Object.entries(modelInputs).map(([id, m]) => {
    const at = formatPath(["models", id]);
    if ((m.provider === undefined) === (m.deployments === undefined)) {
      throw new ConfigError(`${at}: needs either "provider" or "deployments" (not both)`);
    }
    const kind = m.kind ?? "text";
    const modelPrices = m.price && toPrices(m.price, `${at}.price`);
    // A model with `provider` has one deployment, which takes the model's own fields.
    const deploymentInputs: DeploymentInput[] = m.deployments ?? [{ provider: m.provider! }];
    const deployments: Deployment[] = deploymentInputs.map((d, i) => {
      const where = m.deployments ? `${at}.deployments[${i}]` : at;
      if (!providerNames.has(d.provider)) {
        throw new ConfigError(
          `${where}.provider: "${d.provider}" is not a provider (known: ${
            [...providerNames].join(", ")
          })`,
        );
      }
      const own = d.price && toPrices(d.price, `${where}.price`);
      const free = d.free || (!own && m.free);
      if (!own && !modelPrices && !free) {
        throw new ConfigError(`${where}: has no price; add "price" or mark it "free": true`);
      }
      const prices = free ? null : own ?? modelPrices!;
      requirePriced(prices, kind, own ? `${where}.price` : `${at}.price`);
      return {
        provider: d.provider,
        upstream: d.upstream ?? m.upstream,
        prices,
        weight: d.weight ?? 1,
        maxConcurrent: d.maxConcurrent ?? m.maxConcurrent,
        rpm: d.rpm ?? m.rpm,
      };
    });
    const first = deployments[0];
    return {
      pattern: id,
      provider: first.provider,
      upstream: first.upstream,
      kind,
      prices: first.prices,
      deployments,
      fallbacks: m.fallbacks ?? [],
      contextFallback: m.contextFallback,
      maxOutputTokens: m.maxOutputTokens,
      ...(m.cacheBreakpoints === false ? { cacheBreakpoints: false } : {}),
      image: m.image && {
        sizes: m.image.sizes,
        aspectRatios: m.image.aspectRatios ?? ASPECT_RATIOS,
        maxReferenceImages: m.image.maxReferenceImages ?? 14,
      },
    };
  });

  checkFallbacks(models);

  const host = overrides.host ?? env("SWITCHYARD_HOST") ?? file.server?.host ?? "127.0.0.1";
  const port = overrides.port ??
    envInt(env, "SWITCHYARD_PORT", 0, 65535) ?? file.server?.port ?? 8080;
  const workers = overrides.workers ?? envInt(env, "SWITCHYARD_WORKERS", 1, MAX_WORKERS) ??
    file.server?.workers;
  const dbPath = env("SWITCHYARD_DB") ?? file.store?.path ?? "./data/switchyard.db";
  let dbUrl = env("SWITCHYARD_DB_URL") ?? file.store?.url ?? null;
  if (dbUrl?.startsWith("env:")) {
    const name = dbUrl.slice(4);
    dbUrl = env(name) ?? null;
    if (dbUrl === null) {
      throw new ConfigError(`store.url: the environment variable ${name} is not set`);
    }
  }
  if (dbUrl !== null && !isPostgresUrl(dbUrl)) {
    // Never the URL itself in the message: it may hold a password.
    throw new ConfigError(
      "store.url (or SWITCHYARD_DB_URL): must be a postgres:// URL (characters such as / # ? in the password must be percent-encoded)",
    );
  }
  const accessLogEnv = env("SWITCHYARD_ACCESS_LOG");
  if (accessLogEnv !== undefined && !["0", "1"].includes(accessLogEnv)) {
    throw new ConfigError(`SWITCHYARD_ACCESS_LOG: must be 0 or 1`);
  }
  let adminToken = env("SWITCHYARD_ADMIN_TOKEN") ?? file.admin?.token ?? null;
  if (adminToken?.startsWith("env:")) adminToken = env(adminToken.slice(4)) ?? null;
  if (adminToken !== null && adminToken.length < 16) {
    throw new ConfigError(
      "admin.token (or SWITCHYARD_ADMIN_TOKEN): must be at least 16 characters",
    );
  }
  return {
    host,
    port,
    adminToken,
    metricsPort: file.server?.metricsPort ?? null,
    metricsModels: file.server?.metricsModels ?? DEFAULT_METRICS_MODELS,
    budgetTimeZone: file.budgets?.timeZone ?? "UTC",
    maxBodyBytes: envInt(env, "SWITCHYARD_MAX_BODY_BYTES", 1024, Number.MAX_SAFE_INTEGER) ??
      file.server?.maxBodyBytes ?? 32 * 1024 * 1024,
    maxUploadBytes: file.server?.maxUploadBytes ?? 256 * 1024 * 1024,
    upstreamTimeoutMs: file.server?.upstreamTimeoutMs ?? 300_000,
    streamIdleTimeoutMs: file.server?.streamIdleTimeoutMs ?? 600_000,
    streamMaxMs: file.server?.streamMaxMs ?? 3_600_000,
    uploadTimeoutMs: file.server?.uploadTimeoutMs ?? 600_000,
    drainTimeoutMs: file.server?.drainTimeoutMs ?? 30_000,
    headerTimeoutMs: file.server?.headerTimeoutMs ?? 10_000,
    maxHeaderBytes: file.server?.maxHeaderBytes ?? 32 * 1024,
    maxConnections: file.server?.maxConnections ?? 10_000,
    webSockets: file.server?.webSockets ?? false,
    webSocketQueueBytes: file.server?.webSocketQueueBytes ?? 64 * 1024 * 1024,
    workers: workers ?? Math.min(MAX_WORKERS, Math.max(1, navigator.hardwareConcurrency || 1)),
    workersSet: workers !== undefined,
    accessLog: accessLogEnv !== undefined ? accessLogEnv === "1" : file.server?.accessLog ?? true,
    dbPath,
    dbUrl,
    dbPoolSize: file.store?.poolSize ?? 2,
    spoolDir: `${storeDir(dbPath)}/tmp`,
    defaultRpm: envInt(env, "SWITCHYARD_DEFAULT_RPM", 0, 1_000_000) ?? file.limits?.defaultRpm ??
      120,
    defaultMaxOutputTokens: file.limits?.defaultMaxOutputTokens ?? 8192,
    videoPollIntervalMs: file.videos?.pollIntervalMs ?? 5000,
    videoExpireAfterMs: file.videos?.expireAfterMs ?? 24 * 3600 * 1000,
    conversationRetentionMs: (file.conversations?.retentionHours ?? 720) * 3600 * 1000,
    conversationMaxBytes: file.conversations?.maxBytes ?? 8 * 1024 * 1024,
    routing: routingSettings(file.routing),
    alerts: alertSettings(file.alerts, env, notices),
    catalog: new Catalog(models, providers),
    notices,
  };
}

/** Throws unless `prices` bill a model of `kind` by something (or it is free). */
function requirePriced(prices: Prices | null, kind: ModelKind, at: string): void {
  const unpriced = prices && KIND_PRICE[kind].every((field) => {
    const value = prices[field];
    return typeof value === "number" ? value === 0 : value.size === 0;
  });
  if (unpriced) {
    throw new ConfigError(
      `${at}: ${/^[aeiou]/.test(kind) ? "an" : "a"} ${kind} model needs ${
        KIND_PRICE[kind].join(" or ")
      } (or "free": true)`,
    );
  }
}

/** Each fallback names another model of the same kind the catalog serves. */
function checkFallbacks(models: ModelEntry[]): void {
  const catalog = new Catalog(models, []);
  for (const entry of models) {
    const at = formatPath(["models", entry.pattern]);
    const named: [string, string][] = [
      ...entry.fallbacks.map((id, i): [string, string] => [id, `${at}.fallbacks[${i}]`]),
      ...(entry.contextFallback
        ? [[entry.contextFallback, `${at}.contextFallback`]] as [string, string][]
        : []),
    ];
    for (const [id, where] of named) {
      const target = catalog.entry(id);
      if (!target) throw new ConfigError(`${where}: "${id}" is not a model of this catalog`);
      if (target === entry) throw new ConfigError(`${where}: a model cannot fall back to itself`);
      if (target.kind !== entry.kind) {
        throw new ConfigError(`${where}: "${id}" is a ${target.kind} model, not ${entry.kind}`);
      }
    }
  }
}

/** Routing settings with their defaults (see `ConfigSchema.routing`). */
function routingSettings(r: ConfigInput["routing"]): RoutingSettings {
  return {
    maxAttempts: r?.maxAttempts ?? 3,
    budgetMs: r?.budgetMs ?? 30_000,
    backoffMs: r?.backoffMs ?? 200,
    retryOn: new Set(r?.retryOn ?? RETRY_TRIGGERS),
    cooldownMs: r?.cooldownMs ?? 1000,
    queueMs: r?.queueMs ?? 2000,
    cacheAffinity: r?.cacheAffinity ?? true,
    circuit: {
      failures: r?.circuit?.failures ?? 5,
      errorRate: r?.circuit?.errorRate ?? 0.5,
      minCalls: r?.circuit?.minCalls ?? 20,
      windowMs: r?.circuit?.windowMs ?? 60_000,
      coolOffMs: r?.circuit?.coolOffMs ?? 30_000,
    },
  };
}

/** The default waits before retrying a failed alert delivery: 5 s, 30 s, 2 min, 10 min, 1 h. */
export const ALERT_RETRY_DELAYS_MS = [5_000, 30_000, 120_000, 600_000, 3_600_000];

/**
 * Alert settings with their defaults (see `ConfigSchema.alerts`); `env:NAME` values read from the
 * environment. Errors never show the webhook's URL or the secret: either may hold a credential.
 */
function alertSettings(a: ConfigInput["alerts"], env: Env, notices: string[]): AlertSettings {
  const resolve = (field: "webhookUrl" | "secret"): string | null => {
    const written = a?.[field];
    if (written === undefined) return null;
    if (!written.startsWith("env:")) return written;
    const value = env(written.slice(4));
    if (value === undefined || value === "") {
      throw new ConfigError(
        `alerts.${field}: the environment variable ${written.slice(4)} is not set`,
      );
    }
    return value;
  };
  const webhookUrl = resolve("webhookUrl");
  if (webhookUrl !== null && !isWebhookUrl(webhookUrl)) {
    throw new ConfigError("alerts.webhookUrl: must be an http:// or https:// URL");
  }
  const secret = resolve("secret");
  if (secret !== null && secret.length < 16) {
    throw new ConfigError("alerts.secret: must be at least 16 characters");
  }
  if (webhookUrl !== null && secret === null) {
    notices.push("alerts.webhookUrl is set without alerts.secret: deliveries are not signed");
  }
  const below = a?.balanceBelowUsd;
  return {
    webhookUrl,
    secret,
    budgetThresholds: [...a?.budgetThresholds ?? [50, 80, 100]].sort((x, y) => x - y),
    balanceBelow: below === undefined ? null : toNano(below, "alerts.balanceBelowUsd"),
    expiringWithinMs: (a?.expiringWithinHours ?? 72) * 3_600_000,
    checkIntervalMs: a?.checkIntervalMs ?? 30_000,
    retryDelaysMs: a?.retryDelaysMs ?? ALERT_RETRY_DELAYS_MS,
    timeoutMs: a?.timeoutMs ?? 5_000,
  };
}

/** The price fields a model of each kind is billed by; at least one must be set. */
const KIND_PRICE: Record<
  ModelKind,
  ("input" | "output" | "imageOutput" | "image" | "imageBy" | "videoSecond" | "videoSecondBy")[]
> = {
  text: ["input", "output", "imageOutput"],
  embedding: ["input"],
  image: ["image", "imageBy"],
  video: ["videoSecond", "videoSecondBy"],
};

function toNano(value: number | string, where: string): number {
  const result = usdToNano(value);
  if (typeof result === "string") throw new ConfigError(`${where}: ${result}`);
  return result;
}

/** Token rates from USD per million; unset fields default from `base` the way base rates do. */
function toRates(p: TokenRatesInput, at: string, base?: TokenRates): TokenRates {
  const nano = (field: keyof TokenRates, fallback: number): number => {
    const value = p[field];
    return value === undefined ? fallback : toNano(value, `${at}.${field}`);
  };
  const input = nano("input", base?.input ?? 0);
  const output = nano("output", base?.output ?? 0);
  const cacheWrite = nano("cacheWrite", input);
  return {
    input,
    cachedInput: nano("cachedInput", input),
    cacheWrite,
    cacheWrite1h: nano("cacheWrite1h", cacheWrite),
    imageInput: nano("imageInput", input),
    output,
    imageOutput: nano("imageOutput", output),
  };
}

function toPrices(p: PriceInput, at: string): Prices {
  const table = (field: "imageBy" | "videoSecondBy" | "tools"): Map<string, number> =>
    new Map(
      Object.entries(p[field] ?? {}).map((
        [key, usd],
      ) => [key, toNano(usd, `${at}.${field}[${JSON.stringify(key)}]`)]),
    );
  const unit = (field: "image" | "videoSecond" | "call") =>
    p[field] === undefined ? 0 : toNano(p[field], `${at}.${field}`);
  const base = toRates(p, at);
  return {
    ...base,
    image: unit("image"),
    imageBy: table("imageBy"),
    videoSecond: unit("videoSecond"),
    videoSecondBy: table("videoSecondBy"),
    call: unit("call"),
    tiers: new Map(
      Object.entries(p.tiers ?? {}).map((
        [tier, rates],
      ) => [tier, toRates(rates, `${at}.tiers[${JSON.stringify(tier)}]`, base)]),
    ),
    longContext: p.longContext && {
      above: p.longContext.above,
      rates: toRates(p.longContext, `${at}.longContext`, base),
    },
    tools: table("tools"),
  };
}

function envInt(env: Env, name: string, min: number, max: number): number | undefined {
  const text = env(name);
  if (text === undefined || text === "") return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name}: must be an integer between ${min} and ${max}, got "${text}"`);
  }
  return n;
}

/** One line for the first schema issue: `models["gpt-5.4"].price.input: must be ≥ 0`. */
function describeIssue(issue: v.BaseIssue<unknown>): string {
  const keys = issueKeys(issue);
  if (issue.kind === "schema" && issue.expected === "never") {
    return `${formatPath(keys)}: is not a known field`;
  }
  const where = keys.length ? formatPath(keys) : "the config";
  let message = issue.message;
  if (message.startsWith("Invalid type: Expected Object")) message = "must be an object";
  else if (message.startsWith("Invalid type: Expected string")) message = "must be a string";
  else if (message.startsWith("Invalid type: Expected boolean")) message = "must be true or false";
  return `${where}: ${message}`;
}
