/**
 * The throughput scenarios. Each names the gateway's route and the upstream call it makes as the
 * emulator sees it (body for body, as recorded from the gateway) — which the bare proxy and the
 * direct runs send themselves — and, where a peer gateway does the same job, the client's call to
 * that peer (see `peers.ts`). Translated scenarios compare the gateway translating both ways
 * against a proxy that only relays the upstream's own protocol.
 */

/** A request as sent to one target (its base URL comes later). */
export interface Call {
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

/** One scenario: the client's call to the gateway and the upstream call it stands for. */
export interface Scenario {
  name: string;
  gateway: Call;
  /** Sent to the emulator directly and through the bare proxy (the proxy adds the keys). */
  upstream: Call;
  /** The same client call as each peer that does this job takes it. */
  peers?: Partial<Record<PeerId, Call>>;
}

import { AFFINITY, LIMITED } from "./report.ts";
import { CCR_KEY, CCR_UPSTREAM, type PeerId, portkeyRoute } from "./peer_calls.ts";

const PROMPT = "Write one sentence about switchyards and trains, please.";
/** The output cap the gateway sends for a client that set none (`limits.defaultMaxOutputTokens`). */
const CAP = 8192;

/** The key the emulator is called with (by the bare proxy, the floor proxy and the peers). */
export const UPSTREAM_KEY = "bench-upstream";

/** The upstream key headers of every family (the bare proxy sets them itself). */
export const UPSTREAM_HEADERS = {
  authorization: `Bearer ${UPSTREAM_KEY}`,
  "x-api-key": UPSTREAM_KEY,
  "x-goog-api-key": UPSTREAM_KEY,
  "anthropic-version": "2023-06-01",
};

/** The key the floor proxy's clients present (see `floor_proxy.ts`). */
export const FLOOR_KEY = "sy-floorbenchkey-0000000000000000000000000000000000000000000";
/**
 * The key of the floor with the features (see `floor_features.ts`), in the gateway's own format: it
 * is looked up in that proxy's store.
 */
export const FEATURES_KEY = "sy-benchfeature-0000000000000000000000000000000000000000000";

const upstream = (path: string, body: unknown): Call => ({ path, headers: {}, body });

const responses = (model: string, stream: boolean) => ({ model, input: PROMPT, stream });
const messages = (model: string, stream: boolean) => ({
  model,
  max_tokens: 1024,
  stream,
  messages: [{ role: "user", content: PROMPT }],
});
const chat = (model: string) => ({ model, messages: [{ role: "user", content: PROMPT }] });

const WORDS = ["the", "switchyard", "train", "signal", "track", "file", "test", "const", "build"];
/** `n` words of filler text, the same every run (from word `at` of the list). */
const words = (n: number, at: number) =>
  Array.from({ length: n }, (_, i) => WORDS[(at + 7 * i) % WORDS.length]).join(" ");
type Block = Record<string, unknown>;
/**
 * An agent's call as Claude Code makes it, the whole conversation each time: a system prompt, 15
 * tools with their schemas and 60 turns of tool use — about 130 KB of JSON.
 */
function agentMessages(model: string) {
  const properties = (tool: number) =>
    Object.fromEntries(
      Array.from(
        { length: 8 },
        (_, j) => [`p${j}`, { type: "string", description: words(12, tool + j) }],
      ),
    );
  const tools = Array.from({ length: 15 }, (_, i) => ({
    name: `tool_${i}`,
    description: words(90, i),
    input_schema: { type: "object", properties: properties(i) },
  }));
  const messages: { role: string; content: Block[] }[] = [
    { role: "user", content: [{ type: "text", text: words(250, 0) }] },
  ];
  for (let i = 0; i < 60; i++) {
    const id = `toolu_${String(i).padStart(4, "0")}`;
    const input = { p0: `src/file_${i}.ts` };
    messages.push({
      role: "assistant",
      content: [
        { type: "text", text: "Reading the file." },
        { type: "tool_use", id, name: "tool_1", input },
      ],
    });
    messages.push({
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: id, content: words(150, i) },
        { type: "text", text: words(80, i + 1) },
      ],
    });
  }
  // The last turn asks what the other scenarios ask (the emulator echoes it).
  messages.push({ role: "assistant", content: [{ type: "text", text: "Done." }] });
  messages.push({ role: "user", content: [{ type: "text", text: PROMPT }] });
  return { model, max_tokens: 1024, stream: true, system: words(1200, 3), tools, messages };
}
const contents = { contents: [{ role: "user", parts: [{ text: PROMPT }] }] };
/** A user turn as the gateway writes it when it translates (content blocks, not a string). */
const translated = {
  responses: {
    model: "gpt-5.4",
    input: [{ type: "message", role: "user", content: [{ type: "input_text", text: PROMPT }] }],
    store: false,
    include: ["reasoning.encrypted_content"],
    max_output_tokens: 1024,
    stream: true,
  },
  messages: {
    model: "claude-sonnet-4-5",
    messages: [{ role: "user", content: [{ type: "text", text: PROMPT }] }],
    stream: true,
    max_tokens: CAP,
  },
};
const GEMINI_SSE = "gemini-2.5-flash:streamGenerateContent?alt=sse";

/** Gateway client calls, authenticated as each protocol's clients are. */
function clients(key: string) {
  const bearer = { authorization: `Bearer ${key}` };
  const anthropic = { "x-api-key": key, "anthropic-version": "2023-06-01" };
  const google = { "x-goog-api-key": key };
  return {
    responses: (stream: boolean, model = "gpt-bench"): Call => ({
      path: "/v1/responses",
      headers: bearer,
      body: responses(model, stream),
    }),
    messages: (model: string, stream: boolean): Call => ({
      path: "/v1/messages",
      headers: anthropic,
      body: messages(model, stream),
    }),
    agent: (model: string): Call => ({
      path: "/v1/messages",
      headers: anthropic,
      body: agentMessages(model),
    }),
    generate: (model: string): Call => ({
      path: `/v1beta/models/${model}:streamGenerateContent?alt=sse`,
      headers: google,
      body: contents,
    }),
    chat: (stream: boolean): Call => ({
      path: "/v1/chat/completions",
      headers: bearer,
      body: stream ? { ...chat("gpt-bench"), stream } : chat("gpt-bench"),
    }),
  };
}

/** The peers' client calls: the gateway's, with the peer's model ids and keys. */
function peerCalls(emulatorUrl: string) {
  const anthropic = { "anthropic-version": "2023-06-01" };
  /** A Messages call through Portkey, routed to the emulator's Anthropic API. */
  const portkeyMessages = (body: unknown): Call => ({
    path: "/v1/messages",
    headers: { "x-api-key": UPSTREAM_KEY, ...anthropic, ...portkeyRoute("anthropic", emulatorUrl) },
    body,
  });
  return {
    portkeyChat: (): Call => ({
      path: "/v1/chat/completions",
      headers: { authorization: `Bearer ${UPSTREAM_KEY}`, ...portkeyRoute("openai", emulatorUrl) },
      body: chat("gpt-5.4"),
    }),
    portkeyMessages: (): Call => portkeyMessages(messages("claude-sonnet-4-5", true)),
    portkeyAgent: (): Call => portkeyMessages(agentMessages("claude-sonnet-4-5")),
    // Routed by its Router.default whatever the model, as Claude Code's calls are.
    ccrMessages: (): Call => ({
      path: "/v1/messages",
      headers: { "x-api-key": CCR_KEY, ...anthropic },
      body: messages("claude-sonnet-4-5", true),
    }),
  };
}

/** The throughput scenarios, for a gateway key, with the peers' calls to `emulatorUrl`. */
export function scenarios(
  key: string,
  limitedKey: string | undefined,
  emulatorUrl: string,
): Scenario[] {
  const client = clients(key);
  const peer = peerCalls(emulatorUrl);
  const modes = [["JSON", false], ["SSE", true]] as const;
  // The same calls with a key that has two budgets, a model list and a TPM limit (never reached).
  const limited = limitedKey
    ? modes.map(([mode, stream]) => ({
      name: `responses ${mode}${LIMITED}`,
      gateway: clients(limitedKey).responses(stream),
      upstream: upstream("/openai/v1/responses", {
        ...responses("gpt-5.4", stream),
        max_output_tokens: CAP,
      }),
    }))
    : [];
  return [
    ...limited,
    ...modes.map(([mode, stream]) => ({
      name: `responses ${mode}`,
      gateway: client.responses(stream),
      upstream: upstream("/openai/v1/responses", {
        ...responses("gpt-5.4", stream),
        max_output_tokens: CAP,
      }),
    })),
    ...modes.map(([mode, stream]) => ({
      name: `messages ${mode}`,
      gateway: client.messages("claude-bench", stream),
      upstream: upstream("/anthropic/v1/messages", messages("claude-sonnet-4-5", stream)),
      peers: stream ? { portkey: peer.portkeyMessages() } : undefined,
    })),
    // The same on a provider with two keys: each call's conversation is looked up and placed.
    ...modes.map(([mode, stream]) => ({
      name: `messages ${mode}${AFFINITY}`,
      gateway: client.messages("claude-keys", stream),
      upstream: upstream("/anthropic/v1/messages", messages("claude-sonnet-4-5", stream)),
    })),
    {
      // Claude Code's calls carry the whole conversation, tools and system prompt.
      name: "agent messages SSE",
      gateway: client.agent("claude-bench"),
      upstream: upstream("/anthropic/v1/messages", agentMessages("claude-sonnet-4-5")),
      peers: { portkey: peer.portkeyAgent() },
    },
    {
      name: "generateContent SSE",
      gateway: client.generate("gemini-bench"),
      upstream: upstream(`/gemini/v1beta/models/${GEMINI_SSE}`, {
        ...contents,
        generationConfig: { maxOutputTokens: CAP },
      }),
    },
    {
      name: "chat JSON",
      gateway: client.chat(false),
      upstream: upstream("/openai/v1/chat/completions", {
        ...chat("gpt-5.4"),
        max_completion_tokens: CAP,
      }),
      peers: { portkey: peer.portkeyChat() },
    },
    {
      name: "chat SSE",
      gateway: client.chat(true),
      // The gateway asks for the usage chunk (and drops it for a client that did not).
      upstream: upstream("/openai/v1/chat/completions", {
        model: "gpt-5.4",
        messages: [{ role: "user", content: PROMPT }],
        stream: true,
        max_completion_tokens: CAP,
        stream_options: { include_usage: true },
      }),
    },
    {
      name: "messages → responses SSE",
      gateway: client.messages("gpt-bench", true),
      upstream: upstream("/openai/v1/responses", translated.responses),
    },
    {
      // An OpenAI-compatible provider, which speaks only chat completions.
      name: "messages → chat SSE",
      gateway: client.messages("chat-bench", true),
      upstream: upstream(CCR_UPSTREAM.path, {
        ...chat(CCR_UPSTREAM.model),
        max_tokens: 1024,
        stream: true,
        stream_options: { include_usage: true },
      }),
      peers: { "claude-code-router": peer.ccrMessages() },
    },
    {
      name: "generateContent → messages SSE",
      gateway: client.generate("claude-bench"),
      upstream: upstream("/anthropic/v1/messages", translated.messages),
    },
    {
      // Codex and the Agents SDK on a Claude model.
      name: "responses → messages SSE",
      gateway: client.responses(true, "claude-bench"),
      upstream: upstream("/anthropic/v1/messages", translated.messages),
    },
  ];
}
