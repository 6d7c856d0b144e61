/**
 * The model catalog: public model id (exact, or a `*` pattern) → provider, upstream id and prices.
 * Pure: built from already-validated config, no I/O.
 */
import type { ModelKind, ProviderType } from "../config/schema.ts";

export type { ModelKind } from "../config/schema.ts";

/** Integer prices in nanoUSD: token rates per million tokens, the others per unit. */
export interface Prices {
  input: number;
  cachedInput: number;
  cacheWrite: number;
  cacheWrite1h: number;
  output: number;
  imageOutput: number;
  image: number;
  /** Per-image prices by `size/quality`, `size` or `quality` (see `imageRate`). */
  imageBy: Record<string, number>;
  videoSecond: number;
  /** Per-second video prices by resolution (see `videoSecondRate`). */
  videoSecondBy: Record<string, number>;
  call: number;
}

/** An upstream as the request path sees it. */
export interface ProviderEntry {
  name: string;
  type: ProviderType;
  baseUrl: string;
  /** The resolved secret; empty when the provider is disabled. */
  apiKey: string;
  enabled: boolean;
  /** An `anthropic`-type provider's OpenAI-compatible base URL, for chat completions. */
  chatBaseUrl?: string;
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

export interface ModelEntry {
  /** The id or pattern as written in the catalog. */
  pattern: string;
  provider: string;
  upstream?: string;
  kind: ModelKind;
  /** `null` when the operator marked the model free. */
  prices: Prices | null;
  image?: ImageRules;
}

/** The outcome of resolving a requested model id. */
export interface ResolvedModel {
  /** The id the client asked for. */
  id: string;
  /** The id to send upstream. */
  upstreamId: string;
  provider: ProviderEntry;
  kind: ModelKind;
  prices: Prices | null;
  /** Present for image models. */
  image?: ImageRules;
}

export type Resolution =
  | { ok: true; model: ResolvedModel }
  | { ok: false; reason: "unknown" | "disabled"; provider?: string };

/** Model lookup with exact ids first, then the most specific matching pattern. */
export class Catalog {
  readonly #exact = new Map<string, ModelEntry>();
  readonly #patterns: { entry: ModelEntry; regex: RegExp; literal: number }[] = [];
  readonly #providers: Map<string, ProviderEntry>;
  readonly #cache = new Map<string, Resolution>();

  constructor(models: ModelEntry[], providers: ProviderEntry[]) {
    this.#providers = new Map(providers.map((p) => [p.name, p]));
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

  /** Every catalog entry, exact ids first (for model listings). */
  entries(): ModelEntry[] {
    return [...this.#exact.values(), ...this.#patterns.map((p) => p.entry)];
  }

  provider(name: string): ProviderEntry | undefined {
    return this.#providers.get(name);
  }

  /** Resolves a requested model id to its provider, upstream id and prices. */
  resolve(id: string): Resolution {
    const cached = this.#cache.get(id);
    if (cached) return cached;
    const entry = this.#exact.get(id) ?? this.#patterns.find((p) => p.regex.test(id))?.entry;
    let result: Resolution;
    if (!entry) {
      result = { ok: false, reason: "unknown" };
    } else {
      const provider = this.#providers.get(entry.provider)!;
      result = provider.enabled
        ? {
          ok: true,
          model: {
            id,
            upstreamId: entry.upstream ?? id,
            provider,
            kind: entry.kind,
            prices: entry.prices,
            image: entry.image,
          },
        }
        : { ok: false, reason: "disabled", provider: provider.name };
    }
    if (this.#cache.size < 10_000) this.#cache.set(id, result);
    return result;
  }
}

function escapeRegex(text: string): string {
  return text.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
}
