/**
 * The embedded default catalog: the seed's providers and model families with list prices in USD.
 * Operators override any entry by name in their config file (or switch these off with
 * `"defaultCatalog": false`); prices change, so check them before you charge real money.
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
  },
  moonshot: {
    type: "anthropic",
    baseUrl: "https://api.moonshot.ai/anthropic",
    chatBaseUrl: "https://api.moonshot.ai/v1",
    apiKey: "env:MOONSHOT_API_KEY",
  },
  zhipu: {
    type: "anthropic",
    baseUrl: "https://api.z.ai/api/anthropic",
    chatBaseUrl: "https://api.z.ai/api/paas/v4",
    apiKey: "env:ZHIPU_API_KEY",
  },
  gemini: {
    type: "gemini",
    baseUrl: "https://generativelanguage.googleapis.com",
    apiKey: "env:GEMINI_API_KEY",
  },
};

const tokens = (input: number, cachedInput: number, output: number, cacheWrite?: number) => ({
  input,
  cachedInput,
  output,
  ...(cacheWrite === undefined ? {} : { cacheWrite, cacheWrite1h: input * 2 }),
});

/** OpenAI's text models: tokens, and $0.01 per `/v1/alpha/search` call ($10 per 1,000). */
const openaiText = (input: number, cachedInput: number, output: number) => ({
  ...tokens(input, cachedInput, output),
  call: 0.01,
});

/** GPT image prices per image: `[low, medium, high]` for square and for wide/tall sizes. */
const gptImage = (square: number[], wide: number[]) => ({
  image: square[1],
  imageBy: Object.fromEntries(["low", "medium", "high"].flatMap((quality, i) => [
    [quality, square[i]],
    [`1536x1024/${quality}`, wide[i]],
    [`1024x1536/${quality}`, wide[i]],
  ])),
});

export const DEFAULT_MODELS: Record<string, ModelInput> = {
  // OpenAI — Responses, chat, embeddings, images, compaction, search.
  "gpt-5.4": { provider: "openai", price: openaiText(2.5, 0.25, 15) },
  "gpt-5.4-mini": { provider: "openai", price: openaiText(0.75, 0.075, 4.5) },
  "gpt-5": { provider: "openai", price: openaiText(1.25, 0.125, 10) },
  "gpt-5-mini": { provider: "openai", price: openaiText(0.25, 0.025, 2) },
  "gpt-5-nano": { provider: "openai", price: openaiText(0.05, 0.005, 0.4) },
  "gpt-5*": { provider: "openai", price: openaiText(1.25, 0.125, 10) },
  "gpt-4.1*": { provider: "openai", price: openaiText(2, 0.5, 8) },
  "gpt-4o*": { provider: "openai", price: openaiText(2.5, 1.25, 10) },
  "o3*": { provider: "openai", price: openaiText(2, 0.5, 8) },
  "o4-mini*": { provider: "openai", price: openaiText(1.1, 0.275, 4.4) },
  "text-embedding-3-small": { provider: "openai", kind: "embedding", price: { input: 0.02 } },
  "text-embedding-3-large": { provider: "openai", kind: "embedding", price: { input: 0.13 } },
  "gpt-image-1": {
    provider: "openai",
    kind: "image",
    price: gptImage([0.011, 0.042, 0.167], [0.016, 0.063, 0.25]),
  },
  "gpt-image-1-mini": {
    provider: "openai",
    kind: "image",
    price: gptImage([0.005, 0.011, 0.036], [0.006, 0.015, 0.052]),
  },
  // xAI — Responses, chat, images, video.
  "grok-4*": { provider: "xai", price: tokens(3, 0.75, 15) },
  "grok-code-fast*": { provider: "xai", price: tokens(0.2, 0.02, 1.5) },
  "grok-imagine-image*": { provider: "xai", kind: "image", price: { image: 0.02 } },
  "grok-imagine-video*": {
    provider: "xai",
    kind: "video",
    price: { videoSecond: 0.05, videoSecondBy: { "480p": 0.05, "720p": 0.07 } },
  },
  // Anthropic and the Anthropic-compatible providers — Messages.
  "claude-opus-4-1*": { provider: "anthropic", price: tokens(15, 1.5, 75, 18.75) },
  "claude-opus-4*": { provider: "anthropic", price: tokens(5, 0.5, 25, 6.25) },
  "claude-sonnet-4*": { provider: "anthropic", price: tokens(3, 0.3, 15, 3.75) },
  "claude-haiku-4*": { provider: "anthropic", price: tokens(1, 0.1, 5, 1.25) },
  "deepseek-*": { provider: "deepseek", price: tokens(0.28, 0.028, 0.42, 0.28) },
  "kimi-*": { provider: "moonshot", price: tokens(0.6, 0.15, 2.5, 0.6) },
  "glm-*": { provider: "zhipu", price: tokens(0.6, 0.11, 2.2, 0.6) },
  // Google — generateContent, including the image models.
  "gemini-2.5-pro*": { provider: "gemini", price: tokens(1.25, 0.125, 10) },
  "gemini-2.5-flash-image*": {
    provider: "gemini",
    price: { input: 0.3, cachedInput: 0.03, output: 2.5, imageOutput: 30 },
    image: { sizes: [] },
  },
  "gemini-3-pro-image*": {
    provider: "gemini",
    price: { input: 2, cachedInput: 0.2, output: 12, imageOutput: 120 },
    image: { sizes: ["1K", "2K", "4K"] },
  },
  "gemini-3.1-flash-image*": {
    provider: "gemini",
    price: { input: 0.5, cachedInput: 0.05, output: 3, imageOutput: 60 },
    image: { sizes: ["0.5K", "1K", "2K", "4K"] },
  },
  "gemini-3.1-flash-lite-image*": {
    provider: "gemini",
    price: { input: 0.25, cachedInput: 0.025, output: 1.5, imageOutput: 30 },
    image: { sizes: ["1K"] },
  },
  "gemini-*": { provider: "gemini", price: tokens(0.3, 0.03, 2.5) },
};
