/**
 * Anthropic Messages upstreams: Anthropic itself and the Anthropic-compatible endpoints of
 * DeepSeek, Moonshot (Kimi) and Zhipu (GLM). The base URL is the part before `/v1/messages`
 * (e.g. `https://api.deepseek.com/anthropic`); auth is `x-api-key` (see `catalog/surfaces.ts`).
 * Per-vendor differences (`anthropic-messages.md` §8) are handled here, keyed by host — or,
 * behind a proxy (or the emulator), by a path segment naming the vendor.
 */
import type { ProviderEntry } from "../catalog/catalog.ts";

interface Quirks {
  /** The vendor ignores or rejects beta flags. */
  dropBeta?: boolean;
  /** The vendor has no `/v1/messages/count_tokens`. */
  noCountTokens?: boolean;
}

const QUIRKS: [RegExp, RegExp, Quirks][] = [
  [/(^|\.)deepseek\.com$/, /^\/deepseek\b/, { dropBeta: true, noCountTokens: true }],
  [/(^|\.)moonshot\.(ai|cn)$|(^|\.)kimi\.com$/, /^\/(moonshot|kimi)\b/, { noCountTokens: true }],
  [/(^|\.)bigmodel\.cn$|(^|\.)z\.ai$/, /^\/(zhipu|glm)\b/, { noCountTokens: true }],
];

function quirks(provider: ProviderEntry): Quirks {
  const url = new URL(provider.baseUrl);
  return QUIRKS.find(([host, path]) => host.test(url.hostname) || path.test(url.pathname))?.[2] ??
    {};
}

/** Whether the upstream can count tokens itself. */
export function anthropicCountsTokens(provider: ProviderEntry): boolean {
  return !quirks(provider).noCountTokens;
}

/** The client's headers as this vendor should get them (pure). */
export function forwardedHeaders(
  provider: ProviderEntry,
  headers: Record<string, string>,
): Record<string, string> {
  if (!quirks(provider).dropBeta) return headers;
  const { "anthropic-beta": _dropped, ...rest } = headers;
  return rest;
}
