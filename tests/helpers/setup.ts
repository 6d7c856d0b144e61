/** A gateway wired to an in-process provider emulator, with an account and key ready. */
import { PROVIDER_PREFIXES, startEmulator } from "../../src/emulator/server.ts";
import { type Gateway, startGateway } from "./gateway.ts";
import { DEFAULT_PROVIDERS } from "../../src/config/defaults.ts";

export const UPSTREAM_KEY = "upstream-secret-1234";

/** A request the emulator recorded; `n` is its number in the emulator's count of requests. */
export interface UpstreamRequest {
  n: number;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
  size: number;
}

export interface Stack {
  gateway: Gateway;
  emulator: Deno.HttpServer<Deno.NetAddr>;
  emulatorUrl: string;
  /** The last 200 requests the emulator received (it keeps no more), each with its number. */
  upstreamRequests(): Promise<UpstreamRequest[]>;
  emulatorStats(): Promise<Record<string, number>>;
  /**
   * How many requests the emulator has received, ever: a count that only grows (the recorded
   * list keeps the last 200), for "no upstream call was made" checks.
   */
  upstreamCount(): Promise<number>;
  /** The requests received since `upstreamCount()` returned `count` (at most the last 200). */
  upstreamSince(count: number): Promise<UpstreamRequest[]>;
  /** Starts a new gateway on the same config and store (after `gateway.crash()`); returns it. */
  restart(): Promise<Gateway>;
  /**
   * Starts another gateway on the same config in a directory of its own (a replica, when the
   * config names a shared PostgreSQL store); `stop` stops it too.
   */
  replica(options?: { workers?: number }): Promise<Gateway>;
  stop(): Promise<void>;
}

/** Test prices (USD per million tokens). */
export const TEST_PRICE = {
  input: 2.5,
  cachedInput: 0.25,
  cacheWrite: 3.125,
  cacheWrite1h: 5,
  output: 15,
  imageOutput: 30,
  call: 0.01,
};

/** The test text models' output limit (as the catalog's `maxOutputTokens`). */
export const MAX_OUT = { maxOutputTokens: 8192 };

/**
 * Starts the emulator and a gateway whose providers all point at it. `overrides.providers` and
 * `overrides.models` are merged into the test catalog; `overrides.workers` is `serve --workers`
 * (1 unless given); other keys replace the defaults.
 */
export async function startStack(
  overrides: {
    providers?: Record<string, unknown>;
    models?: Record<string, unknown>;
    [key: string]: unknown;
  } = {},
): Promise<Stack> {
  const { providers: extraProviders, models: extraModels, workers, env: extraEnv, ...extraConfig } =
    overrides;
  const emulator = startEmulator({ requiredKey: UPSTREAM_KEY, record: true });
  const emulatorUrl = `http://127.0.0.1:${emulator.addr.port}`;
  const provider = (type: string, prefix: string, chatPrefix?: string) => ({
    type,
    baseUrl: `${emulatorUrl}${prefix}`,
    ...(chatPrefix ? { chatBaseUrl: `${emulatorUrl}${chatPrefix}` } : {}),
    apiKey: "env:EMULATED_UPSTREAM_KEY",
  });
  const gatewayOptions = {
    config: {
      server: { maxBodyBytes: 65536 },
      // One attempt per call: these tests read each upstream answer as it is (the routing tests
      // set their own).
      routing: { maxAttempts: 1 },
      defaultCatalog: false,
      providers: {
        // Every built-in family where the emulator serves it (holding threads where the real one
        // does: the built-in entry says).
        ...Object.fromEntries(
          Object.entries(PROVIDER_PREFIXES).map(([name, at]) => {
            const threads = DEFAULT_PROVIDERS[name]?.messageThreads;
            return [name, {
              ...provider(at.type, at.baseUrl, at.chatBaseUrl),
              ...(threads === undefined ? {} : { messageThreads: threads }),
            }];
          }),
        ),
        // A local OpenAI-compatible server: chat completions only, no key.
        local: { type: "openai-compatible", baseUrl: `${emulatorUrl}/local/v1` },
        // A provider given with a `baseUrl` path is on the emulator, under that prefix.
        ...Object.fromEntries(
          Object.entries(extraProviders ?? {}).map(([name, p]) => {
            const entry = p as { baseUrl?: string };
            return [
              name,
              entry.baseUrl?.startsWith("/")
                ? { ...entry, baseUrl: `${emulatorUrl}${entry.baseUrl}` }
                : entry,
            ];
          }),
        ),
      },
      models: {
        "gpt-test": { provider: "openai", upstream: "gpt-5.4", price: TEST_PRICE, ...MAX_OUT },
        "grok-test": { provider: "xai", upstream: "grok-4", price: TEST_PRICE, ...MAX_OUT },
        "free-test": { provider: "openai", upstream: "gpt-5-nano", free: true },
        "video-test": {
          provider: "xai",
          kind: "video",
          upstream: "grok-imagine-video",
          price: { videoSecondBy: { "480p": 0.05, "720p": 0.07 } },
        },
        "image-test": {
          provider: "openai",
          kind: "image",
          upstream: "gpt-image-1",
          price: { image: 0.042, imageBy: { "1024x1024/high": 0.167, low: 0.011, medium: 0.04 } },
        },
        "grok-image-test": {
          provider: "xai",
          kind: "image",
          upstream: "grok-imagine-image",
          price: { image: 0.02 },
        },
        "embed-test": {
          provider: "openai",
          kind: "embedding",
          upstream: "text-embedding-3-small",
          price: { input: 0.02 },
        },
        "claude-test": {
          provider: "anthropic",
          upstream: "claude-sonnet-4-5",
          price: TEST_PRICE,
          ...MAX_OUT,
        },
        "deepseek-test": {
          provider: "deepseek",
          upstream: "deepseek-v4-pro",
          price: TEST_PRICE,
          ...MAX_OUT,
        },
        "kimi-test": { provider: "moonshot", upstream: "kimi-k2", price: TEST_PRICE, ...MAX_OUT },
        "glm-test": { provider: "zhipu", upstream: "glm-4.6", price: TEST_PRICE, ...MAX_OUT },
        "gemini-test": {
          provider: "gemini",
          upstream: "gemini-2.5-flash",
          price: TEST_PRICE,
          ...MAX_OUT,
        },
        "gemini-3-test": {
          provider: "gemini",
          upstream: "gemini-3-pro-preview",
          price: TEST_PRICE,
          ...MAX_OUT,
        },
        "local-test": { provider: "local", upstream: "qwen3-coder", price: TEST_PRICE, ...MAX_OUT },
        "gemini-3-pro-image-test": {
          provider: "gemini",
          upstream: "gemini-3-pro-image-preview",
          price: TEST_PRICE,
          image: { sizes: ["1K", "2K", "4K"] },
        },
        "gemini-2.5-flash-image-test": {
          provider: "gemini",
          upstream: "gemini-2.5-flash-image",
          price: TEST_PRICE,
          image: { sizes: [] },
        },
        "gemini-3.1-flash-image-test": {
          provider: "gemini",
          upstream: "gemini-3.1-flash-image-preview",
          price: TEST_PRICE,
          image: { sizes: ["0.5K", "1K", "2K", "4K"] },
        },
        "gemini-3.1-flash-lite-image-test": {
          provider: "gemini",
          upstream: "gemini-3.1-flash-lite-image",
          price: TEST_PRICE,
          image: { sizes: ["1K"] },
        },
        ...extraModels,
      },
      ...extraConfig,
    },
    env: { EMULATED_UPSTREAM_KEY: UPSTREAM_KEY, ...extraEnv as Record<string, string> | undefined },
    workers: typeof workers === "number" ? workers : undefined,
  };
  let gateway = await startGateway(gatewayOptions);
  const replicas: Gateway[] = [];
  return {
    get gateway() {
      return gateway;
    },
    emulator,
    emulatorUrl,
    upstreamRequests: async () => await (await fetch(`${emulatorUrl}/_emulator/requests`)).json(),
    emulatorStats: async () => await (await fetch(`${emulatorUrl}/_emulator/stats`)).json(),
    upstreamCount: async () =>
      (await (await fetch(`${emulatorUrl}/_emulator/stats`)).json()).requests,
    async upstreamSince(count) {
      const recorded: UpstreamRequest[] = await (await fetch(`${emulatorUrl}/_emulator/requests`))
        .json();
      // A full list whose oldest came after `count`: some requests since fell off its start.
      if (recorded.length >= 200 && recorded[0].n > count + 1) {
        throw new Error(`the requests since number ${count} are no longer all recorded`);
      }
      return recorded.filter((r) => r.n > count);
    },
    async restart() {
      gateway = await startGateway({ ...gatewayOptions, dir: gateway.dir });
      return gateway;
    },
    async replica(options = {}) {
      const replica = await startGateway({ ...gatewayOptions, ...options });
      replicas.push(replica);
      return replica;
    },
    async stop() {
      await Promise.all([gateway, ...replicas].map((g) => g.stop()));
      await emulator.shutdown();
    },
  };
}

/** GET /v1/usage for a key. */
// deno-lint-ignore no-explicit-any
export async function usageOf(gateway: Gateway, key: string): Promise<Record<string, any>> {
  const res = await fetch(`${gateway.url}/v1/usage`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return await res.json();
}

export { eventually } from "./poll.ts";
