/** The generateContent converters (pure): requests, answers, and streams both ways. */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import {
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
  SKIP_SIGNATURE,
} from "../../src/protocols/generate/codec.ts";
import { generateDecoder, generateEncoder } from "../../src/protocols/generate/stream.ts";
import type { GatewayError } from "../../src/http/errors.ts";
import type { CanonicalRequest } from "../../src/translate/ir.ts";
import { fromToken, toToken } from "../../src/translate/opaque.ts";
import { decodeEverySplit, encodeAll, INFO, PARALLEL, parseSse } from "../helpers/codec.ts";

const TRANSCRIPTS = new URL("../../../shared/transcripts/gemini/", import.meta.url);
const transcript = (name: string) => JSON.parse(Deno.readTextFileSync(new URL(name, TRANSCRIPTS)));
const gemini25 = { model: "gemini-2.5-flash", provider: "gemini", family: "gemini" as const };
const gemini3 = { ...gemini25, model: "gemini-3-pro-preview" };

const HISTORY = {
  system_instruction: { parts: [{ text: "Be brief." }] },
  contents: [
    { role: "user", parts: [{ text: "Weather and time?" }] },
    {
      role: "model",
      parts: [
        {
          functionCall: { name: "get_weather", args: { city: "Paris" } },
          thoughtSignature: "SIG1",
        },
        { function_call: { name: "get_time", args: {} } },
      ],
    },
    {
      parts: [
        { functionResponse: { name: "get_time", response: { result: "noon" } } },
        { functionResponse: { name: "get_weather", response: { temp: 21 } } },
      ],
    },
  ],
  tools: [{
    functionDeclarations: [{
      name: "get_weather",
      parameters: { type: "OBJECT", properties: { city: { type: "STRING" } } },
    }, { name: "get_time" }],
  }, { googleSearch: {} }],
  generationConfig: {
    maxOutputTokens: 64,
    stop_sequences: ["END"],
    thinkingConfig: { thinkingBudget: 2048, includeThoughts: true },
  },
};

Deno.test("a request decodes in either spelling; ids are synthesised stably and results matched by name", () => {
  const request = decodeRequest(HISTORY, { stream: true });
  assert.deepEqual(request.system, [{ type: "text", text: "Be brief." }]);
  assert.equal(request.stream, true);
  const model = request.messages[1];
  assert.ok(model.role === "assistant");
  const [weather, time] = model.content as any[];
  assert.equal(weather.opaque.value, "SIG1");
  assert.equal(weather.opaque.provider, "", "a native signature names no provider");
  const results = request.messages[2];
  assert.ok(results.role === "tool");
  assert.deepEqual(results.content.map((r) => [r.id, r.name]), [[time.id, "get_time"], [
    weather.id,
    "get_weather",
  ]]);
  assert.deepEqual(results.content[0].content, [{ type: "text", text: "noon" }]);
  assert.deepEqual(results.content[1].content, [{ type: "text", text: '{"temp":21}' }]);
  assert.deepEqual(
    decodeRequest(HISTORY, {}).messages,
    request.messages,
    "the same ids every time",
  );
  assert.equal(request.tools[0].parameters.type, "object");
  assert.deepEqual(request.hostedTools, [{ type: "web_search", field: "tools[1].googleSearch" }]);
  assert.deepEqual(request.stop, ["END"]);
  assert.deepEqual(request.reasoning, { budgetTokens: 2048, visible: true });
  assert.throws(
    () => decodeRequest({ contents: [{ role: "function", parts: [] }] }, {}),
    (e: GatewayError) => e.status === 400 && e.options.param === "contents[0].role",
  );
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
            content: [{ type: "text", text: "boom" }],
            isError: true,
          },
        ],
      },
      { role: "system", content: [{ type: "text", text: "Later." }] },
    ],
    tools: [{
      name: "f",
      parameters: {
        type: "object",
        properties: { a: { $ref: "#/$defs/n" } },
        $defs: { n: { type: "integer", exclusiveMinimum: 0 } },
        additionalProperties: false,
      },
    }],
    hostedTools: [],
    toolChoice: { type: "tool", name: "f" },
    stream: false,
    reasoning: { effort: "high", visible: true },
    fields: { messages: "messages", tools: "tools" },
  };
}

Deno.test("encoding for Gemini: results as objects, schemas cleaned, the Gemini 3 signature rule", () => {
  const body = encodeRequest(fromClaude(), gemini3) as Record<string, any>;
  assert.deepEqual(body.systemInstruction, { parts: [{ text: "S\n\nLater." }] });
  const [user, model, results] = body.contents;
  assert.equal(user.role, "user");
  assert.deepEqual(model.parts, [
    { functionCall: { name: "f", args: { a: 1 } }, thoughtSignature: SKIP_SIGNATURE },
    { functionCall: { name: "f", args: { a: 2 } } },
  ], "the foreign thinking is dropped; only the turn's first call gets the skip value");
  assert.deepEqual(results.parts, [
    { functionResponse: { name: "f", response: { ok: true } } },
    { functionResponse: { name: "f", response: { error: "boom" } } },
  ]);
  assert.deepEqual(body.tools[0].functionDeclarations[0].parameters, {
    type: "object",
    properties: { a: { type: "integer" } },
  });
  assert.deepEqual(body.toolConfig, {
    functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["f"] },
  });
  assert.deepEqual(body.generationConfig.thinkingConfig, {
    thinkingLevel: "high",
    includeThoughts: true,
  });
  const older = encodeRequest(fromClaude(), gemini25) as Record<string, any>;
  assert.equal(older.contents[1].parts[0].thoughtSignature, undefined, "Gemini 2.x needs none");
  assert.equal(older.generationConfig.thinkingConfig.thinkingBudget, 24576);
  // A signature Gemini issued goes back to it, byte for byte.
  const own = fromClaude();
  (own.messages[1].content[1] as any).opaque = {
    provider: "gemini",
    kind: "thought-signature",
    value: "REAL",
  };
  const replayed = encodeRequest(own, gemini3) as Record<string, any>;
  assert.equal(replayed.contents[1].parts[0].thoughtSignature, "REAL");
  assert.throws(
    () =>
      encodeRequest({
        ...fromClaude(),
        hostedTools: [{ type: "other", field: "tools[2].type", name: "code" }],
      }, gemini3),
    (e: GatewayError) => e.status === 400 && e.options.param === "tools[2].type",
  );
});

Deno.test("answers: usage sums candidates and thoughts, tool calls finish as tool calls, tokens ride on calls", () => {
  const recorded = JSON.parse(transcript("generate-function-call.json").response.body_text);
  const answer = decodeResponse(recorded, "gemini");
  assert.equal(answer.finish.reason, "tool-calls");
  assert.deepEqual(answer.usage, {
    input: 49,
    cacheRead: 0,
    cacheWrite: 0,
    output: 63,
    reasoning: 48,
  });
  const call = answer.content[0] as any;
  assert.equal(call.opaque.provider, "gemini");
  assert.ok(call.id.startsWith("call_"));
  // Back to a Gemini client, the signature is a token it replays.
  const client = encodeResponse(answer, INFO) as Record<string, any>;
  const part = client.candidates[0].content.parts[0];
  assert.equal(fromToken(part.thoughtSignature)?.opaque.value, call.opaque.value);
  assert.deepEqual(client.usageMetadata, {
    promptTokenCount: 49,
    candidatesTokenCount: 15,
    thoughtsTokenCount: 48,
    totalTokenCount: 112,
  });
  // An Anthropic signature reaches a Gemini client on the call it precedes, and comes back.
  const claude = encodeResponse({
    ...answer,
    content: [
      {
        type: "reasoning",
        text: "why",
        opaque: { provider: "anthropic", kind: "thinking-signature", value: "S" },
      },
      { type: "tool-call", id: "toolu_1", name: "f", input: {} },
    ],
  }, INFO) as Record<string, any>;
  const parts = claude.candidates[0].content.parts;
  assert.deepEqual(parts[0], { text: "why", thought: true });
  const back = decodeRequest({
    contents: [{ role: "user", parts: [{ text: "q" }] }, { role: "model", parts }],
  }, {});
  const turn = back.messages[1].content as any[];
  assert.deepEqual(turn.map((p) => p.type), ["reasoning", "tool-call"]);
  assert.deepEqual(turn[0].opaque, {
    provider: "anthropic",
    kind: "thinking-signature",
    value: "S",
  });
  assert.equal(turn[0].text, "why");
});

Deno.test("the recorded stream decodes identically at every byte split, SSE and array", () => {
  const recorded = transcript("stream-text.json").response.body_text as string;
  const events = decodeEverySplit((emit) => generateDecoder(emit, "gemini"), recorded);
  const text = events.flatMap((e) => e.type === "text-delta" ? [e.delta] : []).join("");
  assert.match(text, /^The capital of France/);
  assert.equal(events.at(-1)!.type, "finish");
  const chunks = recorded.split(/\r?\n\r?\n/).filter(Boolean).map((b) => b.replace(/^data: ?/, ""));
  const array = `[${chunks.join(",\r\n")}]`;
  assert.deepEqual(
    decodeEverySplit((emit) => generateDecoder(emit, "gemini"), array, "json-array"),
    events,
  );
});

Deno.test("a signed call in a stream carries its signature; the finish is tool calls", () => {
  const chunk = {
    candidates: [{
      content: {
        role: "model",
        parts: [{ functionCall: { name: "f", args: { a: 1 } }, thoughtSignature: "SIG" }],
      },
      finishReason: "STOP",
    }],
    usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 3 },
    responseId: "r1",
  };
  const events = decodeEverySplit(
    (emit) => generateDecoder(emit, "gemini"),
    `data: ${JSON.stringify(chunk)}\r\n\r\n`,
  );
  const start = events.find((e) => e.type === "tool-input-start") as any;
  assert.deepEqual(start.opaque, { provider: "gemini", kind: "thought-signature", value: "SIG" });
  const finish = events.at(-1) as any;
  assert.equal(finish.reason, "tool-calls");
  assert.equal(finish.usage.output, 3);
});

Deno.test("the encoder writes fragments, usage on the last; arrays are valid JSON, failures end in an error", () => {
  const sse = parseSse(encodeAll((w) => generateEncoder(w, INFO), PARALLEL));
  assert.ok(sse.every((e) => e.event === ""));
  const parts = sse.flatMap((e) => (e.data as any).candidates[0].content.parts);
  assert.deepEqual(
    parts.filter((p: any) => p.functionCall).map((
      p: any,
    ) => [p.functionCall.id, p.functionCall.args]),
    [
      ["call_b", { zone: "UTC" }],
      ["call_a", { city: "Paris" }],
    ],
  );
  const last = sse.at(-1)!.data as any;
  assert.equal(last.candidates[0].finishReason, "STOP");
  assert.deepEqual(last.usageMetadata, {
    promptTokenCount: 100,
    candidatesTokenCount: 20,
    thoughtsTokenCount: 10,
    cachedContentTokenCount: 40,
    totalTokenCount: 130,
  });
  const array = JSON.parse(
    encodeAll((w) => generateEncoder(w, { ...INFO, jsonArray: true }), PARALLEL),
  );
  assert.equal(array.length, sse.length);
  const cut = JSON.parse(
    encodeAll((w) => generateEncoder(w, { ...INFO, jsonArray: true }), PARALLEL.slice(0, 3), "cut"),
  );
  assert.equal(cut.at(-1).error.message, "cut");
  const token = toToken({ provider: "anthropic", kind: "thinking-signature", value: "S" }, "t");
  assert.ok(fromToken(token));
});
