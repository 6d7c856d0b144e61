/**
 * The client's prompt-cache intent through translation, every client protocol to every upstream
 * one: Messages breakpoints (and their TTL) back on the blocks they were on, and to no upstream
 * that caches by itself; OpenAI's key and retention to OpenAI (the key to xAI too); gateway
 * breakpoints for clients of protocols that cache by themselves on a Messages upstream (an hour
 * when extended retention is asked, none when the model turns them off). None is an adaptation.
 */
import assert from "node:assert/strict";
import { PROTOCOLS } from "../../../src/protocols/index.ts";
import type { ProviderType } from "../../../src/config/schema.ts";
import { collect } from "../../../src/translate/adaptations.ts";
import type { Target } from "../../../src/translate/codec.ts";
import type { Json, ProtocolId } from "../../../src/translate/ir.ts";

const EPHEMERAL = { type: "ephemeral" };
const HOUR = { type: "ephemeral", ttl: "1h" };

const TARGETS: Record<ProtocolId, Target> = {
  messages: { model: "claude", provider: "anthropic", family: "anthropic" },
  responses: { model: "gpt", provider: "openai", family: "openai" },
  chat: { model: "local", provider: "local", family: "openai-compatible" },
  generate: { model: "gemini-2.5-flash", provider: "gemini", family: "gemini" },
};

/** `body` of the `from` protocol translated for `target`, with the adaptations noted. */
function translate(from: ProtocolId, to: ProtocolId, body: Json, target = TARGETS[to]) {
  const decoded = collect((adapt) => PROTOCOLS[from].decodeRequest(body, {}, adapt));
  const encoded = collect((adapt) => PROTOCOLS[to].encodeRequest(decoded.value, target, adapt));
  return {
    body: encoded.value,
    adaptations: [...decoded.adaptations, ...encoded.adaptations].map((a) => a.kind),
  };
}

/** The paths of every `cache_control` in `value`, with its TTL, sorted. */
function marks(value: unknown): string[] {
  return found(value).sort();
}

function found(value: unknown, at = ""): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => found(v, `${at}[${i}]`));
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, v]) =>
    key === "cache_control"
      ? [`${at || "."}${(v as Json).ttl ? `:${(v as Json).ttl}` : ""}`]
      : found(v, `${at}.${key}`)
  );
}

/** A Messages request with the client's breakpoints all over it. */
const MARKED = {
  model: "claude",
  max_tokens: 100,
  cache_control: EPHEMERAL,
  tools: [
    { name: "read", input_schema: { type: "object" } },
    { name: "write", input_schema: { type: "object" }, cache_control: HOUR },
  ],
  system: [
    { type: "text", text: "Be terse." },
    { type: "text", text: "Use tools.", cache_control: HOUR },
  ],
  messages: [
    {
      role: "user",
      content: [
        { type: "text", text: "Read a." },
        {
          type: "image",
          source: { type: "base64", media_type: "image/png", data: "iVBO" },
          cache_control: EPHEMERAL,
        },
      ],
    },
    {
      role: "assistant",
      content: [{
        type: "tool_use",
        id: "toolu_1",
        name: "read",
        input: { path: "a" },
        cache_control: EPHEMERAL,
      }],
    },
    {
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: "toolu_1",
          content: [{ type: "text", text: "A", cache_control: { type: "ephemeral", ttl: "5m" } }],
        },
        { type: "text", text: "Now b.", cache_control: EPHEMERAL },
      ],
    },
  ],
};

/** The same request with no breakpoint. */
const PLAIN = JSON.parse(JSON.stringify(MARKED).replace(/,?"cache_control":\{[^}]*\}/g, ""));

Deno.test("Messages to Messages: every breakpoint back where it was, with its TTL; none added", () => {
  const { body, adaptations } = translate("messages", "messages", MARKED);
  assert.deepEqual(marks(body), marks(MARKED));
  assert.deepEqual(marks(MARKED), [
    ".",
    ".messages[0].content[1]",
    ".messages[1].content[0]",
    ".messages[2].content[0].content[0]:5m",
    ".messages[2].content[1]",
    ".system[1]:1h",
    ".tools[1]:1h",
  ]);
  assert.deepEqual(adaptations, []);
  // Without breakpoints the system prompt stays one string and nothing is placed (a Messages
  // client chooses its own).
  const plain = translate("messages", "messages", PLAIN).body;
  assert.deepEqual(marks(plain), []);
  assert.equal(plain.system, "Be terse.\n\nUse tools.");
});

Deno.test("Messages to an upstream that caches by itself: breakpoints not sent, nor noted", () => {
  for (const to of ["responses", "chat", "generate"] as const) {
    const marked = translate("messages", to, MARKED);
    const plain = translate("messages", to, PLAIN);
    assert.deepEqual(marked.body, plain.body, to);
    assert.deepEqual(marked.adaptations, plain.adaptations, `${to}: no adaptation of its own`);
    assert.ok(!JSON.stringify(marked.body).includes("cache"), to);
  }
});

/** A turn of each protocol that caches by itself: a tool, a system prompt, a turn answered. */
const CLIENTS: Record<"responses" | "chat" | "generate", Json> = {
  responses: {
    model: "m",
    instructions: "Be terse.",
    tools: [{ type: "function", name: "read", parameters: { type: "object", properties: {} } }],
    input: [
      { role: "user", content: "Read a." },
      { type: "function_call", call_id: "call_1", name: "read", arguments: "{}" },
      { type: "function_call_output", call_id: "call_1", output: "A" },
    ],
    prompt_cache_key: "conv-1",
  },
  chat: {
    model: "m",
    tools: [{ type: "function", function: { name: "read", parameters: { type: "object" } } }],
    messages: [
      { role: "system", content: "Be terse." },
      { role: "user", content: "Read a." },
      {
        role: "assistant",
        content: null,
        tool_calls: [{
          id: "call_1",
          type: "function",
          function: { name: "read", arguments: "{}" },
        }],
      },
      { role: "tool", tool_call_id: "call_1", content: "A" },
    ],
    prompt_cache_key: "conv-1",
  },
  generate: {
    systemInstruction: { parts: [{ text: "Be terse." }] },
    tools: [{ functionDeclarations: [{ name: "read", parameters: { type: "OBJECT" } }] }],
    contents: [
      { role: "user", parts: [{ text: "Read a." }] },
      { role: "model", parts: [{ functionCall: { name: "read", args: {} } }] },
      { role: "user", parts: [{ functionResponse: { name: "read", response: { result: "A" } } }] },
    ],
  },
};

Deno.test("clients of protocols that cache by themselves get the gateway's breakpoints on Messages", () => {
  for (const [from, body] of Object.entries(CLIENTS) as [ProtocolId, Json][]) {
    const { body: sent, adaptations } = translate(from, "messages", body);
    assert.deepEqual(marks(sent), [".messages[1].content[0]", ".system[0]", ".tools[0]"], from);
    assert.deepEqual(adaptations, [], from);
    assert.ok(!("prompt_cache_key" in sent), from);
    // Turned off for the model: none.
    const off = translate(from, "messages", body, { ...TARGETS.messages, cacheBreakpoints: false });
    assert.deepEqual(marks(off.body), [], `${from}, cacheBreakpoints off`);
    assert.equal(off.body.system, "Be terse.");
  }
  // Extended retention asked: the breakpoints live an hour; in memory: the default.
  for (const from of ["responses", "chat"] as const) {
    const long = translate(from, "messages", { ...CLIENTS[from], prompt_cache_retention: "24h" });
    assert.deepEqual(marks(long.body), [
      ".messages[1].content[0]:1h",
      ".system[0]:1h",
      ".tools[0]:1h",
    ]);
    const short = translate(from, "messages", {
      ...CLIENTS[from],
      prompt_cache_retention: "in_memory",
    });
    assert.deepEqual(marks(short.body), [".messages[1].content[0]", ".system[0]", ".tools[0]"]);
  }
});

Deno.test("the cache key goes to OpenAI and xAI, the retention to OpenAI only; to no other", () => {
  const body = { ...CLIENTS.chat, prompt_cache_retention: "24h" };
  const family = (type: ProviderType): Target => ({ model: "x", provider: type, family: type });
  const to = (protocol: ProtocolId, target: Target) =>
    translate("chat", protocol, body, target).body;
  const cacheFields = (sent: Json) =>
    Object.fromEntries(Object.entries(sent).filter(([k]) => k.startsWith("prompt_cache")));
  assert.deepEqual(cacheFields(to("responses", family("openai"))), {
    prompt_cache_key: "conv-1",
    prompt_cache_retention: "24h",
  });
  assert.deepEqual(cacheFields(to("responses", family("xai"))), { prompt_cache_key: "conv-1" });
  assert.deepEqual(cacheFields(to("chat", family("openai"))), {
    prompt_cache_key: "conv-1",
    prompt_cache_retention: "24h",
  });
  for (const other of ["openai-compatible", "anthropic", "xai"] as const) {
    assert.deepEqual(cacheFields(to("chat", family(other))), {}, other);
  }
  assert.ok(!JSON.stringify(to("generate", family("gemini"))).includes("cache"));
  // From Responses the same.
  const responses = translate("responses", "responses", {
    ...CLIENTS.responses,
    prompt_cache_retention: "in_memory",
  }).body;
  assert.equal(responses.prompt_cache_key, "conv-1");
  assert.equal(responses.prompt_cache_retention, "in_memory");
});
