import assert from "node:assert/strict";
import type { ProviderEntry } from "../../../src/catalog/catalog.ts";
import { anthropicCountsTokens, forwardedHeaders } from "../../../src/providers/anthropic.ts";
import { surfacesOf } from "../../../src/catalog/surfaces.ts";

const provider = (baseUrl: string): ProviderEntry => ({
  name: "p",
  type: "anthropic",
  baseUrl,
  keys: [{ secret: "k", weight: 1, id: "k", label: "key 1 of 1" }],
  enabled: true,
  surfaces: surfacesOf("anthropic", baseUrl),
});
const headers = { "anthropic-version": "2023-06-01", "anthropic-beta": "context-1m-2025-08-07" };

Deno.test("vendor quirks of the Anthropic-compatible endpoints are keyed by host", () => {
  const anthropic = provider("https://api.anthropic.com");
  const deepseek = provider("https://api.deepseek.com/anthropic");
  assert.deepEqual(forwardedHeaders(anthropic, headers), headers);
  assert.deepEqual(forwardedHeaders(deepseek, headers), { "anthropic-version": "2023-06-01" });
  assert.equal(anthropicCountsTokens(anthropic), true);
  for (
    const url of [
      "https://api.deepseek.com/anthropic",
      "https://api.moonshot.ai/anthropic",
      "https://api.moonshot.cn/anthropic",
      "https://api.kimi.com/coding",
      "https://open.bigmodel.cn/api/anthropic",
      "https://api.z.ai/api/anthropic",
    ]
  ) {
    assert.equal(anthropicCountsTokens(provider(url)), false, url);
  }
});
