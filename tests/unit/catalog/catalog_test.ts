import assert from "node:assert/strict";
import { buildConfig } from "../../../src/config/load.ts";
import { PATTERN_CACHE_SIZE } from "../../../src/catalog/catalog.ts";

const env = (vars: Record<string, string>) => (name: string) => vars[name];

Deno.test("the catalog prefers exact ids, then the most specific pattern", () => {
  const config = buildConfig({
    models: {
      "gemini-exact": { provider: "gemini", upstream: "gemini-2.5-flash", price: { input: 1 } },
    },
  }, env({ GEMINI_API_KEY: "g" }));
  const exact = config.catalog.resolve("gemini-exact");
  assert.ok(exact.ok);
  assert.equal(exact.model.upstreamId, "gemini-2.5-flash");
  const image = config.catalog.resolve("gemini-3-pro-image-preview");
  assert.ok(image.ok);
  assert.equal(image.model.prices?.imageOutput, 120_000_000_000); // the image pattern, not gemini-*
  const plain = config.catalog.resolve("gemini-2.5-flash");
  assert.ok(plain.ok);
  assert.equal(plain.model.upstreamId, "gemini-2.5-flash");
  assert.deepEqual(config.catalog.resolve("no-such-model"), { ok: false, reason: "unknown" });
  assert.deepEqual(config.catalog.resolve("claude-sonnet-4-5"), {
    ok: false,
    reason: "disabled",
    provider: "anthropic",
  });
});

Deno.test("prices default along their chain and free models carry no prices", () => {
  const config = buildConfig({
    defaultCatalog: false,
    providers: { up: { type: "openai", baseUrl: "http://127.0.0.1:1/v1/", apiKey: "literal" } },
    models: {
      priced: {
        provider: "up",
        maxOutputTokens: 32_000,
        price: {
          input: 2,
          output: 8,
          cacheWrite: 2.5,
          tiers: { priority: { input: 4, output: 16 }, flex: { input: 1, output: 4 } },
          longContext: { above: 200_000, input: 4, output: 12 },
          tools: { web_search: 0.01 },
        },
      },
      gratis: { provider: "up", free: true },
    },
  }, env({}));
  const priced = config.catalog.resolve("priced");
  assert.ok(priced.ok);
  assert.equal(priced.model.provider.baseUrl, "http://127.0.0.1:1/v1");
  assert.deepEqual(priced.model.prices, {
    input: 2_000_000_000,
    cachedInput: 2_000_000_000,
    cacheWrite: 2_500_000_000,
    cacheWrite1h: 2_500_000_000,
    imageInput: 2_000_000_000,
    output: 8_000_000_000,
    imageOutput: 8_000_000_000,
    image: 0,
    imageBy: new Map(),
    videoSecond: 0,
    videoSecondBy: new Map(),
    call: 0,
    // A tier's unset rates default as the base rates do: cached and cache writes at its input.
    tiers: new Map([
      ["priority", {
        input: 4_000_000_000,
        cachedInput: 4_000_000_000,
        cacheWrite: 4_000_000_000,
        cacheWrite1h: 4_000_000_000,
        imageInput: 4_000_000_000,
        output: 16_000_000_000,
        imageOutput: 16_000_000_000,
      }],
      ["flex", {
        input: 1_000_000_000,
        cachedInput: 1_000_000_000,
        cacheWrite: 1_000_000_000,
        cacheWrite1h: 1_000_000_000,
        imageInput: 1_000_000_000,
        output: 4_000_000_000,
        imageOutput: 4_000_000_000,
      }],
    ]),
    longContext: {
      above: 200_000,
      rates: {
        input: 4_000_000_000,
        cachedInput: 4_000_000_000,
        cacheWrite: 4_000_000_000,
        cacheWrite1h: 4_000_000_000,
        imageInput: 4_000_000_000,
        output: 12_000_000_000,
        imageOutput: 12_000_000_000,
      },
    },
    tools: new Map([["web_search", 10_000_000]]),
  });
  assert.equal(priced.model.maxOutputTokens, 32_000);
  const gratis = config.catalog.resolve("gratis");
  assert.ok(gratis.ok);
  assert.equal(gratis.model.prices, null);
  assert.equal(config.catalog.resolve("gpt-5.4").ok, false);
  assert.deepEqual(config.notices, []);
});

Deno.test("a model must be priced in the unit of its kind", () => {
  const base = {
    defaultCatalog: false,
    providers: { up: { type: "openai", baseUrl: "http://127.0.0.1:1/v1", apiKey: "k" } },
  };
  assert.throws(
    () =>
      buildConfig({
        ...base,
        models: { img: { provider: "up", kind: "image", price: { input: 1 } } },
      }, env({})),
    /models.img.price: an image model needs image or imageBy/,
  );
  assert.throws(
    () =>
      buildConfig({
        ...base,
        models: { vid: { provider: "up", kind: "video", price: { output: 1 } } },
      }, env({})),
    /a video model needs videoSecond or videoSecondBy/,
  );
  const ok = buildConfig({
    ...base,
    models: {
      vid: { provider: "up", kind: "video", price: { videoSecondBy: { "720p": 0.07 } } },
      img: { provider: "up", kind: "image", price: { imageBy: { "1024x1024/high": 0.167 } } },
    },
  }, env({}));
  const vid = ok.catalog.resolve("vid");
  assert.ok(vid.ok);
  assert.equal(vid.model.kind, "video");
  assert.deepEqual(vid.model.prices?.videoSecondBy, new Map([["720p", 70_000_000]]));
  const img = ok.catalog.resolve("img");
  assert.ok(img.ok);
  assert.deepEqual(img.model.prices?.imageBy, new Map([["1024x1024/high", 167_000_000]]));
});

Deno.test("listed: enabled providers' exact ids, and patterns by their stems when those are ids", () => {
  const config = buildConfig({
    models: {
      "local-*": { provider: "gemini", upstream: "gemini-2.5-flash", price: { input: 1 } },
      "fam*ily": { provider: "gemini", price: { input: 1 } },
    },
  }, env({ GEMINI_API_KEY: "g", OPENAI_API_KEY: "o" }));
  const listed = config.catalog.listed().map((m) => m.id);
  const has = (id: string) => listed.includes(id);
  assert.ok(has("gpt-5.4") && has("gemini-2.5-flash") && has("gemini-embedding-001"));
  // A family pattern by its stem; snapshot patterns of an exact id, open and inner ones not at all.
  assert.ok(has("gemini-2.5-pro") && has("gemini-3-pro-image"));
  for (const id of ["gpt-5.4-20", "gpt-5-20", "local-", "fam", "family"]) {
    assert.ok(!has(id), id);
  }
  // Providers without a key are left out.
  assert.ok(!listed.some((id) => id.startsWith("claude") || id.startsWith("grok")));
  assert.equal(new Set(listed).size, listed.length, "each id once");
  const entry = config.catalog.listed().find((m) => m.id === "gemini-2.5-pro")!;
  assert.deepEqual([entry.entry.pattern, entry.provider.name], ["gemini-2.5-pro*", "gemini"]);
});

Deno.test("resolutions of ids only a pattern matches are cached at most PATTERN_CACHE_SIZE; exact ids all", () => {
  const config = buildConfig({
    defaultCatalog: false,
    providers: { local: { type: "openai-compatible", baseUrl: "http://127.0.0.1:1/v1" } },
    models: {
      "local-*": { provider: "local", price: { input: 1 } },
      "local-exact": { provider: "local", upstream: "qwen3", price: { input: 2 } },
    },
  }, env({}));
  assert.equal(PATTERN_CACHE_SIZE, 1000, "the README's bound");
  const { catalog } = config;
  const resolved = (id: string) => {
    const r = catalog.resolve(id);
    assert.ok(r.ok);
    return r.model;
  };
  const exact = resolved("local-exact");
  const first = resolved("local-0");
  assert.equal(resolved("local-0"), first, "a cached resolution is the same object");
  for (let i = 1; i <= PATTERN_CACHE_SIZE; i++) resolved(`local-${i}-${"m".repeat(200)}`);
  // The oldest pattern id was dropped (resolved anew, to the same answer); the exact id stays.
  const again = resolved("local-0");
  assert.notEqual(again, first);
  assert.deepEqual(again, first);
  assert.equal(resolved("local-exact"), exact);
  assert.equal(again.upstreamId, "local-0");
  assert.equal(exact.upstreamId, "qwen3");
  // The latest ones are still cached.
  const latest = `local-${PATTERN_CACHE_SIZE}-${"m".repeat(200)}`;
  assert.equal(resolved(latest), resolved(latest));
});

Deno.test("a model's cacheBreakpoints: off where the config says false, else left to the default", () => {
  const config = buildConfig({
    models: {
      "claude-plain": {
        provider: "anthropic",
        upstream: "claude-sonnet-4-5",
        price: { input: 1 },
        cacheBreakpoints: false,
      },
      "claude-marked": { provider: "anthropic", price: { input: 1 }, cacheBreakpoints: true },
    },
  }, env({ ANTHROPIC_API_KEY: "a" }));
  const plain = config.catalog.resolve("claude-plain");
  assert.ok(plain.ok);
  assert.equal(plain.model.cacheBreakpoints, false);
  for (const id of ["claude-marked", "claude-sonnet-4-5"]) {
    const model = config.catalog.resolve(id);
    assert.ok(model.ok);
    assert.equal(model.model.cacheBreakpoints, undefined, id);
  }
  assert.throws(
    () =>
      buildConfig({
        models: { bad: { provider: "anthropic", price: { input: 1 }, cacheBreakpoints: "no" } },
      }, env({ ANTHROPIC_API_KEY: "a" })),
    /cacheBreakpoints: must be true or false/,
  );
});
