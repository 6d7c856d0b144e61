/**
 * A conversation's turns as a client without an SDK sends them to a gateway — raw HTTP Messages,
 * Claude Code's way (a long system prompt and the last user turn marked for caching, the session
 * in `metadata.user_id`) — each on a fresh connection (so the kernel spreads them over serving
 * threads), with what served each: the access-log entry, and the upstream key the emulator saw.
 */
import { startEmulator } from "../../src/emulator/server.ts";
import { requestLogged } from "./gateway.ts";
import { anthropic, type Json } from "./http.ts";
import type { UpstreamRequest } from "./setup.ts";

/** A system prompt long enough to cache (1,500 tokens in the emulator's count). */
export const LONG_SYSTEM = Array.from({ length: 1500 }, (_, i) => `rule${i % 11}`).join(" ");

/** One turn as it was served. */
export interface Turn {
  status: number;
  json: Json;
  /** `x-switchyard-provider`, `x-switchyard-attempts`. */
  provider: string | null;
  attempts: string | null;
  /** The call's access-log entry. */
  log: Json;
  /** The upstream key of the request that answered (as the emulator recorded it). */
  upstreamKey?: string;
}

/** What a conversation's turns need of the emulator: its count of requests and its records. */
export interface Upstream {
  count(): Promise<number>;
  since(count: number): Promise<UpstreamRequest[]>;
}

/** The emulator at `url` (started with `record: true`), as a conversation's turns read it. */
export function upstreamAt(url: string): Upstream {
  return {
    count: async () => (await (await fetch(`${url}/_emulator/stats`)).json()).requests,
    since: async (count) =>
      ((await (await fetch(`${url}/_emulator/requests`)).json()) as UpstreamRequest[])
        .filter((r) => r.n > count),
  };
}

/** An emulator that takes only some upstream keys, and what a test of several keys needs of it. */
export interface KeyedEmulator {
  emulator: Deno.HttpServer<Deno.NetAddr>;
  url: string;
  upstream: Upstream;
  /** A provider of the emulator's Anthropic (or OpenAI) API with these keys, in turn. */
  anthropicWith(...keys: string[]): Json;
  openaiWith(...keys: string[]): Json;
  /** Makes `keys` play `fault` (null: none) from now on. */
  setFault(keys: readonly string[], fault: string | null): Promise<void>;
}

/** Starts an emulator that records its requests and takes only `keys` (see `KeyedEmulator`). */
export function keyedEmulator(keys: readonly string[]): KeyedEmulator {
  const emulator = startEmulator({ record: true, keys: keys.map((key) => ({ key })) });
  const url = `http://127.0.0.1:${emulator.addr.port}`;
  return {
    emulator,
    url,
    upstream: upstreamAt(url),
    anthropicWith: (...with_) => ({
      type: "anthropic",
      baseUrl: `${url}/anthropic`,
      apiKey: with_,
    }),
    openaiWith: (...with_) => ({ type: "openai", baseUrl: `${url}/openai/v1`, apiKey: with_ }),
    setFault: async (faulty, fault) => {
      await Promise.all(
        faulty.map((key) =>
          fetch(`${url}/_emulator/keys`, { method: "POST", body: JSON.stringify({ key, fault }) })
            .then((res) => res.body?.cancel())
        ),
      );
    },
  };
}

/** A Claude Code–style session: its turns, each sent with the whole history before it. */
export class Session {
  readonly history: Json[] = [];

  constructor(
    readonly model: string,
    /** Claude Code's session id (undefined: none, the prefix names the conversation). */
    readonly id: string | undefined,
    readonly upstream: Upstream,
    /** The cache's TTL the turns ask for (`1h`: extended; default 5 minutes). */
    readonly ttl?: "1h",
  ) {}

  /** Sends the next turn to the gateway at `url` with client key `key`. */
  async turn(
    url: string,
    key: string,
    text: string,
    gateway: { logs: string[] },
    headers: Record<string, string> = {},
  ): Promise<Turn> {
    const before = await this.upstream.count();
    const question = { type: "text", text };
    const body = {
      model: this.model,
      max_tokens: 64,
      system: [{
        type: "text",
        text: LONG_SYSTEM,
        cache_control: { type: "ephemeral", ...(this.ttl ? { ttl: this.ttl } : {}) },
      }],
      ...(this.id === undefined ? {} : {
        metadata: {
          user_id: JSON.stringify({ device_id: "dev-1", account_uuid: "", session_id: this.id }),
        },
      }),
      messages: [
        ...this.history,
        { role: "user", content: [{ ...question, cache_control: { type: "ephemeral" } }] },
      ],
    };
    const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
    const res = await fetch(`${url}/v1/messages`, {
      method: "POST",
      headers: { ...anthropic(key), "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
      client,
    });
    const json = JSON.parse(await res.text().finally(() => client.close()));
    const log = await requestLogged(gateway, res.headers.get("x-request-id")!);
    const answered = (await this.upstream.since(before))
      .filter((r) => r.path.endsWith("/v1/messages"));
    if (res.status === 200) {
      this.history.push({ role: "user", content: [question] }, {
        role: "assistant",
        content: json.content,
      });
    }
    return {
      status: res.status,
      json,
      provider: res.headers.get("x-switchyard-provider"),
      attempts: res.headers.get("x-switchyard-attempts"),
      log,
      upstreamKey: answered.at(-1)?.headers["x-api-key"],
    };
  }
}
