/**
 * The catalog's vocabularies (pure data): the provider wire families the gateway can talk to and
 * the kinds of model it serves. The config schema validates against them; the catalog and the
 * surfaces read them without reaching up into the config.
 */

/** Provider wire families the gateway can talk to. */
export const PROVIDER_TYPES = [
  "openai",
  "xai",
  "anthropic",
  "gemini",
  "openai-compatible",
] as const;
/** One of `PROVIDER_TYPES`. */
export type ProviderType = typeof PROVIDER_TYPES[number];

/** The kinds of model: which endpoints a model serves. */
export const MODEL_KINDS = ["text", "embedding", "image", "video"] as const;
/** One of `MODEL_KINDS`. */
export type ModelKind = typeof MODEL_KINDS[number];
