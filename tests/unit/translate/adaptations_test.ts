/**
 * What a translation adapts, pure: every codec notes the adaptations it makes — by kind and by the
 * client's own field — and a request with nothing to adapt notes none on any pair of protocols;
 * the strict refusal names the field; docs/endpoints.md lists every kind.
 */
import assert from "node:assert/strict";
import { PROTOCOLS } from "../../../src/protocols/index.ts";
import { GatewayError } from "../../../src/http/errors.ts";
import {
  type Adaptation,
  ADAPTATION_KINDS,
  collect,
  kindsOf,
  refusal,
} from "../../../src/translate/adaptations.ts";
import type { Target } from "../../../src/translate/codec.ts";
import type { Json, ProtocolId } from "../../../src/translate/ir.ts";
import { toToken } from "../../../src/translate/opaque.ts";

const TARGETS: Record<ProtocolId, Target> = {
  responses: { model: "gpt-5", provider: "openai", family: "openai" },
  messages: { model: "claude-sonnet-4-5", provider: "anthropic", family: "anthropic" },
  generate: { model: "gemini-2.5-flash", provider: "gemini", family: "gemini" },
  chat: { model: "qwen3", provider: "local", family: "openai-compatible" },
};

const IDS = Object.keys(PROTOCOLS) as ProtocolId[];

/** The adaptations of translating `body` from `client` to `upstream`: decoding's, then encoding's. */
function translate(client: ProtocolId, upstream: ProtocolId, body: Json) {
  const decoded = collect((adapt) => PROTOCOLS[client].decodeRequest(body, {}, adapt));
  const encoded = collect((adapt) =>
    PROTOCOLS[upstream].encodeRequest(decoded.value, TARGETS[upstream], adapt)
  );
  return { body: encoded.value, adaptations: [...decoded.adaptations, ...encoded.adaptations] };
}

/** A plain request of each protocol: text, a system prompt, a tool, a temperature every one takes. */
const PLAIN: Record<ProtocolId, Json> = {
  responses: {
    model: "m",
    instructions: "Be brief.",
    input: "Weather in Paris?",
    temperature: 0.5,
    max_output_tokens: 256,
    tools: [{
      type: "function",
      name: "get_weather",
      parameters: { type: "object", properties: { city: { type: "string" } } },
    }],
  },
  messages: {
    model: "m",
    max_tokens: 256,
    system: "Be brief.",
    temperature: 0.5,
    messages: [{ role: "user", content: "Weather in Paris?" }],
    tools: [{
      name: "get_weather",
      input_schema: { type: "object", properties: { city: { type: "string" } } },
    }],
  },
  generate: {
    systemInstruction: { parts: [{ text: "Be brief." }] },
    contents: [{ role: "user", parts: [{ text: "Weather in Paris?" }] }],
    generationConfig: { temperature: 0.5, maxOutputTokens: 256 },
    tools: [{
      functionDeclarations: [{
        name: "get_weather",
        parameters: { type: "object", properties: { city: { type: "string" } } },
      }],
    }],
  },
  chat: {
    model: "m",
    max_tokens: 256,
    temperature: 0.5,
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Weather in Paris?" },
    ],
    tools: [{
      type: "function",
      function: {
        name: "get_weather",
        parameters: { type: "object", properties: { city: { type: "string" } } },
      },
    }],
  },
};

Deno.test("a request with nothing to adapt notes nothing, on every pair of protocols", () => {
  for (const client of IDS) {
    for (const upstream of IDS) {
      const { adaptations } = translate(client, upstream, PLAIN[client]);
      assert.deepEqual(adaptations, [], `${client} → ${upstream}`);
    }
  }
});

Deno.test("temperature above Messages' range is clamped and noted by the client's name", () => {
  const responses = translate("responses", "messages", { ...PLAIN.responses, temperature: 2 });
  assert.equal(responses.body.temperature, 1);
  assert.deepEqual(responses.adaptations, [{ kind: "temperature_clamped", field: "temperature" }]);
  const gemini = translate("generate", "messages", {
    ...PLAIN.generate,
    generationConfig: { temperature: 1.5 },
  });
  assert.deepEqual(gemini.adaptations, [{
    kind: "temperature_clamped",
    field: "generationConfig.temperature",
  }]);
  // Within the range, and on targets whose range is 0–2: nothing.
  for (const upstream of ["responses", "generate", "chat"] as const) {
    const wide = translate("chat", upstream, { ...PLAIN.chat, temperature: 2 });
    assert.deepEqual(wide.adaptations, [], upstream);
  }
});

Deno.test("seed and penalties are left out where the target has no field, and noted", () => {
  const body = { ...PLAIN.chat, seed: 7, presence_penalty: 0.5, frequency_penalty: 0.1 };
  const messages = translate("chat", "messages", body);
  assert.equal(messages.body.seed, undefined);
  assert.deepEqual(messages.adaptations, [
    { kind: "seed_dropped", field: "seed" },
    { kind: "penalties_dropped", field: "presence_penalty" },
    { kind: "penalties_dropped", field: "frequency_penalty" },
  ]);
  assert.deepEqual(kindsOf(translate("chat", "responses", body).adaptations), [
    "seed_dropped",
    "penalties_dropped",
  ]);
  // Gemini has both fields.
  assert.deepEqual(translate("chat", "generate", body).adaptations, []);
  // top_k: Responses and chat have none.
  const topK = translate("messages", "responses", { ...PLAIN.messages, top_k: 40 });
  assert.deepEqual(topK.adaptations, [{ kind: "top_k_dropped", field: "top_k" }]);
  const gemini = translate("generate", "chat", {
    ...PLAIN.generate,
    generationConfig: { topK: 40 },
  });
  assert.deepEqual(gemini.adaptations, [{ kind: "top_k_dropped", field: "generationConfig.topK" }]);
});

Deno.test("Messages with thinking on: sampling knobs not sent; thinking off where it cannot run", () => {
  const thinking = translate("responses", "messages", {
    ...PLAIN.responses,
    max_output_tokens: 20_000,
    top_p: 0.9,
    reasoning: { effort: "high" },
  });
  assert.deepEqual((thinking.body.thinking as Json).type, "enabled");
  assert.deepEqual(thinking.adaptations, [
    { kind: "reasoning_approximated", field: "reasoning" },
    { kind: "temperature_dropped", field: "temperature" },
    { kind: "top_p_dropped", field: "top_p" },
  ]);
  // No room for the smallest budget under the output cap: thinking off.
  const small = translate("chat", "messages", {
    ...PLAIN.chat,
    reasoning_effort: "low",
    max_tokens: 500,
  });
  assert.equal(small.body.thinking, undefined);
  assert.deepEqual(small.adaptations, [{ kind: "thinking_off", field: "reasoning_effort" }]);
  // A forced tool: thinking off.
  const forced = translate("chat", "messages", {
    ...PLAIN.chat,
    max_tokens: 20_000,
    reasoning_effort: "low",
    tool_choice: "required",
  });
  assert.deepEqual(kindsOf(forced.adaptations), ["thinking_off"]);
});

Deno.test("the history: system hoisted, foreign reasoning and hosted records not sent, errors as text", () => {
  const chat = {
    ...PLAIN.chat,
    messages: [
      ...PLAIN.chat.messages as Json[],
      {
        role: "assistant",
        reasoning_content: "thinking it over",
        tool_calls: [{
          id: "call_1",
          type: "function",
          function: { name: "get_weather", arguments: '{"city":"Paris"}' },
        }],
      },
      { role: "tool", tool_call_id: "call_1", content: "sunny" },
      { role: "system", content: "Answer in French." },
    ],
  };
  const byTarget = Object.fromEntries(
    IDS.map((upstream) => [upstream, kindsOf(translate("chat", upstream, chat).adaptations)]),
  );
  assert.deepEqual(byTarget, {
    responses: ["reasoning_not_replayed"],
    messages: ["system_hoisted", "reasoning_not_replayed"],
    generate: ["system_hoisted", "reasoning_not_replayed"],
    chat: ["reasoning_not_replayed"],
  });
  const messages = {
    ...PLAIN.messages,
    messages: [
      { role: "user", content: "Weather in Paris?" },
      {
        role: "assistant",
        content: [
          // The provider's own signature: replayed only to it, here the same provider.
          {
            type: "thinking",
            thinking: "t",
            signature: toToken({ provider: "anthropic", kind: "thinking-signature", value: "s" }),
          },
          { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } },
        ],
      },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "no", is_error: true }],
      },
    ],
  };
  const adapted = (upstream: ProtocolId) =>
    kindsOf(translate("messages", upstream, messages).adaptations);
  assert.deepEqual(adapted("messages"), []);
  assert.deepEqual(adapted("responses"), ["reasoning_not_replayed", "error_flag_as_text"]);
  assert.deepEqual(adapted("chat"), ["reasoning_not_replayed", "error_flag_as_text"]);
  assert.deepEqual(adapted("generate"), ["reasoning_not_replayed"]);
});

Deno.test("Gemini: schemas cleaned, strict, parallel calls, end-user ids and search limits noted", () => {
  const body = {
    ...PLAIN.responses,
    user: "user-1",
    parallel_tool_calls: false,
    tools: [{
      type: "function",
      name: "get_weather",
      strict: true,
      parameters: {
        type: "object",
        properties: { city: { type: "string" } },
        required: ["city"],
        additionalProperties: false,
      },
    }],
  };
  const { adaptations } = translate("responses", "generate", body);
  assert.deepEqual(adaptations, [
    { kind: "strict_dropped", field: "tools" },
    { kind: "schema_cleaned", field: "tools" },
    { kind: "parallel_calls_dropped", field: "parallel_tool_calls" },
    { kind: "user_dropped", field: "user" },
  ]);
  // A schema already in Gemini's subset is sent as it is: nothing to note.
  assert.deepEqual(translate("chat", "generate", PLAIN.chat).adaptations, []);
  const search = translate("messages", "generate", {
    ...PLAIN.messages,
    tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 3 }],
  });
  assert.deepEqual(search.adaptations, [{
    kind: "search_options_dropped",
    field: "tools[0].type",
  }]);
});

Deno.test("decoding notes what a client's protocol alone can say", () => {
  const chat = translate("chat", "messages", {
    ...PLAIN.chat,
    verbosity: "low",
    service_tier: "priority",
    web_search_options: { search_context_size: "high" },
  });
  assert.deepEqual(chat.adaptations, [
    { kind: "hint_dropped", field: "verbosity" },
    { kind: "hint_dropped", field: "service_tier" },
    { kind: "search_options_dropped", field: "web_search_options" },
  ]);
  // The default tier is no adaptation.
  const tier = translate("chat", "messages", { ...PLAIN.chat, service_tier: "default" });
  assert.deepEqual(tier.adaptations, []);
  const gemini = translate("generate", "chat", {
    ...PLAIN.generate,
    safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }],
    toolConfig: {
      functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather", "other"] },
    },
  });
  assert.deepEqual(gemini.adaptations, [
    {
      kind: "tool_choice_approximated",
      field: "toolConfig.functionCallingConfig.allowedFunctionNames",
    },
    { kind: "hint_dropped", field: "safetySettings" },
  ]);
  const messages = translate("messages", "responses", {
    ...PLAIN.messages,
    messages: [{
      role: "user",
      content: [{
        type: "search_result",
        source: "https://example.com",
        title: "Weather",
        content: [{ type: "text", text: "Sunny." }],
      }, { type: "text", text: "Weather in Paris?" }],
    }],
  });
  assert.deepEqual(messages.adaptations, [{
    kind: "content_as_text",
    field: "messages[0].content",
  }]);
});

Deno.test("Responses: an output cap under 16 raised, a budget sent as an effort", () => {
  const { body, adaptations } = translate("messages", "responses", {
    ...PLAIN.messages,
    max_tokens: 8,
    thinking: { type: "enabled", budget_tokens: 3000 },
  });
  assert.equal(body.max_output_tokens, 16);
  assert.deepEqual(adaptations, [
    { kind: "reasoning_approximated", field: "thinking" },
    { kind: "max_output_raised", field: "max_tokens" },
  ]);
});

Deno.test("kinds are distinct and in the table's order; strict mode's refusal names the field", () => {
  const made: Adaptation[] = [
    { kind: "system_hoisted", field: "messages" },
    { kind: "temperature_clamped", field: "temperature" },
    { kind: "system_hoisted", field: "messages" },
  ];
  assert.deepEqual(kindsOf(made), ["temperature_clamped", "system_hoisted"]);
  const error = refusal(made[1], "messages");
  assert.ok(error instanceof GatewayError);
  assert.equal(error.status, 400);
  assert.equal(error.options.param, "temperature");
  assert.equal(error.options.code, "unsupported_parameter");
  assert.match(error.message, /strict mode refuses the adaptation `temperature_clamped`/);
  assert.match(error.message, /the Messages protocol/);
});

Deno.test("docs/endpoints.md describes every kind, and no other", () => {
  const docs = Deno.readTextFileSync(new URL("../../../docs/endpoints.md", import.meta.url));
  const table = docs.slice(docs.indexOf("| kind "), docs.indexOf("\n\n", docs.indexOf("| kind ")));
  const documented = [...table.matchAll(/^\| `([a-z_]+)`/gm)].map((m) => m[1]);
  assert.deepEqual(documented, ADAPTATION_KINDS);
});
