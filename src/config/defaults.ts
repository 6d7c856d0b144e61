/**
 * The embedded default catalog: the providers and their models with list prices in USD (per
 * million tokens; images per image, video per second, tool calls per call), each model's output
 * limit, and its service-tier, long-context and hosted-tool prices. Prices were checked on
 * 2026-11-22 against the providers' pricing pages and published price tables (see
 * `tests/unit/config/defaults_test.ts`); they change, so check them before you charge real money.
 *
 * Ids are exact, or a pattern that catches one model's dated snapshots (`gpt-5.4-20*`) — never a
 * whole family: a variant the catalog does not know is refused, not priced at a neighbour's rate.
 * Operators override any entry by name in their config file (or switch these off with
 * `"defaultCatalog": false`).
 */
import type { ModelInput, ProviderInput } from "./schema.ts";

export const DEFAULT_PROVIDERS: Record<string, ProviderInput> = {
  openai: { type: "openai", baseUrl: "https://api.openai.com/v1", apiKey: "env:OPENAI_API_KEY" },
  xai: { type: "xai", baseUrl: "https://api.x.ai/v1", apiKey: "env:XAI_API_KEY" },
  anthropic: {
    type: "anthropic",
    baseUrl: "https://api.anthropic.com",
    apiKey: "env:ANTHROPIC_API_KEY",
  },
  deepseek: {
    type: "anthropic",
    baseUrl: "https://api.deepseek.com/anthropic",
    chatBaseUrl: "https://api.deepseek.com",
    apiKey: "env:DEEPSEEK_API_KEY",
    messageThreads: false,
  },
  moonshot: {
    type: "anthropic",
    baseUrl: "https://api.moonshot.ai/anthropic",
    chatBaseUrl: "https://api.moonshot.ai/v1",
    apiKey: "env:MOONSHOT_API_KEY",
    messageThreads: false,
  },
  zhipu: {
    type: "anthropic",
    baseUrl: "https://api.z.ai/api/anthropic",
    chatBaseUrl: "https://api.z.ai/api/paas/v4",
    apiKey: "env:ZHIPU_API_KEY",
    messageThreads: false,
  },
  gemini: {
    type: "gemini",
    baseUrl: "https://generativelanguage.googleapis.com",
    apiKey: "env:GEMINI_API_KEY",
  },
};

type Price = NonNullable<ModelInput["price"]>;
type Rates = { input: number; cachedInput?: number; output: number };

/** A text model of `provider`: rates, output limit and extra price fields. */
const text = (
  provider: string,
  [input, cachedInput, output]: [number, number | null, number],
  maxOutputTokens: number,
  extra: Partial<Price> = {},
): ModelInput => ({
  provider,
  maxOutputTokens,
  price: { input, cachedInput: cachedInput ?? input, output, ...extra },
});

/** Service-tier rates: `[input, cached input, output]`. */
const tier = ([input, cachedInput, output]: [number, number, number]): Rates => ({
  input,
  cachedInput,
  output,
});

/** OpenAI's hosted tools per call, and $0.01 per `/v1/alpha/search` call ($10 per 1,000). */
const OPENAI_TOOLS: Partial<Price> = {
  call: 0.01,
  tools: { web_search: 0.01, file_search: 0.0025, code_interpreter: 0.03 },
};

/** An OpenAI text model with optional priority and flex rates. */
const openai = (
  rates: [number, number | null, number],
  maxOutputTokens: number,
  tiers: { priority?: [number, number, number]; flex?: [number, number, number] } = {},
  extra: Partial<Price> = {},
): ModelInput =>
  text("openai", rates, maxOutputTokens, {
    ...OPENAI_TOOLS,
    ...(tiers.priority || tiers.flex
      ? {
        tiers: {
          ...(tiers.priority ? { priority: tier(tiers.priority) } : {}),
          ...(tiers.flex ? { flex: tier(tiers.flex) } : {}),
        },
      }
      : {}),
    ...extra,
  });

/** A model id and its dated snapshots (`gpt-5.4`, `gpt-5.4-2026-03-05`). */
const withSnapshots = (id: string, model: ModelInput): Record<string, ModelInput> => ({
  [id]: model,
  [`${id}-20*`]: model,
});

/** Anthropic: cache writes at 1.25× (5 minutes) and 2× (1 hour) input, reads at 0.1×. */
const claude = (
  input: number,
  output: number,
  maxOutputTokens: number,
  extra: Partial<Price> = {},
): ModelInput =>
  text("anthropic", [input, input / 10, output], maxOutputTokens, {
    cacheWrite: input * 1.25,
    cacheWrite1h: input * 2,
    tools: { web_search: 0.01 },
    ...extra,
  });

/** Sonnet 4 / 4.5 above 200k input tokens (the 1M-context beta). */
const SONNET_LONG = {
  longContext: {
    above: 200_000,
    input: 6,
    cachedInput: 0.6,
    cacheWrite: 7.5,
    cacheWrite1h: 12,
    output: 22.5,
  },
};

/** xAI's server tools: $5 per 1,000 calls each. */
const XAI_TOOLS = { tools: { web_search: 0.005, x_search: 0.005, code_interpreter: 0.005 } };
/** Every retired grok slug is served, and billed, as grok-4.3 since 2026-05-15. */
const GROK_4_3 = text("xai", [1.25, 0.2, 2.5], 131_072, XAI_TOOLS);

/** Gemini 2.x bills search grounding per grounded prompt; Gemini 3 per search query. */
const GROUNDED_2 = { tools: { grounded_prompt: 0.035 } };
const GROUNDED_3 = { tools: { web_search: 0.014 } };
const gemini = (
  rates: [number, number | null, number],
  extra: Partial<Price> = {},
): ModelInput => text("gemini", rates, 65_536, extra);
const geminiImage = (
  rates: [number, number | null, number],
  imageOutput: number,
  sizes: string[],
): ModelInput => ({
  ...text("gemini", rates, 32_768, { imageOutput }),
  image: { sizes },
});

/**
 * GPT image prices per image: `[low, medium, high]` for square and for wide/tall sizes, and the
 * input tokens billed on top: `[text, cached text, image]` per million.
 */
const gptImage = (
  square: number[],
  wide: number[],
  [input, cachedInput, imageInput]: number[],
): ModelInput => ({
  provider: "openai",
  kind: "image",
  price: {
    input,
    cachedInput,
    imageInput,
    image: square[1],
    imageBy: Object.fromEntries(["low", "medium", "high"].flatMap((quality, i) => [
      [quality, square[i]],
      [`1024x1024/${quality}`, square[i]],
      [`1536x1024/${quality}`, wide[i]],
      [`1024x1536/${quality}`, wide[i]],
    ])),
  },
});

export const DEFAULT_MODELS: Record<string, ModelInput> = {
  // OpenAI — Responses, chat, embeddings, images, compaction, search.
  ...withSnapshots(
    "gpt-5.4",
    openai([2.5, 0.25, 15], 128_000, {
      priority: [5, 0.5, 30],
      flex: [1.25, 0.125, 7.5],
    }, { longContext: { above: 272_000, input: 5, cachedInput: 0.5, output: 22.5 } }),
  ),
  ...withSnapshots(
    "gpt-5.4-mini",
    openai([0.75, 0.075, 4.5], 128_000, {
      priority: [1.5, 0.15, 9],
      flex: [0.375, 0.0375, 2.25],
    }),
  ),
  ...withSnapshots(
    "gpt-5.4-nano",
    openai([0.2, 0.02, 1.25], 128_000, { flex: [0.1, 0.01, 0.625] }),
  ),
  ...withSnapshots(
    "gpt-5.4-pro",
    openai([30, null, 180], 128_000, {}, {
      longContext: { above: 272_000, input: 60, output: 270 },
    }),
  ),
  ...withSnapshots(
    "gpt-5.5",
    openai([5, 0.5, 30], 128_000, {}, {
      longContext: { above: 272_000, input: 10, cachedInput: 1, output: 45 },
    }),
  ),
  ...withSnapshots("gpt-5.5-pro", openai([30, null, 180], 128_000)),
  "gpt-5.3-codex": openai([1.75, 0.175, 14], 128_000),
  "gpt-5.3-chat-latest": openai([1.75, 0.175, 14], 16_384),
  ...withSnapshots("gpt-5.2", openai([1.75, 0.175, 14], 128_000, { priority: [3.5, 0.35, 28] })),
  "gpt-5.2-codex": openai([1.75, 0.175, 14], 128_000),
  "gpt-5.2-chat-latest": openai([1.75, 0.175, 14], 16_384),
  ...withSnapshots("gpt-5.2-pro", openai([21, null, 168], 128_000)),
  ...withSnapshots("gpt-5.1", openai([1.25, 0.125, 10], 128_000, { priority: [2.5, 0.25, 20] })),
  "gpt-5.1-codex": openai([1.25, 0.125, 10], 128_000, { priority: [2.5, 0.25, 20] }),
  "gpt-5.1-codex-max": openai([1.25, 0.125, 10], 128_000),
  "gpt-5.1-codex-mini": openai([0.25, 0.025, 2], 128_000, { priority: [0.45, 0.045, 3.6] }),
  "gpt-5.1-chat-latest": openai([1.25, 0.125, 10], 16_384),
  ...withSnapshots(
    "gpt-5",
    openai([1.25, 0.125, 10], 128_000, { priority: [2.5, 0.25, 20], flex: [0.625, 0.0625, 5] }),
  ),
  "gpt-5-codex": openai([1.25, 0.125, 10], 128_000),
  "gpt-5-chat-latest": openai([1.25, 0.125, 10], 16_384),
  ...withSnapshots(
    "gpt-5-mini",
    openai([0.25, 0.025, 2], 128_000, {
      priority: [0.45, 0.045, 3.6],
      flex: [0.125, 0.0125, 1],
    }),
  ),
  ...withSnapshots(
    "gpt-5-nano",
    openai([0.05, 0.005, 0.4], 128_000, { flex: [0.025, 0.0025, 0.2] }),
  ),
  ...withSnapshots("gpt-5-pro", openai([15, null, 120], 272_000)),
  ...withSnapshots("gpt-4.1", openai([2, 0.5, 8], 32_768, { priority: [3.5, 0.875, 14] })),
  ...withSnapshots(
    "gpt-4.1-mini",
    openai([0.4, 0.1, 1.6], 32_768, { priority: [0.7, 0.175, 2.8] }),
  ),
  ...withSnapshots(
    "gpt-4.1-nano",
    openai([0.1, 0.025, 0.4], 32_768, { priority: [0.2, 0.05, 0.8] }),
  ),
  ...withSnapshots("gpt-4o", openai([2.5, 1.25, 10], 16_384, { priority: [4.25, 2.125, 17] })),
  "gpt-4o-2024-05-13": openai([5, null, 15], 4_096),
  ...withSnapshots(
    "gpt-4o-mini",
    openai([0.15, 0.075, 0.6], 16_384, { priority: [0.25, 0.125, 1] }),
  ),
  ...withSnapshots("o1", openai([15, 7.5, 60], 100_000)),
  ...withSnapshots("o1-pro", openai([150, null, 600], 100_000)),
  ...withSnapshots(
    "o3",
    openai([2, 0.5, 8], 100_000, { priority: [3.5, 0.875, 14], flex: [1, 0.25, 4] }),
  ),
  ...withSnapshots("o3-pro", openai([20, null, 80], 100_000)),
  ...withSnapshots("o3-mini", openai([1.1, 0.55, 4.4], 100_000)),
  ...withSnapshots("o3-deep-research", openai([10, 2.5, 40], 100_000)),
  ...withSnapshots(
    "o4-mini",
    openai([1.1, 0.275, 4.4], 100_000, { priority: [2, 0.5, 8], flex: [0.55, 0.1375, 2.2] }),
  ),
  ...withSnapshots("o4-mini-deep-research", openai([2, 0.5, 8], 100_000)),
  "text-embedding-3-small": { provider: "openai", kind: "embedding", price: { input: 0.02 } },
  "text-embedding-3-large": { provider: "openai", kind: "embedding", price: { input: 0.13 } },
  "gpt-image-1": gptImage([0.011, 0.042, 0.167], [0.016, 0.063, 0.25], [5, 1.25, 10]),
  "gpt-image-1-mini": gptImage([0.005, 0.011, 0.036], [0.006, 0.015, 0.052], [2, 0.2, 2.5]),
  "gpt-image-1.5": gptImage([0.009, 0.034, 0.133], [0.013, 0.05, 0.2], [5, 1.25, 8]),
  // xAI — Responses, chat, images, video. The grok-4, grok-3 and grok-code-fast slugs were retired
  // on 2026-05-15: they are served by grok-4.3 and billed at its rates.
  "grok-4.3*": GROK_4_3,
  "grok-4": GROK_4_3,
  "grok-4-0709": GROK_4_3,
  "grok-4-fast-reasoning": GROK_4_3,
  "grok-4-fast-non-reasoning": GROK_4_3,
  "grok-4-1-fast-reasoning": GROK_4_3,
  "grok-4-1-fast-non-reasoning": GROK_4_3,
  "grok-code-fast-1": GROK_4_3,
  "grok-3": GROK_4_3,
  "grok-3-mini": text("xai", [0.3, 0.075, 0.5], 131_072, XAI_TOOLS),
  "grok-4.20*": GROK_4_3,
  "grok-4.5*": text("xai", [2, 0.5, 6], 131_072, XAI_TOOLS),
  "grok-imagine-image": { provider: "xai", kind: "image", price: { image: 0.02 } },
  "grok-imagine-image-quality": { provider: "xai", kind: "image", price: { image: 0.05 } },
  "grok-imagine-video": {
    provider: "xai",
    kind: "video",
    price: { videoSecondBy: { "480p": 0.05, "720p": 0.05 } },
  },
  // Anthropic — Messages.
  "claude-opus-4-20250514": claude(15, 75, 32_000),
  "claude-opus-4-0": claude(15, 75, 32_000),
  "claude-opus-4-1*": claude(15, 75, 32_000),
  "claude-opus-4-5*": claude(5, 25, 64_000),
  "claude-opus-4-6*": claude(5, 25, 128_000),
  "claude-opus-4-7*": claude(5, 25, 128_000),
  "claude-opus-4-8*": claude(5, 25, 128_000),
  "claude-sonnet-4-20250514": claude(3, 15, 64_000, SONNET_LONG),
  "claude-sonnet-4-0": claude(3, 15, 64_000, SONNET_LONG),
  "claude-sonnet-4-5*": claude(3, 15, 64_000, SONNET_LONG),
  "claude-sonnet-4-6*": claude(3, 15, 64_000),
  "claude-haiku-4-5*": claude(1, 5, 64_000),
  "claude-3-7-sonnet*": claude(3, 15, 64_000),
  "claude-3-5-haiku*": claude(0.8, 4, 8_192),
  // The Anthropic-compatible vendors — Messages and their chat surfaces. None charges cache
  // writes beyond input.
  "deepseek-v4-flash": text("deepseek", [0.14, 0.0028, 0.28], 384_000),
  "deepseek-v4-pro": text("deepseek", [1.74, 0.0145, 3.48], 384_000),
  "kimi-k2-0905-preview": text("moonshot", [0.6, 0.15, 2.5], 262_144),
  "kimi-k2-0711-preview": text("moonshot", [0.6, 0.15, 2.5], 131_072),
  "kimi-k2-thinking": text("moonshot", [0.6, 0.15, 2.5], 262_144),
  "kimi-k2-turbo-preview": text("moonshot", [1.15, 0.15, 8], 262_144),
  "kimi-k2-thinking-turbo": text("moonshot", [1.15, 0.15, 8], 262_144),
  "kimi-k2.5": text("moonshot", [0.6, 0.1, 3], 262_144),
  "kimi-k2.6": text("moonshot", [0.95, 0.16, 4], 262_144),
  "kimi-k2.7-code": text("moonshot", [0.95, 0.19, 4], 262_144),
  "kimi-k3": text("moonshot", [3, 0.3, 15], 1_048_576),
  "glm-4.5": text("zhipu", [0.6, 0.11, 2.2], 98_304),
  "glm-4.5-air": text("zhipu", [0.2, 0.03, 1.1], 98_304),
  "glm-4.6": text("zhipu", [0.6, 0.11, 2.2], 131_072),
  "glm-4.7": text("zhipu", [0.6, 0.11, 2.2], 131_072),
  "glm-5": text("zhipu", [1, 0.2, 3.2], 131_100),
  "glm-5-turbo": text("zhipu", [1.2, 0.24, 4], 131_100),
  "glm-5.1": text("zhipu", [1.4, 0.26, 4.4], 131_100),
  "glm-5.2": text("zhipu", [1.4, 0.26, 4.4], 131_100),
  "glm-5.3": text("zhipu", [1.4, 0.26, 4.4], 131_100),
  // Google — generateContent, including the image models, and embeddings.
  "gemini-2.5-pro*": gemini([1.25, 0.125, 10], {
    ...GROUNDED_2,
    longContext: { above: 200_000, input: 2.5, cachedInput: 0.25, output: 15 },
  }),
  "gemini-2.5-flash": gemini([0.3, 0.03, 2.5], GROUNDED_2),
  "gemini-2.5-flash-preview*": gemini([0.3, 0.03, 2.5], GROUNDED_2),
  "gemini-2.5-flash-lite*": gemini([0.1, 0.01, 0.4], GROUNDED_2),
  "gemini-3-pro-preview": gemini([2, 0.2, 12], {
    ...GROUNDED_3,
    longContext: { above: 200_000, input: 4, cachedInput: 0.4, output: 18 },
  }),
  "gemini-3.1-pro-preview": gemini([2, 0.2, 12], {
    ...GROUNDED_3,
    longContext: { above: 200_000, input: 4, cachedInput: 0.4, output: 18 },
  }),
  "gemini-3-flash-preview": gemini([0.5, 0.05, 3], GROUNDED_3),
  "gemini-3.1-flash-lite*": gemini([0.25, 0.025, 1.5], GROUNDED_3),
  "gemini-3.5-flash*": gemini([1.5, 0.15, 9], GROUNDED_3),
  "gemini-2.5-flash-image*": geminiImage([0.3, null, 2.5], 30, []),
  "gemini-3-pro-image*": geminiImage([2, 0.2, 12], 120, ["1K", "2K", "4K"]),
  "gemini-3.1-flash-image*": geminiImage([0.5, 0.05, 3], 60, ["0.5K", "1K", "2K", "4K"]),
  "gemini-3.1-flash-lite-image*": geminiImage([0.25, 0.025, 1.5], 30, ["1K"]),
  "gemini-embedding-001": { provider: "gemini", kind: "embedding", price: { input: 0.15 } },
};
