/** generateContent ⇄ canonical converters, pure: requests, answers, and streams both ways. */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { decodeRequest } from "../../../../src/protocols/generate/decode_request.ts";
import {
  encodeRequest,
  SKIP_SIGNATURE,
} from "../../../../src/protocols/generate/encode_request.ts";
import { decodeResponse } from "../../../../src/protocols/generate/decode_response.ts";
import { encodeResponse } from "../../../../src/protocols/generate/encode_response.ts";
import { generateDecoder, generateEncoder } from "../../../../src/protocols/generate/stream.ts";
import { streamErrorElement, streamErrorEvent } from "../../../../src/protocols/generate/errors.ts";
import { GatewayError } from "../../../../src/http/errors.ts";
import type {
  CanonicalEvent,
  CanonicalRequest,
  CanonicalResponse,
  Json,
  Opaque,
} from "../../../../src/translate/ir.ts";
import { fromToken, toToken } from "../../../../src/translate/opaque.ts";
import { synthesizeId } from "../../../../src/translate/tool_ids.ts";
import { decodeEverySplit, encodeAll, INFO, PARALLEL } from "../../../helpers/codec.ts";
import { sseEvents } from "../../../helpers/http.ts";

const TRANSCRIPTS = new URL("../../../fixtures/transcripts/gemini/", import.meta.url);
const transcript = (name: string) => JSON.parse(Deno.readTextFileSync(new URL(name, TRANSCRIPTS)));
const gemini25 = { model: "gemini-2.5-flash", provider: "gemini", family: "gemini" as const };
const gemini3 = { ...gemini25, model: "gemini-3-pro-preview" };
const decoder = (emit: (e: CanonicalEvent) => void) => generateDecoder(emit, "gemini");
const text = new TextDecoder();

/** `fn` throws a 400 naming `param`. */
function rejects(fn: () => unknown, param: string): void {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof GatewayError, String(e));
    assert.equal(e.status, 400);
    assert.equal(e.options.param, param);
    return true;
  });
}

/** Keys whose values are client data (schemas, arguments), not request structure. */
const DATA = new Set(["parameters", "parametersJsonSchema", "args", "response", "responseSchema"]);

/** A body's field names in snake_case, as Google's curl samples write them. */
function snake(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snake);
  if (!value || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => [
      key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
      DATA.has(key) ? v : snake(v),
    ]),
  );
}

const HISTORY = {
  systemInstruction: { role: "user", parts: [{ text: "Be brief." }] },
  contents: [
    {
      role: "user",
      parts: [
        { text: "Weather and time?" },
        { inlineData: { mimeType: "image/png", data: "iVBO" } },
        { fileData: { mimeType: "application/pdf", fileUri: "https://example.com/a.pdf" } },
      ],
    },
    {
      role: "model",
      parts: [
        { text: "Checking", thought: true, thoughtSignature: "TSIG" },
        { functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "S1" },
        { functionCall: { name: "get_weather", args: { city: "Rome" } } },
        { functionCall: { name: "get_time", args: {} } },
      ],
    },
    {
      parts: [
        { functionResponse: { name: "get_time", response: { result: "noon" } } },
        { functionResponse: { name: "get_weather", response: { temp: 21 } } },
        { functionResponse: { name: "get_weather", response: { error: "down" } } },
        { text: "And tomorrow?" },
      ],
    },
  ],
  tools: [{
    functionDeclarations: [{
      name: "get_weather",
      description: "Weather.",
      parameters: {
        type: "OBJECT",
        properties: {
          city: { type: "STRING", nullable: true },
          days: { type: "ARRAY", items: { type: "INTEGER" } },
        },
        required: ["city"],
        propertyOrdering: ["city", "days"],
      },
    }, { name: "get_time" }],
  }, { googleSearch: {} }],
  toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] } },
  safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }],
  generationConfig: {
    maxOutputTokens: 64,
    temperature: 0.5,
    topP: 0.9,
    topK: 40,
    seed: 7,
    presencePenalty: 0.1,
    frequencyPenalty: 0.2,
    candidateCount: 1,
    stopSequences: ["END"],
    responseMimeType: "application/json",
    responseSchema: { type: "OBJECT", properties: { a: { type: "INTEGER" } } },
    thinkingConfig: { thinkingBudget: 2048, includeThoughts: true },
  },
};

Deno.test("a recorded request decodes; field names are read in both spellings", () => {
  const recorded = transcript("generate-function-call.json").request.body;
  const request = decodeRequest(recorded, {});
  assert.deepEqual(request.messages, [{
    role: "user",
    content: [{ type: "text", text: "What's the weather in Paris?" }],
  }]);
  assert.deepEqual(request.tools, [{
    name: "get_weather",
    description: "Get the current weather for a city.",
    parameters: recorded.tools[0].functionDeclarations[0].parameters_json_schema,
  }]);
  assert.deepEqual(request.toolChoice, { type: "auto" });
  assert.equal(request.stream, false);
  assert.equal(decodeRequest(recorded, { stream: true }).stream, true);
  const text = decodeRequest(transcript("generate-text.json").request.body, {});
  assert.deepEqual(text.system, [{ type: "text", text: "You are a chatbot." }]);

  const camel = decodeRequest(HISTORY, {});
  const snaked = decodeRequest(snake(HISTORY) as Json, {});
  assert.deepEqual(snaked.hostedTools, [{ type: "web_search", field: "tools[1].google_search" }]);
  assert.deepEqual({ ...snaked, hostedTools: camel.hostedTools }, camel);
  assert.deepEqual(camel.system, [{ type: "text", text: "Be brief." }]);
  assert.deepEqual(camel.messages[0].content.slice(1), [
    { type: "file", mediaType: "image/png", data: { base64: "iVBO" } },
    { type: "file", mediaType: "application/pdf", data: { url: "https://example.com/a.pdf" } },
  ]);
  assert.deepEqual(camel.tools[0].parameters, {
    type: "object",
    properties: {
      city: { type: ["string", "null"] },
      days: { type: "array", items: { type: "integer" } },
    },
    required: ["city"],
  }, "OpenAPI-style parameters are read as JSON Schema");
  assert.deepEqual(camel.tools[1].parameters, { type: "object", properties: {} });
  assert.deepEqual(camel.hostedTools, [{ type: "web_search", field: "tools[1].googleSearch" }]);
  assert.deepEqual(camel.toolChoice, { type: "tool", name: "get_weather" });
  const { system: _s, messages: _m, tools: _t, hostedTools: _h, toolChoice: _c, ...rest } = camel;
  assert.deepEqual(rest, {
    stream: false,
    cache: { implicit: true },
    fields: {
      messages: "contents",
      tools: "tools",
      choices: "generationConfig.candidateCount",
      stop: "generationConfig.stopSequences",
      // The names each member was read under, for adaptations of them.
      maxOutputTokens: "generationConfig.maxOutputTokens",
      temperature: "generationConfig.temperature",
      topP: "generationConfig.topP",
      topK: "generationConfig.topK",
      seed: "generationConfig.seed",
      presencePenalty: "generationConfig.presencePenalty",
      frequencyPenalty: "generationConfig.frequencyPenalty",
      responseFormat: "generationConfig.responseMimeType",
      reasoning: "generationConfig.thinkingConfig",
    },
    maxOutputTokens: 64,
    temperature: 0.5,
    topP: 0.9,
    topK: 40,
    seed: 7,
    presencePenalty: 0.1,
    frequencyPenalty: 0.2,
    choices: 1,
    stop: ["END"],
    responseFormat: {
      type: "json",
      schema: { type: "object", properties: { a: { type: "integer" } } },
    },
    reasoning: { budgetTokens: 2048, visible: true },
  });
});

Deno.test("call ids are synthesised stably; results without ids answer the earliest call of their name", () => {
  const request = decodeRequest(HISTORY, {});
  const model = request.messages[1];
  assert.equal(model.role, "assistant");
  const [thought, paris, rome, time] = model.content as any[];
  assert.deepEqual(thought, {
    type: "reasoning",
    text: "Checking",
    opaque: { provider: "", kind: "thought-signature", value: "TSIG" },
  });
  assert.deepEqual(paris.opaque, { provider: "", kind: "thought-signature", value: "S1" });
  assert.equal(paris.id, synthesizeId("1:1:get_weather"));
  assert.equal(rome.id, synthesizeId("1:2:get_weather"));
  assert.equal(time.id, synthesizeId("1:3:get_time"));
  assert.notEqual(paris.id, rome.id);
  assert.deepEqual(request.messages[2], {
    role: "tool",
    content: [
      {
        type: "tool-result",
        id: time.id,
        name: "get_time",
        content: [{ type: "text", text: "noon" }],
      },
      {
        type: "tool-result",
        id: paris.id,
        name: "get_weather",
        content: [{ type: "text", text: '{"temp":21}' }],
      },
      {
        type: "tool-result",
        id: rome.id,
        name: "get_weather",
        content: [{ type: "text", text: "down" }],
        isError: true,
      },
    ],
  });
  assert.deepEqual(request.messages[3], {
    role: "user",
    content: [{ type: "text", text: "And tomorrow?" }],
  });
  assert.deepEqual(decodeRequest(structuredClone(HISTORY), {}).messages, request.messages);
  // Given ids are kept, in any order; a multimodal result keeps its files.
  const given = decodeRequest({
    contents: [
      { role: "user", parts: [{ text: "q" }] },
      {
        role: "model",
        parts: [
          { functionCall: { id: "a", name: "f", args: {} } },
          { functionCall: { id: "b", name: "f", args: {} } },
        ],
      },
      {
        role: "user",
        parts: [
          { functionResponse: { id: "b", name: "f", response: { output: "B" } } },
          {
            functionResponse: {
              name: "f",
              response: { ok: 1 },
              parts: [{ inlineData: { mimeType: "image/png", data: "AA" } }],
            },
          },
        ],
      },
    ],
  }, {});
  assert.deepEqual(given.messages[2].content, [
    { type: "tool-result", id: "b", name: "f", content: [{ type: "text", text: "B" }] },
    {
      type: "tool-result",
      id: "a",
      name: "f",
      content: [
        { type: "text", text: '{"ok":1}' },
        { type: "file", mediaType: "image/png", data: { base64: "AA" } },
      ],
    },
  ]);
});

Deno.test("an SDK's streamed history (one model content per chunk) is one assistant turn", () => {
  const request = decodeRequest({
    contents: [
      { role: "user", parts: [{ text: "q" }] },
      { role: "model", parts: [{ text: "Let me ", thought: true }] },
      { role: "model", parts: [{ text: "see.", thought: true }] },
      { role: "model", parts: [{ text: "", thoughtSignature: "T" }] },
      { role: "model", parts: [{ text: "On it" }] },
      { role: "model", parts: [{ functionCall: { name: "f", args: { x: 1 } } }] },
      { role: "user", parts: [{ functionResponse: { name: "f", response: { result: "r" } } }] },
    ],
  }, {});
  assert.equal(request.messages.length, 3);
  const [reasoning, said, call] = request.messages[1].content as any[];
  assert.deepEqual(reasoning, {
    type: "reasoning",
    text: "Let me see.",
    opaque: { provider: "", kind: "thought-signature", value: "T" },
  });
  assert.deepEqual(said, { type: "text", text: "On it" });
  assert.equal(call.id, synthesizeId("5:0:f"));
  assert.equal((request.messages[2].content[0] as any).id, call.id);
});

Deno.test("what another protocol cannot take is refused by the client's field", () => {
  rejects(
    () => decodeRequest({ contents: [{ role: "function", parts: [] }] }, {}),
    "contents[0].role",
  );
  rejects(() => decodeRequest({ contents: [{ role: "tool", parts: [] }] }, {}), "contents[0].role");
  rejects(
    () =>
      decodeRequest({
        contents: [{ role: "model", parts: [{ executableCode: { code: "1" } }] }],
      }, {}),
    "contents[0].parts[0]",
  );
  rejects(
    () =>
      decodeRequest({
        contents: [{ role: "user", parts: [{ code_execution_result: { output: "1" } }] }],
      }, {}),
    "contents[0].parts[0]",
  );
  rejects(
    () =>
      decodeRequest({
        contents: [],
        generation_config: { response_modalities: ["TEXT", "IMAGE"] },
      }, {}),
    "generationConfig.responseModalities",
  );
  rejects(
    () => decodeRequest({ contents: [], generationConfig: { responseLogprobs: true } }, {}),
    "generationConfig.responseLogprobs",
  );
  rejects(
    () =>
      decodeRequest({ contents: [], generationConfig: { responseMimeType: "text/x.enum" } }, {}),
    "generationConfig.responseMimeType",
  );
  // Hosted tools other than search decode, and the encoder refuses them by their field.
  const hosted = decodeRequest({
    contents: [],
    tools: [{ code_execution: {} }, { urlContext: {} }],
  }, {});
  assert.deepEqual(hosted.hostedTools, [
    { type: "other", field: "tools[0].code_execution", name: "codeExecution" },
    { type: "other", field: "tools[1].urlContext", name: "urlContext" },
  ]);
  rejects(() => encodeRequest(hosted, gemini3), "tools[0].code_execution");
  rejects(
    () => encodeRequest({ ...hosted, hostedTools: [], choices: 2 }, gemini3),
    "generationConfig.candidateCount",
  );
});

Deno.test("tool choice and thinking settings map to canonical", () => {
  const choice = (config: Json) =>
    decodeRequest({ contents: [], toolConfig: config }, {}).toolChoice;
  assert.deepEqual(
    choice({ functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["a", "b"] } }),
    { type: "required" },
  );
  assert.deepEqual(choice({ function_calling_config: { mode: "ANY" } }), { type: "required" });
  assert.deepEqual(choice({ functionCallingConfig: { mode: "NONE" } }), { type: "none" });
  assert.deepEqual(choice({ functionCallingConfig: { mode: "VALIDATED" } }), { type: "auto" });
  rejects(
    () => choice({ functionCallingConfig: { mode: "SOME" } }),
    "toolConfig.functionCallingConfig.mode",
  );
  const thinking = (config: Json) =>
    decodeRequest({ contents: [], generationConfig: { thinkingConfig: config } }, {}).reasoning;
  assert.deepEqual(thinking({ thinkingBudget: 0, includeThoughts: true }), { off: true });
  assert.deepEqual(thinking({ thinkingBudget: -1 }), { effort: "medium" });
  assert.deepEqual(thinking({ thinking_level: "LOW", include_thoughts: true }), {
    effort: "low",
    visible: true,
  });
  assert.deepEqual(thinking({ includeThoughts: true }), { visible: true });
  assert.equal(thinking({}), undefined);
});

function fromClaude(): CanonicalRequest {
  return {
    system: [{ type: "text", text: "S" }],
    messages: [
      { role: "user", content: [{ type: "text", text: "hi" }] },
      {
        role: "assistant",
        content: [
          {
            type: "reasoning",
            text: "t",
            opaque: { provider: "anthropic", kind: "thinking-signature", value: "x" },
          },
          { type: "text", text: "Calling." },
          { type: "tool-call", id: "toolu_1", name: "f", input: { a: 1 } },
          { type: "tool-call", id: "toolu_2", name: "f", input: { a: 2 } },
        ],
      },
      {
        role: "tool",
        content: [
          { type: "tool-result", id: "toolu_1", content: [{ type: "text", text: '{"ok":true}' }] },
          {
            type: "tool-result",
            id: "toolu_2",
            content: [
              { type: "text", text: "boom" },
              { type: "file", mediaType: "image/png", data: { base64: "AA" } },
            ],
            isError: true,
          },
        ],
      },
      { role: "user", content: [{ type: "text", text: "go on" }] },
      { role: "system", content: [{ type: "text", text: "Later." }] },
      { role: "assistant", content: [{ type: "tool-call", id: "toolu_3", name: "g", input: {} }] },
      {
        role: "tool",
        content: [{ type: "tool-result", id: "toolu_3", content: [{ type: "text", text: "42" }] }],
      },
    ],
    tools: [{
      name: "f",
      description: "F.",
      parameters: {
        $schema: "https://json-schema.org/draft/2020-12/schema",
        type: "object",
        properties: { a: { $ref: "#/$defs/n" }, b: { const: "x" } },
        $defs: { n: { type: ["integer", "null"], exclusiveMinimum: 0, default: 1 } },
        additionalProperties: false,
      },
    }, { name: "g", parameters: { type: "object", properties: {}, additionalProperties: false } }],
    hostedTools: [{ type: "web_search", field: "tools[2]" }],
    toolChoice: { type: "tool", name: "f" },
    parallelToolCalls: false,
    stream: false,
    maxOutputTokens: 100,
    stop: ["a", "b"],
    responseFormat: { type: "json", schema: { type: "object", additionalProperties: false } },
    reasoning: { effort: "high", visible: true },
    fields: { messages: "messages", tools: "tools" },
  };
}

Deno.test("encoding: results as objects by name, files after them, schemas cleaned, no ids or model", () => {
  const body = encodeRequest(fromClaude(), gemini3) as Record<string, any>;
  assert.equal(body.model, undefined);
  assert.deepEqual(body.systemInstruction, { parts: [{ text: "S\n\nLater." }] });
  assert.deepEqual(body.contents.map((c: any) => c.role), [
    "user",
    "model",
    "user",
    "model",
    "user",
  ]);
  assert.deepEqual(body.contents[1].parts, [
    { text: "Calling." },
    { functionCall: { name: "f", args: { a: 1 } }, thoughtSignature: SKIP_SIGNATURE },
    { functionCall: { name: "f", args: { a: 2 } } },
  ], "foreign thinking is dropped; only the turn's first call gets the skip value");
  assert.deepEqual(body.contents[2].parts, [
    { functionResponse: { name: "f", response: { ok: true } } },
    { functionResponse: { name: "f", response: { error: "boom" } } },
    { inlineData: { mimeType: "image/png", data: "AA" } },
    { text: "go on" },
  ]);
  assert.deepEqual(body.contents[4].parts, [
    { functionResponse: { name: "g", response: { result: "42" } } },
  ]);
  assert.deepEqual(body.tools, [
    {
      functionDeclarations: [
        {
          name: "f",
          description: "F.",
          parameters: {
            type: "object",
            properties: {
              a: { type: "integer", nullable: true },
              b: { type: "string", enum: ["x"] },
            },
          },
        },
        { name: "g" },
      ],
    },
    { googleSearch: {} },
  ]);
  assert.deepEqual(body.toolConfig, {
    functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["f"] },
  });
  assert.deepEqual(body.generationConfig, {
    maxOutputTokens: 100,
    stopSequences: ["a", "b"],
    responseMimeType: "application/json",
    responseJsonSchema: { type: "object", additionalProperties: false },
    thinkingConfig: { thinkingLevel: "high", includeThoughts: true },
  });
  assert.ok(!JSON.stringify(body).includes("toolu_"), "call ids are never sent");
  // A result must name its call, or answer one in the history.
  const orphan = fromClaude();
  orphan.messages.splice(1, 1);
  rejects(() => encodeRequest(orphan, gemini3), "messages");
  rejects(
    () => encodeRequest({ ...fromClaude(), stop: ["1", "2", "3", "4", "5", "6"] }, gemini3),
    "stop",
  );
  // URL files: a wildcard type is made concrete from the name; data URLs go inline.
  const files = encodeRequest({
    ...fromClaude(),
    messages: [{
      role: "user",
      content: [
        { type: "file", mediaType: "image/*", data: { url: "https://x.test/cat.JPG?s=1" } },
        { type: "file", mediaType: "image/*", data: { url: "data:image/webp;base64,UklG" } },
      ],
    }],
  }, gemini3) as Record<string, any>;
  assert.deepEqual(files.contents[0].parts, [
    { fileData: { mimeType: "image/jpeg", fileUri: "https://x.test/cat.JPG?s=1" } },
    { inlineData: { mimeType: "image/webp", data: "UklG" } },
  ]);
});

Deno.test("the Gemini 3 sentinel goes on the first unsigned call of each model turn; 2.x gets none", () => {
  const three = encodeRequest(fromClaude(), gemini3) as Record<string, any>;
  assert.equal(three.contents[3].parts[0].thoughtSignature, SKIP_SIGNATURE);
  const older = encodeRequest(fromClaude(), gemini25) as Record<string, any>;
  const signatures = JSON.stringify(older.contents).includes("thoughtSignature");
  assert.equal(signatures, false, "Gemini 2.x needs no signatures");
  const oldest = encodeRequest(fromClaude(), { ...gemini25, model: "models/gemini-1.5-pro" });
  assert.ok(!JSON.stringify(oldest.contents).includes("thoughtSignature"));
  const flash3 = encodeRequest(fromClaude(), { ...gemini25, model: "gemini-3-flash" });
  assert.ok(JSON.stringify(flash3.contents).includes(SKIP_SIGNATURE));
  // Thinking: levels on Gemini 3, budgets on 2.x; off and exact budgets.
  const thinking = (reasoning: CanonicalRequest["reasoning"], target = gemini3) =>
    (encodeRequest({ ...fromClaude(), reasoning }, target) as any).generationConfig.thinkingConfig;
  assert.deepEqual(thinking({ effort: "high", visible: true }, gemini25), {
    thinkingBudget: 24576,
    includeThoughts: true,
  });
  assert.deepEqual(thinking({ effort: "minimal" }), { thinkingLevel: "low" });
  assert.deepEqual(thinking({ effort: "medium" }), { thinkingLevel: "high" });
  assert.deepEqual(thinking({ off: true }), { thinkingLevel: "low" });
  assert.deepEqual(thinking({ off: true, visible: true }, gemini25), { thinkingBudget: 0 });
  assert.deepEqual(thinking({ budgetTokens: 3000, effort: "low" }), { thinkingBudget: 3000 });
});

Deno.test("signatures are replayed only to the provider that issued them", () => {
  const own = (value: string): Opaque => ({ provider: "gemini", kind: "thought-signature", value });
  const request: CanonicalRequest = {
    ...fromClaude(),
    messages: [
      { role: "user", content: [{ type: "text", text: "q" }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "plan", opaque: own("R") },
          { type: "reasoning", text: "unsigned" },
          { type: "text", text: "", opaque: own("T") },
          { type: "tool-call", id: "c1", name: "f", input: {} },
          { type: "tool-call", id: "c2", name: "f", input: {}, opaque: own("C") },
        ],
      },
    ],
  };
  const home = encodeRequest(request, gemini3) as Record<string, any>;
  assert.deepEqual(home.contents[1].parts, [
    { text: "plan", thought: true, thoughtSignature: "R" },
    { text: "", thoughtSignature: "T" },
    { functionCall: { name: "f", args: {} }, thoughtSignature: SKIP_SIGNATURE },
    { functionCall: { name: "f", args: {} }, thoughtSignature: "C" },
  ]);
  const away = encodeRequest(request, { ...gemini3, provider: "vertex-eu" }) as Record<string, any>;
  assert.deepEqual(away.contents[1].parts, [
    { functionCall: { name: "f", args: {} }, thoughtSignature: SKIP_SIGNATURE },
    { functionCall: { name: "f", args: {} } },
  ]);
  // A client's native signature names no provider: it is never replayed.
  const native = decodeRequest(HISTORY, {});
  const sent = encodeRequest(native, gemini25) as Record<string, any>;
  assert.ok(!JSON.stringify(sent).includes("S1"));
});

Deno.test("answers: usage arithmetic, ids, finish overridden for tool calls", () => {
  const recorded = JSON.parse(transcript("generate-function-call.json").response.body_text);
  const answer = decodeResponse(recorded, "gemini");
  assert.deepEqual(answer.usage, {
    input: 49,
    cacheRead: 0,
    cacheWrite: 0,
    output: 63,
    reasoning: 48,
  });
  assert.deepEqual(answer.finish, { reason: "tool-calls", raw: "STOP" });
  assert.equal(answer.id, "78F7aafeKcDVz7IPh4DK-AM");
  assert.equal(answer.model, "gemini-2.5-flash");
  const call = answer.content[0] as any;
  assert.equal(call.id, synthesizeId("78F7aafeKcDVz7IPh4DK-AM:0:get_weather"));
  assert.deepEqual(call.input, { city: "Paris" });
  assert.equal(call.opaque.provider, "gemini");
  assert.equal(call.opaque.value, recorded.candidates[0].content.parts[0].thoughtSignature);
  const out = encodeResponse(answer, INFO) as Record<string, any>;
  assert.deepEqual(out.usageMetadata, {
    promptTokenCount: 49,
    candidatesTokenCount: 15,
    thoughtsTokenCount: 48,
    totalTokenCount: 112,
  });
  assert.equal(out.candidates[0].finishReason, "STOP");
  assert.equal(
    fromToken(out.candidates[0].content.parts[0].thoughtSignature)?.opaque.value,
    call.opaque.value,
  );
  const text = decodeResponse(
    JSON.parse(transcript("generate-text.json").response.body_text),
    "gemini",
  );
  assert.deepEqual(text.content, [{ type: "text", text: "Hello! How can I help you today?" }]);
  assert.deepEqual(text.finish, { reason: "stop", raw: "STOP" });

  const usage = decodeResponse({
    candidates: [{ content: { parts: [{ text: "x" }] }, finishReason: "STOP" }],
    usageMetadata: {
      promptTokenCount: 100,
      toolUsePromptTokenCount: 20,
      cachedContentTokenCount: 40,
      candidatesTokenCount: 10,
      thoughtsTokenCount: 5,
      totalTokenCount: 135,
    },
  }, "gemini").usage;
  assert.deepEqual(usage, { input: 120, cacheRead: 40, cacheWrite: 0, output: 15, reasoning: 5 });
  assert.deepEqual(encodeResponse({ ...answer, usage }, INFO).usageMetadata, {
    promptTokenCount: 120,
    candidatesTokenCount: 10,
    thoughtsTokenCount: 5,
    cachedContentTokenCount: 40,
    totalTokenCount: 135,
  });

  const finish = (finishReason: string, parts: Json[]) =>
    decodeResponse({ candidates: [{ content: { parts }, finishReason }] }, "gemini").finish.reason;
  const aCall = { functionCall: { name: "f", args: {} } };
  assert.equal(finish("STOP", [aCall]), "tool-calls");
  assert.equal(finish("MAX_TOKENS", [aCall]), "length");
  assert.equal(finish("SAFETY", [{ text: "" }]), "content-filter");
  assert.equal(finish("MALFORMED_FUNCTION_CALL", []), "error");
  const blocked = decodeResponse({ promptFeedback: { blockReason: "PROHIBITED_CONTENT" } }, "g");
  assert.deepEqual(blocked.content, []);
  assert.deepEqual(blocked.finish, { reason: "content-filter", raw: "PROHIBITED_CONTENT" });
  for (
    const [reason, raw] of [["length", "MAX_TOKENS"], ["content-filter", "SAFETY"], [
      "tool-calls",
      "STOP",
    ]] as const
  ) {
    const written = encodeResponse({ ...answer, finish: { reason } }, INFO) as any;
    assert.equal(written.candidates[0].finishReason, raw);
  }
});

Deno.test("thoughts and signed text decode into parts; a signature-only part ends its part", () => {
  const answer = decodeResponse({
    responseId: "r",
    candidates: [{
      content: {
        parts: [
          { text: "Think", thought: true },
          { text: "ing", thought: true },
          { text: "", thoughtSignature: "TS" },
          { text: "Hello", thoughtSignature: "HS" },
          { text: " world" },
          { functionCall: { id: "given", name: "f", args: { q: 1 } } },
        ],
      },
      finishReason: "STOP",
    }],
  }, "gemini");
  const sig = (value: string): Opaque => ({ provider: "gemini", kind: "thought-signature", value });
  assert.deepEqual(answer.content, [
    { type: "reasoning", text: "Thinking", opaque: sig("TS") },
    { type: "text", text: "Hello", opaque: sig("HS") },
    { type: "text", text: " world" },
    { type: "tool-call", id: "given", name: "f", input: { q: 1 } },
  ]);
  const parts = (encodeResponse(answer, INFO) as any).candidates[0].content.parts;
  assert.deepEqual(
    parts.map((p: any) => [p.text, p.thought, fromToken(p.thoughtSignature)?.opaque]),
    [
      ["Thinking", true, sig("TS")],
      ["Hello", undefined, sig("HS")],
      [" world", undefined, undefined],
      [undefined, undefined, undefined],
    ],
  );
  assert.deepEqual(parts[3], { functionCall: { id: "given", name: "f", args: { q: 1 } } });
});

const ANTHROPIC: Opaque = { provider: "anthropic", kind: "thinking-signature", value: "S" };

function claudeAnswer(content: CanonicalResponse["content"]): CanonicalResponse {
  return {
    id: "msg_1",
    model: "claude",
    content,
    finish: { reason: "tool-calls" },
    usage: { input: 1, cacheRead: 0, cacheWrite: 0, output: 1, reasoning: 0 },
  };
}

Deno.test("another provider's reasoning state rides on the call after it, and is read back", () => {
  const out = encodeResponse(
    claudeAnswer([
      { type: "reasoning", text: "why", opaque: ANTHROPIC },
      { type: "tool-call", id: "toolu_1", name: "f", input: { a: 1 } },
    ]),
    INFO,
  ) as any;
  const parts = out.candidates[0].content.parts;
  assert.deepEqual(parts[0], { text: "why", thought: true });
  assert.deepEqual(fromToken(parts[1].thoughtSignature), { opaque: ANTHROPIC, text: "why" });
  assert.deepEqual(parts[1].functionCall, { id: "toolu_1", name: "f", args: { a: 1 } });
  const back = decodeRequest({
    contents: [{ role: "user", parts: [{ text: "q" }] }, { role: "model", parts }],
  }, {});
  assert.deepEqual(back.messages[1].content, [
    { type: "reasoning", text: "why", opaque: ANTHROPIC },
    { type: "tool-call", id: "toolu_1", name: "f", input: { a: 1 } },
  ], "the visible copy gives way to the state; the call keeps its id");
  // With no call after it, the state rides on the thought part itself.
  const alone = (encodeResponse(
    claudeAnswer([
      { type: "reasoning", text: "hm", opaque: ANTHROPIC },
      { type: "text", text: "Done." },
    ]),
    INFO,
  ) as any).candidates[0].content.parts;
  assert.deepEqual(fromToken(alone[0].thoughtSignature)?.text, "hm");
  assert.deepEqual(
    decodeRequest({ contents: [{ role: "model", parts: alone }] }, {}).messages[0].content,
    [{ type: "reasoning", text: "hm", opaque: ANTHROPIC }, { type: "text", text: "Done." }],
  );
  // Encrypted reasoning with no text, before a call that is signed already: its own part.
  const encrypted: Opaque = {
    provider: "openai",
    kind: "encrypted-reasoning",
    value: "E",
    itemId: "rs_1",
  };
  const signed = (encodeResponse(
    claudeAnswer([
      { type: "reasoning", text: "", opaque: encrypted },
      {
        type: "tool-call",
        id: "c",
        name: "f",
        input: {},
        opaque: { provider: "gemini", kind: "thought-signature", value: "G" },
      },
    ]),
    INFO,
  ) as any).candidates[0].content.parts;
  assert.equal(signed.length, 2);
  assert.deepEqual(fromToken(signed[0].thoughtSignature)?.opaque, encrypted);
  assert.equal(fromToken(signed[1].thoughtSignature)?.opaque.value, "G");
  const read = decodeRequest({ contents: [{ role: "model", parts: signed }] }, {}).messages[0]
    .content as any[];
  assert.deepEqual(read[0], { type: "reasoning", text: "", opaque: encrypted });
  assert.deepEqual(read[1].opaque, { provider: "gemini", kind: "thought-signature", value: "G" });
  // Replayed: Anthropic gets its own thinking back; a Gemini upstream drops it.
  const canonical = { ...fromClaude(), messages: back.messages, tools: [], toolChoice: undefined };
  const toGemini = encodeRequest(canonical, gemini25) as any;
  assert.deepEqual(toGemini.contents[1].parts, [{ functionCall: { name: "f", args: { a: 1 } } }]);
});

const SIG = (value: string): Opaque => ({ provider: "gemini", kind: "thought-signature", value });

/** A Gemini stream with thoughts, signatures, text, two parallel calls, usage and a finish. */
const CHUNKS = [
  {
    candidates: [{ content: { role: "model", parts: [{ text: "Hmm", thought: true }] }, index: 0 }],
    usageMetadata: { promptTokenCount: 10, totalTokenCount: 10 },
    modelVersion: "gemini-3-pro-preview",
    responseId: "resp-1",
  },
  {
    candidates: [{
      content: {
        role: "model",
        parts: [{ text: " ok", thought: true }, { text: "", thoughtSignature: "TS" }],
      },
      index: 0,
    }],
    responseId: "resp-1",
  },
  {
    candidates: [{ content: { role: "model", parts: [{ text: "Sure, " }] }, index: 0 }],
    responseId: "resp-1",
  },
  {
    candidates: [{ content: { role: "model", parts: [{ text: "checking." }] }, index: 0 }],
    responseId: "resp-1",
  },
  {
    candidates: [{
      content: {
        role: "model",
        parts: [
          { functionCall: { name: "f", args: { city: "Paris" } }, thoughtSignature: "FS" },
          { functionCall: { name: "g", args: {} } },
        ],
      },
      finishReason: "STOP",
      index: 0,
    }],
    usageMetadata: {
      promptTokenCount: 10,
      candidatesTokenCount: 7,
      thoughtsTokenCount: 3,
      totalTokenCount: 20,
    },
    responseId: "resp-1",
  },
];

const sseOf = (chunks: unknown[]) =>
  chunks.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`).join("");
/** Google's array framing: `[{…}\n,\r\n{…}\n]`. */
const arrayOf = (chunks: unknown[]) =>
  `[${chunks.map((c) => JSON.stringify(c, null, 1)).join("\n,\r\n")}\n]`;

Deno.test("the recorded stream decodes identically at every byte split, SSE and array", () => {
  const recorded = transcript("stream-text.json").response.body_text as string;
  const events = decodeEverySplit(decoder, recorded);
  const usage1 = { input: 15, cacheRead: 0, cacheWrite: 0, output: 0, reasoning: 0 };
  const usage2 = { input: 13, cacheRead: 0, cacheWrite: 0, output: 8, reasoning: 0 };
  // The start carries the first fragment's usage (Gemini counts the prompt from the first).
  assert.deepEqual(events, [
    {
      type: "start",
      id: "w1peaMz6INOvnvgPgYfPiQY",
      model: "gemini-2.0-flash-exp",
      usage: usage1,
    },
    { type: "text-start", id: "t0" },
    { type: "text-delta", id: "t0", delta: "The" },
    { type: "usage", usage: usage1 },
    { type: "text-delta", id: "t0", delta: " capital of France" },
    { type: "usage", usage: usage2 },
    { type: "text-delta", id: "t0", delta: " is Paris.\n" },
    { type: "text-end", id: "t0" },
    { type: "finish", reason: "stop", raw: "STOP", usage: usage2 },
  ]);
  const elements = recorded.split("\r\n\r\n").filter(Boolean).map((b) => b.replace(/^data: /, ""));
  assert.deepEqual(
    decodeEverySplit(decoder, `[${elements.join("\n,\r\n")}\n]`, "json-array"),
    events,
  );
});

Deno.test("thoughts, signatures and parallel calls decode identically at every split, both framings", () => {
  const events = decodeEverySplit(decoder, sseOf(CHUNKS));
  const f = synthesizeId("resp-1:5:f");
  const g = synthesizeId("resp-1:6:g");
  assert.deepEqual(events.filter((e) => e.type !== "usage"), [
    {
      type: "start",
      id: "resp-1",
      model: "gemini-3-pro-preview",
      usage: { input: 10, cacheRead: 0, cacheWrite: 0, output: 0, reasoning: 0 },
    },
    { type: "reasoning-start", id: "r0" },
    { type: "reasoning-delta", id: "r0", delta: "Hmm" },
    { type: "reasoning-delta", id: "r0", delta: " ok" },
    { type: "reasoning-end", id: "r0", opaque: SIG("TS") },
    { type: "text-start", id: "t1" },
    { type: "text-delta", id: "t1", delta: "Sure, " },
    { type: "text-delta", id: "t1", delta: "checking." },
    { type: "text-end", id: "t1" },
    { type: "tool-input-start", id: f, name: "f", opaque: SIG("FS") },
    { type: "tool-input-delta", id: f, delta: '{"city":"Paris"}' },
    { type: "tool-input-end", id: f },
    { type: "tool-input-start", id: g, name: "g" },
    { type: "tool-input-delta", id: g, delta: "{}" },
    { type: "tool-input-end", id: g },
    {
      type: "finish",
      reason: "tool-calls",
      raw: "STOP",
      usage: { input: 10, cacheRead: 0, cacheWrite: 0, output: 10, reasoning: 3 },
    },
  ]);
  assert.deepEqual(decodeEverySplit(decoder, arrayOf(CHUNKS), "json-array"), events);
});

Deno.test("a stream's error fragment, a blocked prompt and an empty stream", () => {
  const failed = decodeEverySplit(
    decoder,
    sseOf([
      CHUNKS[0],
      { error: { code: 429, message: "Slow down", status: "RESOURCE_EXHAUSTED" } },
      CHUNKS[2],
    ]),
  );
  assert.deepEqual(failed.slice(-2), [
    { type: "reasoning-delta", id: "r0", delta: "Hmm" },
    { type: "error", message: "Slow down", code: "RESOURCE_EXHAUSTED", status: 429 },
  ]);
  const blocked = decodeEverySplit(
    decoder,
    sseOf([{ promptFeedback: { blockReason: "SAFETY" }, responseId: "b" }]),
  );
  assert.deepEqual(blocked, [
    { type: "start", id: "b" },
    { type: "finish", reason: "content-filter", raw: "SAFETY" },
  ]);
  const empty: CanonicalEvent[] = [];
  const d = generateDecoder((e) => empty.push(e), "gemini");
  d.end();
  d.end();
  assert.deepEqual(empty.map((e) => e.type), ["error"]);
});

/** A short canonical stream. */
const SHORT: CanonicalEvent[] = [
  { type: "start", id: "up", model: "m" },
  { type: "text-start", id: "t" },
  { type: "text-delta", id: "t", delta: "Hi" },
  { type: "text-end", id: "t" },
  {
    type: "finish",
    reason: "stop",
    usage: { input: 3, cacheRead: 0, cacheWrite: 0, output: 2, reasoning: 0 },
  },
];

Deno.test("the encoder's exact grammar: SSE data lines with CRLF, or one JSON array", () => {
  const elements = [
    {
      candidates: [{ content: { role: "model", parts: [{ text: "Hi" }] }, index: 0 }],
      modelVersion: "client-model",
      responseId: "ans_1",
    },
    {
      candidates: [{
        content: { role: "model", parts: [{ text: "" }] },
        finishReason: "STOP",
        index: 0,
      }],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 },
      modelVersion: "client-model",
      responseId: "ans_1",
    },
  ];
  const sse = encodeAll((w) => generateEncoder(w, INFO), SHORT);
  assert.equal(sse, elements.map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`).join(""));
  const array = encodeAll((w) => generateEncoder(w, { ...INFO, jsonArray: true }), SHORT);
  assert.equal(array, `[${elements.map((e) => JSON.stringify(e)).join(",\r\n")}]`);
  // Parallel calls are written whole when their arguments end; usage comes on the last.
  const written = sseEvents(encodeAll((w) => generateEncoder(w, INFO), PARALLEL));
  assert.ok(written.every((e) => e.event === ""));
  const parts = written.flatMap((e) => (e.data as any).candidates[0].content.parts);
  assert.deepEqual(parts, [
    { text: "Checking." },
    { functionCall: { id: "call_b", name: "get_time", args: { zone: "UTC" } } },
    { functionCall: { id: "call_a", name: "get_weather", args: { city: "Paris" } } },
    { text: "" },
  ]);
  assert.deepEqual((written.at(-1)!.data as any).usageMetadata, {
    promptTokenCount: 100,
    candidatesTokenCount: 20,
    thoughtsTokenCount: 10,
    cachedContentTokenCount: 40,
    totalTokenCount: 130,
  });
  const parsed = JSON.parse(
    encodeAll((w) => generateEncoder(w, { ...INFO, jsonArray: true }), PARALLEL),
  );
  assert.deepEqual(parsed, written.map((e) => e.data));
  // Gemini's own stream, re-encoded for a Gemini client and decoded again, keeps its content.
  const upstream = decodeEverySplit(decoder, sseOf(CHUNKS));
  const again = decodeEverySplit(
    decoder,
    encodeAll((w) => generateEncoder(w, { ...INFO, jsonArray: true }), upstream),
    "json-array",
  );
  const content = (events: CanonicalEvent[]) =>
    events.flatMap((e) =>
      e.type === "text-delta" || e.type === "reasoning-delta"
        ? [`${e.type}:${e.delta}`]
        : e.type === "tool-input-delta"
        ? [`args:${e.delta}`]
        : e.type === "finish"
        ? [`finish:${e.reason}:${e.usage?.output}`]
        : []
    );
  assert.deepEqual(content(again), content(upstream));
  const ends = again.filter((e) =>
    e.type === "reasoning-end" || e.type === "tool-input-start"
  ) as any[];
  assert.deepEqual(ends.map((e) => fromToken(e.opaque?.value)?.opaque.value), [
    "TS",
    "FS",
    undefined,
  ]);
});

Deno.test("a streamed foreign reasoning token rides on the next call, or on a thought part of its own", () => {
  const events: CanonicalEvent[] = [
    { type: "start" },
    { type: "reasoning-start", id: "r" },
    { type: "reasoning-delta", id: "r", delta: "Let me " },
    { type: "reasoning-delta", id: "r", delta: "look." },
    { type: "reasoning-end", id: "r", opaque: ANTHROPIC },
    { type: "tool-input-start", id: "toolu_1", name: "f" },
    { type: "tool-input-delta", id: "toolu_1", delta: '{"a":' },
    { type: "tool-input-delta", id: "toolu_1", delta: "1}" },
    { type: "tool-input-end", id: "toolu_1" },
    { type: "reasoning-start", id: "r2" },
    { type: "reasoning-delta", id: "r2", delta: "More." },
    { type: "reasoning-end", id: "r2", opaque: ANTHROPIC },
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "Done." },
    { type: "text-end", id: "t" },
    { type: "finish", reason: "tool-calls" },
  ];
  const written = sseEvents(encodeAll((w) => generateEncoder(w, INFO), events));
  const contents = written.map((e) => (e.data as any).candidates[0].content);
  const parts = contents.flatMap((c) => c.parts);
  assert.deepEqual(fromToken(parts[2].thoughtSignature), {
    opaque: ANTHROPIC,
    text: "Let me look.",
  });
  assert.ok(parts[2].functionCall);
  assert.deepEqual(parts[4], {
    text: "",
    thought: true,
    thoughtSignature: toToken(ANTHROPIC, "More."),
  });
  // Recorded as an SDK records a stream (one content per chunk) and replayed, it reads back.
  const back = decodeRequest(
    { contents: [{ role: "user", parts: [{ text: "q" }] }, ...contents] },
    {},
  );
  assert.deepEqual(back.messages[1].content, [
    { type: "reasoning", text: "Let me look.", opaque: ANTHROPIC },
    { type: "tool-call", id: "toolu_1", name: "f", input: { a: 1 } },
    { type: "reasoning", text: "More.", opaque: ANTHROPIC },
    { type: "text", text: "Done." },
  ]);
});

Deno.test("fail() and error events end the stream in Gemini's error form, in both framings", () => {
  const cut = "The upstream provider ended the stream unexpectedly.";
  assert.equal(
    encodeAll((w) => generateEncoder(w, INFO), [], cut),
    text.decode(streamErrorEvent()),
  );
  assert.equal(
    encodeAll((w) => generateEncoder(w, { ...INFO, jsonArray: true }), [], cut),
    text.decode(streamErrorElement(false)),
  );
  const started = encodeAll(
    (w) => generateEncoder(w, { ...INFO, jsonArray: true }),
    SHORT.slice(0, 3),
  );
  const failed = encodeAll(
    (w) => generateEncoder(w, { ...INFO, jsonArray: true }),
    SHORT.slice(0, 3),
    cut,
  );
  assert.equal(failed, started + text.decode(streamErrorElement(true)));
  assert.equal(JSON.parse(failed).at(-1).error.message, cut);
  const limited = sseEvents(
    encodeAll((w) => generateEncoder(w, INFO), [
      ...SHORT.slice(0, 3),
      { type: "error", message: "Slow down", status: 429 },
      ...SHORT.slice(3),
    ], "again"),
  );
  assert.deepEqual(limited.map((e) => e.data), [
    (limited[0] as any).data,
    { error: { code: 429, message: "Slow down", status: "RESOURCE_EXHAUSTED" } },
  ]);
  // After the finish, nothing more is written.
  const finished = encodeAll(
    (w) => generateEncoder(w, { ...INFO, jsonArray: true }),
    SHORT,
    "late",
  );
  assert.equal(JSON.parse(finished).length, 2);
});
