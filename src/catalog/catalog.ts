/**
 * The model catalog: public model id (exact, or a `*` pattern) → provider, upstream id and prices.
 * Pure: built from already-validated config, no I/O.
 */
import type { ModelKind, ProviderType } from "./kinds.ts";

export type { ModelKind } from "./kinds.ts";

/** The four wire formats: Responses, Messages, generateContent (`generate`), chat completions. */
export type ProtocolId = "responses" | "messages" | "generate" | "chat";

/** Token rates in nanoUSD per million tokens. */
export interface TokenRates {
  input: number;
  cachedInput: number;
  cacheWrite: number;
  cacheWrite1h: number;
  /** Image input tokens (of image models); defaults to `input`. */
  imageInput: number;
  output: number;
  imageOutput: number;
}

/**
 * Integer prices in nanoUSD: token rates per million tokens, the others per unit. Tables keyed by
 * strings a client sends (sizes, resolutions, tiers) are `Map`s, so no client string reaches an
 * object's prototype.
 */
export interface Prices extends TokenRates {
  image: number;
  /** Per-image prices by `size/quality`, `size` or `quality` (see `imageRate`). */
  imageBy: Map<string, number>;
  videoSecond: number;
  /** Per-second video prices by resolution (see `videoSecondRate`). */
  videoSecondBy: Map<string, number>;
  call: number;
  /** Token rates by service tier (`priority`, `flex`…); a tier not listed is not offered. */
  tiers: Map<string, TokenRates>;
  /** Rates for calls whose input exceeds `above` tokens (every token of the call). */
  longContext?: { above: number; rates: TokenRates };
  /** Price per hosted tool call, by tool (see `HOSTED_TOOLS`). */
  tools: Map<string, number>;
}

/**
 * One wire protocol an upstream speaks: where, and how it is authenticated (as data: the header
 * that carries the key and its prefix; none for a local server without a key).
 */
export interface Surface {
  protocol: ProtocolId;
  baseUrl: string;
  auth?: { header: string; prefix?: string };
  /** Headers sent on every call (`anthropic-version`, an operator's extra headers). */
  headers?: Record<string, string>;
}

/** One upstream key of a provider. */
export interface ProviderKey {
  secret: string;
  /** Its share of the provider's calls, relative to the other keys' (1–100). */
  weight: number;
  /** A prefix of the secret's SHA-256: names it in shared state; never the key itself. */
  id: string;
  /** What names it in logs: its position (1-based) and `id`. */
  label: string;
}

/** An upstream as the request path sees it. */
export interface ProviderEntry {
  name: string;
  type: ProviderType;
  /** The base URL of its first surface (and of its other REST endpoints). */
  baseUrl: string;
  /** Its resolved keys, calls spread over them by weight; empty when the provider has none. */
  keys: ProviderKey[];
  enabled: boolean;
  /** The protocols it speaks natively, the first preferred when a call must be translated. */
  surfaces: Surface[];
  /** It holds Messages threads itself (Anthropic's); else the gateway holds them. */
  messageThreads?: boolean;
}

/** The image-output rules of an image model (spec §4.5). */
export interface ImageRules {
  /** Allowed `imageSize` values; empty when the field is not supported. */
  sizes: string[];
  aspectRatios: string[];
  maxReferenceImages: number;
}

/** Spec §4.5's aspect ratios. */
export const ASPECT_RATIOS = [
  "1:1",
  "3:2",
  "2:3",
  "3:4",
  "4:3",
  "4:5",
  "5:4",
  "9:16",
  "16:9",
  "21:9",
];

/** One provider (and upstream id) serving a model, as configured. */
export interface Deployment {
  provider: string;
  /** The id sent upstream; default the requested id. */
  upstream?: string;
  /** `null` when the operator marked it free. */
  prices: Prices | null;
  /** Its share of the model's calls (1–100). */
  weight: number;
  /** The most calls it serves at once. */
  maxConcurrent?: number;
  /** The most calls per minute sent to it. */
  rpm?: number;
}

export interface ModelEntry {
  /** The id or pattern as written in the catalog. */
  pattern: string;
  /** The first deployment's provider. */
  provider: string;
  upstream?: string;
  kind: ModelKind;
  /** The first deployment's prices; `null` when the operator marked the model free. */
  prices: Prices | null;
  /** Every deployment serving the model, the first the one `provider` names. */
  deployments: Deployment[];
  /** Public model ids tried in order when every deployment failed. */
  fallbacks: string[];
  /** The model tried when the upstream says the input exceeds the context window. */
  contextFallback?: string;
  /** The most output tokens one call can produce (text models). */
  maxOutputTokens?: number;
  image?: ImageRules;
  /** `false`: the gateway places no prompt-cache breakpoints for this model's calls. */
  cacheBreakpoints?: boolean;
}

/** A deployment of a resolved model: its provider entry and the id sent upstream. */
export interface Target {
  provider: ProviderEntry;
  upstreamId: string;
  prices: Prices | null;
  weight: number;
  maxConcurrent?: number;
  rpm?: number;
  /**
   * `provider/upstream` as the catalog writes it (a pattern's deployment: `provider/pattern`):
   * names it in shared state, metrics and `/readyz`.
   */
  name: string;
}

/** Where a resolved model's calls may go: its deployments, then its fallbacks. */
export interface ModelRoute {
  /** The catalog entry's id or pattern (names its shared turn). */
  name: string;
  /** The deployments whose provider is enabled, in catalog order. */
  targets: Target[];
  fallbacks: string[];
  contextFallback?: string;
}

/**
 * The outcome of resolving a requested model id: one deployment's view (its provider, upstream id
 * and prices — the first deployment's, until the router picks one; see `atTarget`).
 */
export interface ResolvedModel {
  /** The id the client asked for. */
  id: string;
  /** The id to send upstream. */
  upstreamId: string;
  provider: ProviderEntry;
  kind: ModelKind;
  prices: Prices | null;
  /** Every deployment and fallback of the model. */
  route: ModelRoute;
  /** The most output tokens one call can produce, from the catalog. */
  maxOutputTokens?: number;
  /** Present for image models. */
  image?: ImageRules;
  /** `false`: the gateway places no prompt-cache breakpoints for this model's calls. */
  cacheBreakpoints?: boolean;
}

/** A concrete model id the catalog lists, with the entry and provider that serve it. */
export interface ListedModel {
  id: string;
  entry: ModelEntry;
  provider: ProviderEntry;
}

export type Resolution =
  | { ok: true; model: ResolvedModel }
  | { ok: false; reason: "unknown" | "disabled"; provider?: string };

/** The longest model id a client may send. */
export const MAX_MODEL_ID = 256;

/**
 * A model id: 1–`MAX_MODEL_ID` visible ASCII characters (letters, digits, punctuation; no spaces,
 * no control or non-ASCII characters). Ids reach stricter grammars than JSON — response headers
 * (`x-switchyard-model`), metric labels, log lines, upstream URLs — so nothing else resolves.
 */
const MODEL_ID = new RegExp(`^[\\x21-\\x7e]{1,${MAX_MODEL_ID}}$`);

/** Whether `id` is a model id the gateway takes (see `MODEL_ID`). */
export function isModelId(id: string): boolean {
  return MODEL_ID.test(id);
}

/**
 * Resolutions of ids only a pattern matches (client-chosen, so unbounded in number) kept at most;
 * past it the oldest is dropped. Exact ids are all kept: the config bounds them.
 */
export const PATTERN_CACHE_SIZE = 1000;

/** Model lookup with exact ids first, then the most specific matching pattern. */
export class Catalog {
  readonly #exact = new Map<string, ModelEntry>();
  readonly #patterns: { entry: ModelEntry; regex: RegExp; literal: number }[] = [];
  readonly #providers: Map<string, ProviderEntry>;
  /** Resolutions of exact ids, and of ids a pattern matched (at most `PATTERN_CACHE_SIZE`). */
  readonly #cache = new Map<string, Resolution>();
  readonly #patternCache = new Map<string, Resolution>();
  /** Every entry in the order the catalog was given (for listings). */
  readonly #order: ModelEntry[];
  #listed?: ListedModel[];

  constructor(models: ModelEntry[], providers: ProviderEntry[]) {
    this.#providers = new Map(providers.map((p) => [p.name, p]));
    this.#order = models;
    for (const entry of models) {
      if (!entry.pattern.includes("*")) {
        this.#exact.set(entry.pattern, entry);
        continue;
      }
      const source = entry.pattern.split("*").map(escapeRegex).join(".*");
      this.#patterns.push({
        entry,
        regex: new RegExp(`^${source}$`),
        literal: entry.pattern.replaceAll("*", "").length,
      });
    }
    this.#patterns.sort((a, b) => b.literal - a.literal);
  }

  /** Every catalog entry, exact ids first. */
  entries(): ModelEntry[] {
    return [...this.#exact.values(), ...this.#patterns.map((p) => p.entry)];
  }

  /** Whether any model of `kind` is served free (so an account without balance may call it). */
  hasFree(kind: ModelKind): boolean {
    return this.entries().some((entry) => entry.kind === kind && entry.prices === null);
  }

  /**
   * The concrete ids of the models whose provider is enabled, in catalog order. Exact ids are
   * listed as they are; a pattern by its stem — the text before its one, trailing `*`
   * (`claude-opus-4-1*` → `claude-opus-4-1`) — when that stem is a whole id (it ends in a letter
   * or digit and resolves to the pattern itself) and the pattern does not only add dated snapshots
   * to an exact id (`gpt-5.4-20*` beside `gpt-5.4`). Other patterns (`local-*`) name no id the
   * catalog knows and are not listed; their ids still resolve.
   */
  listed(): ListedModel[] {
    this.#listed ??= this.#order.flatMap((entry): ListedModel[] => {
      const provider = this.#enabledProviders(entry)[0];
      if (!provider) return [];
      const id = entry.pattern.includes("*") ? this.#stem(entry) : entry.pattern;
      return id === undefined ? [] : [{ id, entry, provider }];
    });
    return this.#listed;
  }

  /** The id a pattern entry is listed by, if any (see `listed`). */
  #stem(entry: ModelEntry): string | undefined {
    const stem = entry.pattern.slice(0, -1);
    if (!entry.pattern.endsWith("*") || stem.includes("*") || !/[A-Za-z0-9]$/.test(stem)) {
      return undefined;
    }
    const snapshotOf = /^(.+)-20\d{0,2}$/.exec(stem)?.[1];
    if (snapshotOf !== undefined && this.#exact.has(snapshotOf)) return undefined;
    return this.#lookup(stem) === entry ? stem : undefined;
  }

  /** Whether `id` is one of the catalog's exact ids (not one only a pattern matches). */
  isExact(id: string): boolean {
    return this.#exact.has(id);
  }

  /** The entry `id` resolves to, whether or not its providers are enabled. */
  entry(id: string): ModelEntry | undefined {
    return isModelId(id) ? this.#lookup(id) : undefined;
  }

  /** The entry `id` resolves to: its exact entry, else the most specific matching pattern. */
  #lookup(id: string): ModelEntry | undefined {
    return this.#exact.get(id) ?? this.#patterns.find((p) => p.regex.test(id))?.entry;
  }

  /** The enabled providers of an entry's deployments, in its order. */
  #enabledProviders(entry: ModelEntry): ProviderEntry[] {
    return entry.deployments.map((d) => this.#providers.get(d.provider)!).filter((p) => p.enabled);
  }

  /** Every provider entry, in the config's order. */
  providers(): ProviderEntry[] {
    return [...this.#providers.values()];
  }

  provider(name: string): ProviderEntry | undefined {
    return this.#providers.get(name);
  }

  /**
   * Resolves a requested model id to its provider, upstream id and prices. Ids outside the model
   * id grammar (see `isModelId`) are unknown. Only ids that resolve are cached: every exact id, and
   * at most `PATTERN_CACHE_SIZE` ids a pattern matched (the latest).
   */
  resolve(id: string): Resolution {
    const cached = this.#cache.get(id) ?? this.#patternCache.get(id);
    if (cached) return cached;
    if (!isModelId(id)) return { ok: false, reason: "unknown" };
    const entry = this.#lookup(id);
    let result: Resolution;
    if (!entry) {
      result = { ok: false, reason: "unknown" };
    } else {
      const targets = entry.deployments.flatMap((d): Target[] => {
        const provider = this.#providers.get(d.provider)!;
        if (!provider.enabled) return [];
        const upstreamId = d.upstream ?? id;
        return [{
          provider,
          upstreamId,
          prices: d.prices,
          weight: d.weight,
          maxConcurrent: d.maxConcurrent,
          rpm: d.rpm,
          // Named as the catalog writes it (a pattern's deployment by its pattern), so the
          // names of shared state stay as few as the catalog's entries, whatever ids clients send.
          name: `${provider.name}/${d.upstream ?? entry.pattern}`,
        }];
      });
      const first = targets[0];
      result = first
        ? {
          ok: true,
          model: {
            id,
            upstreamId: first.upstreamId,
            provider: first.provider,
            kind: entry.kind,
            prices: first.prices,
            route: {
              name: entry.pattern,
              targets,
              fallbacks: entry.fallbacks,
              contextFallback: entry.contextFallback,
            },
            maxOutputTokens: entry.maxOutputTokens,
            image: entry.image,
            ...(entry.cacheBreakpoints === false ? { cacheBreakpoints: false } : {}),
          },
        }
        : { ok: false, reason: "disabled", provider: entry.provider };
    }
    if (!result.ok) return result;
    if (this.#exact.has(id)) {
      this.#cache.set(id, result);
    } else {
      const patterns = this.#patternCache;
      if (patterns.size >= PATTERN_CACHE_SIZE) patterns.delete(patterns.keys().next().value!);
      patterns.set(id, result);
    }
    return result;
  }
}

function escapeRegex(text: string): string {
  return text.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
}

/** `model` as served by `target`: its provider, upstream id and prices. */
export function atTarget(model: ResolvedModel, target: Target): ResolvedModel {
  return target.provider === model.provider && target.upstreamId === model.upstreamId &&
      target.prices === model.prices
    ? model
    : { ...model, provider: target.provider, upstreamId: target.upstreamId, prices: target.prices };
}

/** The deployment `model` is served by (one the catalog lists, or its own id's). */
export function targetOf(model: ResolvedModel): Target {
  return model.route.targets.find((t) =>
    t.provider === model.provider && t.upstreamId === model.upstreamId
  ) ?? {
    provider: model.provider,
    upstreamId: model.upstreamId,
    prices: model.prices,
    weight: 1,
    name: `${model.provider.name}/${model.route.name}`,
  };
}

/** The name of the deployment `model` is served by (see `Target.name`). */
export function targetName(model: ResolvedModel): string {
  return targetOf(model).name;
}
