/** Chat completions ⇄ canonical converters, pure: requests, answers and streams both ways. */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { decodeRequest } from "../../../../src/protocols/chat/decode_request.ts";
import { encodeRequest } from "../../../../src/protocols/chat/encode_request.ts";
import { decodeResponse } from "../../../../src/protocols/chat/decode_response.ts";
import { encodeResponse } from "../../../../src/protocols/chat/encode_response.ts";
import { chatDecoder, chatEncoder } from "../../../../src/protocols/chat/stream.ts";
import { GatewayError } from "../../../../src/http/errors.ts";
import type { CanonicalEvent, CanonicalRequest, Json } from "../../../../src/translate/ir.ts";
import type { Target } from "../../../../src/translate/codec.ts";
import { collect } from "../../../../src/translate/collect.ts";
import { collect as collectAdaptations } from "../../../../src/translate/adaptations.ts";
import { decodeEverySplit, encodeAll, INFO, PARALLEL } from "../../../helpers/codec.ts";
import { sseEvents } from "../../../helpers/http.ts";
import chatText from "../../../fixtures/transcripts/openai/chat-text.json" with { type: "json" };
import chatToolStream from "../../../fixtures/transcripts/openai/chat-tool-call-stream-usage.json" with {
  type: "json",
};

const local: Target = { model: "qwen3-coder", provider: "local", family: "openai-compatible" };
const openai: Target = { model: "gpt-5", provider: "openai", family: "openai" };

/** Asserts `run` throws a 400 naming `field`. */
function refuses(run: () => unknown, field: string, message?: RegExp): void {
  assert.throws(run, (e: unknown) => {
    assert.ok(e instanceof GatewayError, String(e));
    assert.equal(e.status, 400);
    assert.equal(e.options.param, field);
    if (message) assert.match(e.message, message);
    return true;
  });
}

// ---------------------------------------------------------------------------------------------
// Client request → canonical

Deno.test("the recorded request decodes to one user message and nothing else", () => {
  const request = decodeRequest(chatText.request.body, {});
  assert.deepEqual(request, {
    system: [],
    messages: [{
      role: "user",
      content: [{ type: "text", text: "What is the capital of France?" }],
    }],
    tools: [],
    hostedTools: [],
    stream: false,
    fields: { messages: "messages", tools: "tools", choices: "n", stop: "stop" },
    // Chat caches by itself: a Messages upstream gets the gateway's breakpoints.
    cache: { implicit: true },
  });
});

Deno.test("a chat request decodes every part type, tools, choice and format", () => {
  const request = decodeRequest({
    model: "m",
    messages: [
      { role: "system", content: "Be brief." },
      { role: "developer", content: [{ type: "text", text: "Use tools." }] },
      {
        role: "user",
        content: [
          { type: "text", text: "Look:" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AAAA", detail: "low" } },
          { type: "image_url", image_url: { url: "https://x.test/a.jpg", detail: "high" } },
          {
            type: "file",
            file: { file_data: "data:application/pdf;base64,JVBE", filename: "a.pdf" },
          },
          { type: "input_audio", input_audio: { data: "UklG", format: "wav" } },
          { type: "input_audio", input_audio: { data: "SUQz", format: "mp3" } },
        ],
      },
      {
        role: "assistant",
        content: [{ type: "text", text: "Let me " }, { type: "refusal", refusal: "check." }],
        reasoning_content: "They want data.",
        tool_calls: [
          { id: "c1", type: "function", function: { name: "f", arguments: '{"a":1}' } },
          { id: "c2", type: "function", function: { name: "f", arguments: "not json" } },
          { id: "c3", type: "custom", custom: { name: "patch", input: "*** Begin" } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "one" },
      { role: "tool", tool_call_id: "c2", content: [{ type: "text", text: "two" }] },
      { role: "tool", tool_call_id: "c3", content: "applied" },
      { role: "developer", content: "Later note." },
      { role: "assistant", content: null, reasoning: "Thinking." },
    ],
    tools: [
      { type: "function", function: { name: "f", description: "F.", strict: true } },
      { type: "custom", custom: { name: "patch", description: "Edit files." } },
    ],
    web_search_options: {},
    tool_choice: { type: "custom", custom: { name: "patch" } },
    parallel_tool_calls: false,
    response_format: {
      type: "json_schema",
      json_schema: { name: "n", schema: { type: "object" }, strict: true, description: "D" },
    },
    max_tokens: 50,
    max_completion_tokens: 70,
    temperature: 0.3,
    top_p: 0.9,
    stop: "END",
    seed: 7,
    presence_penalty: 0.1,
    frequency_penalty: 0.2,
    reasoning_effort: "low",
    user: "old-user",
    safety_identifier: "u-1",
    n: 1,
    stream: true,
  }, {});
  assert.deepEqual(request.system, [
    { type: "text", text: "Be brief." },
    { type: "text", text: "Use tools." },
  ]);
  assert.deepEqual(request.messages, [
    {
      role: "user",
      content: [
        { type: "text", text: "Look:" },
        { type: "file", mediaType: "image/png", data: { base64: "AAAA" }, detail: "low" },
        {
          type: "file",
          mediaType: "image/*",
          data: { url: "https://x.test/a.jpg" },
          detail: "high",
        },
        {
          type: "file",
          mediaType: "application/pdf",
          data: { base64: "JVBE" },
          filename: "a.pdf",
        },
        { type: "file", mediaType: "audio/wav", data: { base64: "UklG" } },
        { type: "file", mediaType: "audio/mpeg", data: { base64: "SUQz" } },
      ],
    },
    {
      role: "assistant",
      content: [
        { type: "reasoning", text: "They want data." },
        { type: "text", text: "Let me check." },
        { type: "tool-call", id: "c1", name: "f", input: { a: 1 } },
        { type: "tool-call", id: "c2", name: "f", input: { _raw: "not json" } },
        {
          type: "tool-call",
          id: "c3",
          name: "patch",
          input: { input: "*** Begin" },
          kind: "custom",
        },
      ],
    },
    {
      role: "tool",
      content: [
        { type: "tool-result", id: "c1", name: "f", content: [{ type: "text", text: "one" }] },
        { type: "tool-result", id: "c2", name: "f", content: [{ type: "text", text: "two" }] },
        {
          type: "tool-result",
          id: "c3",
          name: "patch",
          content: [{ type: "text", text: "applied" }],
          kind: "custom",
        },
      ],
    },
    { role: "system", content: [{ type: "text", text: "Later note." }] },
    { role: "assistant", content: [{ type: "reasoning", text: "Thinking." }] },
  ]);
  assert.deepEqual(request.tools, [
    {
      name: "f",
      description: "F.",
      parameters: { type: "object", properties: {} },
      strict: true,
    },
    {
      name: "patch",
      description: "Edit files.",
      parameters: {
        type: "object",
        properties: { input: { type: "string" } },
        required: ["input"],
      },
      kind: "custom",
    },
  ]);
  assert.deepEqual(request.hostedTools, [{ type: "web_search", field: "web_search_options" }]);
  assert.deepEqual(request.toolChoice, { type: "tool", name: "patch" });
  assert.equal(request.parallelToolCalls, false);
  assert.deepEqual(request.responseFormat, {
    type: "json",
    schema: { type: "object" },
    name: "n",
    description: "D",
    strict: true,
  });
  assert.equal(request.maxOutputTokens, 70, "max_completion_tokens before max_tokens");
  assert.equal(request.temperature, 0.3);
  assert.equal(request.topP, 0.9);
  assert.deepEqual(request.stop, ["END"]);
  assert.equal(request.seed, 7);
  assert.equal(request.presencePenalty, 0.1);
  assert.equal(request.frequencyPenalty, 0.2);
  assert.deepEqual(request.reasoning, { effort: "low" });
  assert.equal(request.user, "u-1", "safety_identifier before user");
  assert.equal(request.choices, 1);
  assert.equal(request.stream, true);
});

Deno.test("the other choice and format forms; effort none turns reasoning off", () => {
  const base = { messages: [{ role: "user", content: "hi" }] };
  for (const choice of ["auto", "none", "required"] as const) {
    assert.deepEqual(decodeRequest({ ...base, tool_choice: choice }, {}).toolChoice, {
      type: choice,
    });
  }
  assert.deepEqual(
    decodeRequest({ ...base, tool_choice: { type: "function", function: { name: "f" } } }, {})
      .toolChoice,
    { type: "tool", name: "f" },
  );
  assert.deepEqual(
    decodeRequest({ ...base, response_format: { type: "json_object" } }, {}).responseFormat,
    { type: "json" },
  );
  assert.equal(
    decodeRequest({ ...base, response_format: { type: "text" } }, {}).responseFormat,
    undefined,
  );
  assert.deepEqual(decodeRequest({ ...base, reasoning_effort: "none" }, {}).reasoning, {
    off: true,
  });
  assert.deepEqual(decodeRequest({ ...base, reasoning_effort: "xhigh" }, {}).reasoning, {
    effort: "high",
  });
  const request = decodeRequest({
    ...base,
    max_tokens: 9,
    user: "u-2",
    stop: ["a", "b"],
    search_parameters: { mode: "on" },
  }, {});
  assert.equal(request.maxOutputTokens, 9);
  assert.equal(request.user, "u-2");
  assert.deepEqual(request.stop, ["a", "b"]);
  assert.deepEqual(request.hostedTools, [
    { type: "other", field: "search_parameters", name: "live search" },
  ]);
  assert.deepEqual(
    decodeRequest({ ...base, search_parameters: { mode: "off" } }, {}).hostedTools,
    [],
  );
});

Deno.test("chat requests another protocol cannot take are 400s naming the field", () => {
  const user = (part: Json) => ({ messages: [{ role: "user", content: [part] }] });
  const cases: [Json, string][] = [
    [user({ type: "file", file: { file_id: "file-1" } }), "messages[0].content[0].file.file_id"],
    [user({ type: "file", file: { filename: "x" } }), "messages[0].content[0].file.file_data"],
    [
      user({ type: "image_url", image_url: { url: "data:image/png,%89PNG" } }),
      "messages[0].content[0].image_url.url",
    ],
    [user({ type: "video_url" }), "messages[0].content[0].type"],
    [{ messages: [], logprobs: true }, "logprobs"],
    [{ messages: [], top_logprobs: 2 }, "top_logprobs"],
    [{ messages: [], audio: { voice: "alloy", format: "wav" } }, "audio"],
    [{ messages: [], modalities: ["text", "audio"] }, "modalities"],
    [{ messages: [], prediction: { type: "content", content: "x" } }, "prediction"],
    [{ messages: [], logit_bias: { "50256": -100 } }, "logit_bias"],
    [{ messages: [], functions: [{ name: "f" }] }, "functions"],
    [{ messages: [], function_call: "auto" }, "function_call"],
    [
      {
        messages: [{
          role: "assistant",
          content: null,
          function_call: { name: "f", arguments: "{}" },
        }],
      },
      "messages[0].function_call",
    ],
    [{ messages: [{ role: "assistant", audio: { id: "audio_1" } }] }, "messages[0].audio"],
    [{ messages: [{ role: "function", name: "f", content: "x" }] }, "messages[0].role"],
    [{ messages: [{ role: "robot", content: "x" }] }, "messages[0].role"],
    [{ messages: [{ role: "tool", content: "x" }] }, "messages[0].tool_call_id"],
    [{ messages: [], tools: [{ type: "web" }] }, "tools[0].type"],
    [
      {
        messages: [],
        tools: [{
          type: "custom",
          custom: { name: "sql", format: { type: "grammar", grammar: {} } },
        }],
      },
      "tools[0].custom.format",
    ],
    [{ messages: [], tool_choice: { type: "allowed_tools", allowed_tools: {} } }, "tool_choice"],
    [{ messages: [], response_format: { type: "yaml" } }, "response_format.type"],
    [{ messages: [], temperature: "hot" }, "temperature"],
  ];
  for (const [body, field] of cases) refuses(() => decodeRequest(body, {}), field);
});

// ---------------------------------------------------------------------------------------------
// Canonical → upstream request

function canonical(extra: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return {
    system: [{ type: "text", text: "S1" }, { type: "text", text: "S2" }],
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "hi" },
          { type: "file", mediaType: "image/jpeg", data: { base64: "/9j/" }, detail: "low" },
          { type: "file", mediaType: "image/*", data: { url: "https://x.test/a.png" } },
          { type: "file", mediaType: "application/pdf", data: { base64: "JVBE" } },
          { type: "file", mediaType: "text/plain", data: { base64: "aGk=" }, filename: "a.txt" },
          { type: "file", mediaType: "audio/mpeg", data: { base64: "SUQz" } },
        ],
      },
      {
        role: "assistant",
        content: [
          {
            type: "reasoning",
            text: "thought",
            opaque: { provider: "anthropic", kind: "thinking-signature", value: "sig" },
          },
          { type: "hosted-call", tool: "web_search", id: "ws_1", query: "q" },
          { type: "text", text: "Calling." },
          { type: "tool-call", id: "toolu_1", name: "f", input: { a: 1 } },
          {
            type: "tool-call",
            id: "toolu_2",
            name: "patch",
            input: { input: "x" },
            kind: "custom",
          },
        ],
      },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            id: "toolu_1",
            content: [{ type: "text", text: "bad" }],
            isError: true,
          },
          {
            type: "tool-result",
            id: "toolu_2",
            content: [{ type: "text", text: "Error: already said" }],
            isError: true,
          },
        ],
      },
      { role: "system", content: [{ type: "text", text: "Mid." }] },
      { role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] },
      { role: "assistant", content: [{ type: "reasoning", text: "only thinking" }] },
    ],
    tools: [
      { name: "f", description: "F.", parameters: { type: "object" }, strict: true },
      {
        name: "patch",
        parameters: { type: "object", properties: { input: { type: "string" } } },
        kind: "custom",
      },
    ],
    hostedTools: [],
    toolChoice: { type: "tool", name: "patch" },
    parallelToolCalls: false,
    stream: true,
    maxOutputTokens: 100,
    temperature: 0.5,
    topP: 0.8,
    topK: 40,
    stop: ["X"],
    seed: 3,
    presencePenalty: 0.1,
    frequencyPenalty: 0.2,
    responseFormat: { type: "json", schema: { type: "object" } },
    reasoning: { budgetTokens: 3000, visible: true },
    user: "u",
    fields: { messages: "messages", tools: "tools" },
    ...extra,
  };
}

Deno.test("encoding for an openai-compatible server: messages, tools and every field", () => {
  assert.deepEqual(encodeRequest(canonical(), local), {
    model: "qwen3-coder",
    messages: [
      { role: "system", content: "S1\n\nS2" },
      {
        role: "user",
        content: [
          { type: "text", text: "hi" },
          { type: "image_url", image_url: { url: "data:image/jpeg;base64,/9j/", detail: "low" } },
          { type: "image_url", image_url: { url: "https://x.test/a.png" } },
          {
            type: "file",
            file: { file_data: "data:application/pdf;base64,JVBE", filename: "file.pdf" },
          },
          { type: "file", file: { file_data: "data:text/plain;base64,aGk=", filename: "a.txt" } },
          { type: "input_audio", input_audio: { data: "SUQz", format: "mp3" } },
        ],
      },
      {
        role: "assistant",
        content: "Calling.",
        tool_calls: [
          { id: "toolu_1", type: "function", function: { name: "f", arguments: '{"a":1}' } },
          {
            id: "toolu_2",
            type: "function",
            function: { name: "patch", arguments: '{"input":"x"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "toolu_1", content: "Error: bad" },
      { role: "tool", tool_call_id: "toolu_2", content: "Error: already said" },
      { role: "system", content: "Mid." },
      { role: "user", content: "a\n\nb" },
    ],
    tools: [
      {
        type: "function",
        function: { name: "f", description: "F.", parameters: { type: "object" }, strict: true },
      },
      {
        type: "function",
        function: {
          name: "patch",
          parameters: {
            type: "object",
            properties: { input: { type: "string" } },
            required: ["input"],
          },
        },
      },
    ],
    tool_choice: { type: "function", function: { name: "patch" } },
    parallel_tool_calls: false,
    max_tokens: 100,
    temperature: 0.5,
    top_p: 0.8,
    stop: ["X"],
    seed: 3,
    presence_penalty: 0.1,
    frequency_penalty: 0.2,
    response_format: {
      type: "json_schema",
      json_schema: { name: "response", schema: { type: "object" } },
    },
    reasoning_effort: "low",
    user: "u",
    stream: true,
    stream_options: { include_usage: true },
  });
});

Deno.test("encoding for OpenAI: max_completion_tokens; no stream options unstreamed", () => {
  const body = encodeRequest(
    canonical({
      stream: false,
      tools: [],
      toolChoice: { type: "auto" },
      reasoning: { effort: "high" },
      responseFormat: { type: "json" },
    }),
    openai,
  );
  assert.equal(body.model, "gpt-5");
  assert.equal(body.max_completion_tokens, 100);
  assert.equal(body.max_tokens, undefined);
  assert.equal(body.stream, undefined);
  assert.equal(body.stream_options, undefined);
  assert.equal(body.tools, undefined);
  assert.equal(body.tool_choice, undefined, "no choice without tools");
  assert.equal(body.parallel_tool_calls, undefined, "parallel_tool_calls only with tools");
  assert.equal(body.reasoning_effort, "high");
  assert.deepEqual(body.response_format, { type: "json_object" });
  const off = encodeRequest(canonical({ reasoning: { off: true } }), openai);
  assert.equal(off.reasoning_effort, undefined);
  const named = encodeRequest(
    canonical({ responseFormat: { type: "json", schema: {}, name: "x", strict: false } }),
    openai,
  );
  assert.deepEqual(named.response_format, {
    type: "json_schema",
    json_schema: { name: "x", schema: {}, strict: false },
  });
});

Deno.test("web search offered to a chat upstream is not sent, and noted by the client's field", () => {
  const { value, adaptations } = collectAdaptations((adapt) =>
    encodeRequest(
      canonical({ hostedTools: [{ type: "web_search", field: "tools[1].type" }] }),
      local,
      adapt,
    )
  );
  // The functions go as they are; nothing stands for the search.
  const tools = (value as { tools: { type: string }[] }).tools;
  assert.deepEqual(
    tools,
    (encodeRequest(canonical({}), local) as { tools: unknown }).tools,
  );
  assert.deepEqual(
    adaptations.filter((a) => a.kind === "web_search_dropped"),
    [{ kind: "web_search_dropped", field: "tools[1].type" }],
  );
});

Deno.test("what a chat upstream cannot take is refused naming the client's field", () => {
  refuses(
    () =>
      encodeRequest(
        canonical({ hostedTools: [{ type: "other", field: "tools[0]", name: "code_execution" }] }),
        openai,
      ),
    "tools[0]",
    /code_execution/,
  );
  refuses(
    () =>
      encodeRequest(
        canonical({
          choices: 2,
          fields: {
            messages: "contents",
            tools: "tools",
            choices: "generationConfig.candidateCount",
          },
        }),
        local,
      ),
    "generationConfig.candidateCount",
  );
  const withResult = (content: CanonicalRequest["messages"][number]) =>
    canonical({ messages: [content], fields: { messages: "input", tools: "tools" } });
  refuses(
    () =>
      encodeRequest(
        withResult({
          role: "tool",
          content: [{
            type: "tool-result",
            id: "c",
            content: [{ type: "file", mediaType: "image/png", data: { base64: "AA" } }],
          }],
        }),
        local,
      ),
    "input",
    /tool result/,
  );
  refuses(
    () =>
      encodeRequest(
        withResult({
          role: "user",
          content: [{ type: "file", mediaType: "application/pdf", data: { url: "https://x/a" } }],
        }),
        local,
      ),
    "input",
  );
});

// ---------------------------------------------------------------------------------------------
// Answers

Deno.test("the recorded answer decodes and goes back to a chat client with the same numbers", () => {
  const answer = decodeResponse(JSON.parse(chatText.response.body_text), "openai");
  assert.deepEqual(answer, {
    id: "chatcmpl-Bu8vBIrB8kIWKRyTcpEEPncjhHtMU",
    model: "gpt-4o-2024-08-06",
    content: [{ type: "text", text: "The capital of France is Paris." }],
    finish: { reason: "stop", raw: "stop" },
    usage: { input: 14, cacheRead: 0, cacheWrite: 0, output: 7, reasoning: 0 },
  });
  assert.deepEqual(encodeResponse(answer, INFO), {
    id: "ans_1",
    object: "chat.completion",
    created: 1,
    model: "client-model",
    choices: [{
      index: 0,
      message: { role: "assistant", content: "The capital of France is Paris.", refusal: null },
      logprobs: null,
      finish_reason: "stop",
    }],
    usage: {
      prompt_tokens: 14,
      completion_tokens: 7,
      total_tokens: 21,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
    },
  });
});

Deno.test("answers: prompt_tokens include the cache; length wins over tool calls", () => {
  const answer = decodeResponse({
    id: "x",
    model: "m",
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: "partial",
        reasoning_content: "why",
        tool_calls: [
          { id: "c", type: "function", function: { name: "f", arguments: '{"a":' } },
          { id: "d", type: "custom", custom: { name: "patch", input: "raw text" } },
        ],
      },
      finish_reason: "length",
    }],
    usage: {
      prompt_tokens: 100,
      completion_tokens: 20,
      total_tokens: 120,
      prompt_tokens_details: { cached_tokens: 60, cache_write_tokens: 30 },
      completion_tokens_details: { reasoning_tokens: 5 },
    },
  }, "local");
  assert.deepEqual(answer.usage, {
    input: 100,
    cacheRead: 60,
    cacheWrite: 30,
    output: 20,
    reasoning: 5,
  });
  assert.deepEqual(answer.finish, { reason: "length", raw: "length" });
  assert.deepEqual(answer.content, [
    { type: "reasoning", text: "why" },
    { type: "text", text: "partial" },
    { type: "tool-call", id: "c", name: "f", input: { _raw: '{"a":' } },
    { type: "tool-call", id: "d", name: "patch", input: { input: "raw text" }, kind: "custom" },
  ]);
  const client = encodeResponse(answer, INFO) as Record<string, any>;
  assert.equal(client.choices[0].finish_reason, "length");
  assert.deepEqual(client.choices[0].message, {
    role: "assistant",
    content: "partial",
    refusal: null,
    reasoning_content: "why",
    tool_calls: [
      // Arguments that were not JSON go back exactly as they came.
      { id: "c", type: "function", function: { name: "f", arguments: '{"a":' } },
      { id: "d", type: "custom", custom: { name: "patch", input: "raw text" } },
    ],
  });
  assert.deepEqual(client.usage, {
    prompt_tokens: 100,
    completion_tokens: 20,
    total_tokens: 120,
    prompt_tokens_details: { cached_tokens: 60, cache_write_tokens: 30 },
    completion_tokens_details: { reasoning_tokens: 5 },
  });
});

Deno.test("finish mapping: tool calls, refusal, a server saying stop after calls, vendor caches", () => {
  const finish = (choice: Json) => decodeResponse({ choices: [choice] }, "p").finish;
  const call = [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }];
  assert.deepEqual(finish({ message: { tool_calls: call }, finish_reason: "tool_calls" }), {
    reason: "tool-calls",
    raw: "tool_calls",
  });
  assert.equal(
    finish({ message: { tool_calls: call }, finish_reason: "stop" }).reason,
    "tool-calls",
  );
  assert.equal(
    finish({ message: { content: null, refusal: "No." }, finish_reason: "stop" }).reason,
    "content-filter",
  );
  assert.equal(
    finish({ message: { content: "x" }, finish_reason: "content_filter" }).reason,
    "content-filter",
  );
  assert.equal(finish({ message: {} }).reason, "other");
  const refusal = decodeResponse({
    choices: [{ message: { content: null, refusal: "No." }, finish_reason: "stop" }],
  }, "p");
  assert.deepEqual(refusal.content, [{ type: "text", text: "No." }]);
  const client = encodeResponse({ ...refusal, id: "", model: "" }, INFO) as Record<string, any>;
  assert.equal(client.choices[0].finish_reason, "content_filter");
  assert.deepEqual(
    decodeResponse({
      usage: { prompt_tokens: 10, completion_tokens: 1, prompt_cache_hit_tokens: 7 },
    }, "p")
      .usage,
    { input: 10, cacheRead: 7, cacheWrite: 0, output: 1, reasoning: 0 },
  );
  const written = encodeResponse({
    id: "",
    model: "",
    content: [],
    finish: { reason: "tool-calls" },
    usage: { input: 0, cacheRead: 0, cacheWrite: 0, output: 0, reasoning: 0 },
  }, { ...INFO, customTools: new Set(["patch"]) }) as Record<string, any>;
  assert.equal(written.choices[0].finish_reason, "tool_calls");
  assert.equal(written.choices[0].message.content, null);
  assert.equal(written.choices[0].message.tool_calls, undefined);
});

// ---------------------------------------------------------------------------------------------
// Streams: upstream chunks → canonical

Deno.test("the recorded tool-call stream decodes identically at every byte split", () => {
  const recorded = chatToolStream.response.body_text;
  const events = decodeEverySplit((emit) => chatDecoder(emit, "openai"), recorded);
  const id = "call_ZR5UUuTt3pf61kjwAJIYdVMj";
  const usage = { input: 53, cacheRead: 0, cacheWrite: 0, output: 15, reasoning: 0 };
  assert.deepEqual(events, [
    {
      type: "start",
      id: "chatcmpl-Dx0XpqH8w09uBXwq1zFGYdETjtnEl",
      model: "gpt-4o-mini-2024-07-18",
    },
    { type: "tool-input-start", id, name: "get_capital" },
    { type: "tool-input-delta", id, delta: '{"' },
    { type: "tool-input-delta", id, delta: "country" },
    { type: "tool-input-delta", id, delta: '":"' },
    { type: "tool-input-delta", id, delta: "UK" },
    { type: "tool-input-delta", id, delta: '"}' },
    { type: "tool-input-end", id },
    { type: "usage", usage },
    { type: "finish", reason: "tool-calls", raw: "tool_calls", usage },
  ]);
});

/** A vLLM-like stream: reasoning, text, two parallel calls interleaving, keep-alives, usage. */
const PARALLEL_STREAM = [
  ": keep-alive\n\n",
  ...[
    { choices: [{ index: 0, delta: { role: "assistant", content: "" } }] },
    { choices: [{ index: 0, delta: { reasoning_content: "Two cities" } }] },
    { choices: [{ index: 0, delta: { reasoning_content: ", two calls." } }] },
    { choices: [{ index: 0, delta: { content: "Checking ☀️ " } }] },
    { choices: [{ index: 0, delta: { content: "both." } }] },
    {
      choices: [{
        index: 0,
        delta: {
          tool_calls: [{
            index: 0,
            id: "call_a",
            type: "function",
            function: { name: "weather", arguments: "" },
          }],
        },
      }],
    },
    {
      choices: [{
        index: 0,
        delta: {
          tool_calls: [{
            index: 1,
            id: "call_b",
            type: "function",
            function: { name: "weather", arguments: '{"city":' },
          }],
        },
      }],
    },
    {
      choices: [{
        index: 0,
        delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
      }],
    },
    {
      choices: [{
        index: 0,
        delta: {
          tool_calls: [
            { index: 1, function: { arguments: '"Oslo"}' } },
            { index: 0, function: { arguments: '"Paris"}' } },
          ],
        },
      }],
    },
    { choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
    {
      choices: [],
      usage: {
        prompt_tokens: 90,
        completion_tokens: 40,
        prompt_tokens_details: { cached_tokens: 64 },
        completion_tokens_details: { reasoning_tokens: 12 },
      },
    },
  ].map((c) => `data: ${JSON.stringify({ id: "chatcmpl-9", model: "qwen3", ...c })}\n\n`),
  "data: {not json\n\n",
  "data: [DONE]\n\n",
].join("");

Deno.test("parallel calls stay apart by index at every byte split, after reasoning and text", () => {
  const events = decodeEverySplit((emit) => chatDecoder(emit, "local"), PARALLEL_STREAM);
  const usage = { input: 90, cacheRead: 64, cacheWrite: 0, output: 40, reasoning: 12 };
  assert.deepEqual(events, [
    { type: "start", id: "chatcmpl-9", model: "qwen3" },
    { type: "reasoning-start", id: "reasoning_0" },
    { type: "reasoning-delta", id: "reasoning_0", delta: "Two cities" },
    { type: "reasoning-delta", id: "reasoning_0", delta: ", two calls." },
    { type: "reasoning-end", id: "reasoning_0" },
    { type: "text-start", id: "text_1" },
    { type: "text-delta", id: "text_1", delta: "Checking ☀️ " },
    { type: "text-delta", id: "text_1", delta: "both." },
    { type: "text-end", id: "text_1" },
    { type: "tool-input-start", id: "call_a", name: "weather" },
    { type: "tool-input-start", id: "call_b", name: "weather" },
    { type: "tool-input-delta", id: "call_b", delta: '{"city":' },
    { type: "tool-input-delta", id: "call_a", delta: '{"city":' },
    { type: "tool-input-delta", id: "call_b", delta: '"Oslo"}' },
    { type: "tool-input-delta", id: "call_a", delta: '"Paris"}' },
    { type: "tool-input-end", id: "call_a" },
    { type: "tool-input-end", id: "call_b" },
    { type: "usage", usage },
    { type: "finish", reason: "tool-calls", raw: "tool_calls", usage },
  ]);
});

/** The events of chunks (as SSE, with `[DONE]` unless told), fed whole. */
function decodeChunks(chunks: Json[], done = true): CanonicalEvent[] {
  const text = chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") +
    (done ? "data: [DONE]\n\n" : "");
  return decodeEverySplit((emit) => chatDecoder(emit, "p"), text);
}

Deno.test("decoder quirks: reused index 0, no index, custom calls, refusals, no [DONE], errors", () => {
  const call = (extra: Json) => ({ choices: [{ index: 0, delta: { tool_calls: [extra] } }] });
  // A server that numbers every call 0: a new id at that index is a new call.
  const reused = decodeChunks([
    call({ index: 0, id: "a", function: { name: "f", arguments: "{}" } }),
    call({ index: 0, id: "b", function: { name: "g", arguments: "{}" } }),
    { choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
  ]);
  assert.deepEqual(
    reused.filter((e) => e.type.startsWith("tool")).map((e) => e.type + ":" + (e as any).id),
    [
      "tool-input-start:a",
      "tool-input-delta:a",
      "tool-input-end:a",
      "tool-input-start:b",
      "tool-input-delta:b",
      "tool-input-end:b",
    ],
  );
  // No index at all: fragments without an id belong to the last call.
  const unindexed = collectOf(decodeChunks([
    call({ id: "a", function: { name: "f", arguments: '{"x"' } }),
    call({ function: { arguments: ":1}" } }),
    call({ id: "b", function: { name: "g", arguments: "{}" } }),
    { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
  ]));
  assert.deepEqual(unindexed.content, [
    { type: "tool-call", id: "a", name: "f", input: { x: 1 } },
    { type: "tool-call", id: "b", name: "g", input: {} },
  ]);
  assert.equal(unindexed.finish.reason, "tool-calls", "calls that say stop finish with tool-calls");
  // A custom call streams its raw input as the JSON of {input}.
  const custom = collectOf(decodeChunks([
    call({ index: 0, id: "c", type: "custom", custom: { name: "patch", input: 'a "q"\n' } }),
    call({ index: 0, custom: { input: "b\\" } }),
    { choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
  ]));
  assert.deepEqual(custom.content, [
    { type: "tool-call", id: "c", name: "patch", input: { input: 'a "q"\nb\\' }, kind: "custom" },
  ]);
  // A streamed refusal is text, and the answer is filtered.
  const refusal = collectOf(decodeChunks([
    { choices: [{ index: 0, delta: { role: "assistant", refusal: "I can't" } }] },
    { choices: [{ index: 0, delta: { refusal: " help." }, finish_reason: "stop" }] },
  ]));
  assert.deepEqual(refusal.content, [{ type: "text", text: "I can't help." }]);
  assert.equal(refusal.finish.reason, "content-filter");
  // No [DONE] after a finish reason: the finish comes at the end, once; usage on the choice.
  const undone = decodeChunks([
    { choices: [{ index: 0, delta: { content: "hi" } }] },
    { choices: [{ index: 0, delta: {}, finish_reason: "length", usage: { prompt_tokens: 3 } }] },
  ], false);
  assert.deepEqual(undone.at(-1), {
    type: "finish",
    reason: "length",
    raw: "length",
    usage: { input: 3, cacheRead: 0, cacheWrite: 0, output: 0, reasoning: 0 },
  });
  assert.equal(undone.filter((e) => e.type === "finish").length, 1);
  // Cut before any finish reason: no finish at all.
  assert.ok(
    !decodeChunks([{ choices: [{ index: 0, delta: { content: "hi" } }] }], false).some((e) =>
      e.type === "finish"
    ),
  );
  // A mid-stream error ends it.
  const failed = decodeChunks([
    { choices: [{ index: 0, delta: { content: "hi" } }] },
    { error: { message: "overloaded", type: "server_error", code: "overloaded" } },
    { choices: [{ index: 0, delta: { content: "more" } }] },
  ]);
  assert.deepEqual(failed.at(-1), { type: "error", message: "overloaded", code: "overloaded" });
  assert.ok(!failed.some((e) => e.type === "finish"));
});

function collectOf(events: CanonicalEvent[]) {
  const collector = collect();
  for (const event of events) collector.push(event);
  const result = collector.result();
  assert.ok(result, "the stream finished");
  return result;
}

// ---------------------------------------------------------------------------------------------
// Streams: canonical → a client's chunks

const chunkText = (delta: Json, finish: string | null = null, usageNull = false) =>
  `data: ${
    JSON.stringify({
      id: "ans_1",
      object: "chat.completion.chunk",
      created: 1,
      model: "client-model",
      system_fingerprint: null,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(usageNull ? { usage: null } : {}),
    })
  }\n\n`;

Deno.test("the encoder's exact grammar: role chunk, deltas, indexed calls, finish, [DONE]", () => {
  const events: CanonicalEvent[] = [
    { type: "start", id: "up", model: "m" },
    { type: "reasoning-start", id: "r" },
    { type: "reasoning-delta", id: "r", delta: "hm" },
    { type: "reasoning-end", id: "r" },
    ...PARALLEL.slice(1),
  ];
  const expected = [
    chunkText({ role: "assistant", content: "" }),
    chunkText({ reasoning_content: "hm" }),
    chunkText({ content: "Checking." }),
    chunkText({
      tool_calls: [{
        index: 0,
        id: "call_a",
        type: "function",
        function: { name: "get_weather", arguments: "" },
      }],
    }),
    chunkText({
      tool_calls: [{
        index: 1,
        id: "call_b",
        type: "function",
        function: { name: "get_time", arguments: "" },
      }],
    }),
    chunkText({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
    chunkText({ tool_calls: [{ index: 1, function: { arguments: '{"zone":"UTC"}' } }] }),
    chunkText({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
    chunkText({}, "tool_calls"),
    "data: [DONE]\n\n",
  ].join("");
  assert.equal(encodeAll((w) => chatEncoder(w, INFO), events), expected);
});

Deno.test("the usage chunk only when asked, with usage null on every chunk before it", () => {
  const text = encodeAll((w) => chatEncoder(w, { ...INFO, usageChunk: true }), [
    { type: "start" },
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "Hi" },
    { type: "text-end", id: "t" },
    { type: "usage", usage: { input: 10, cacheRead: 4 } },
    { type: "finish", reason: "length" },
    { type: "text-delta", id: "t", delta: "after the end" },
  ]);
  const usage = {
    prompt_tokens: 10,
    completion_tokens: 0,
    total_tokens: 10,
    prompt_tokens_details: { cached_tokens: 4 },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
  assert.equal(
    text,
    chunkText({ role: "assistant", content: "" }, null, true) +
      chunkText({ content: "Hi" }, null, true) +
      chunkText({}, "length", true) +
      `data: ${
        JSON.stringify({
          id: "ans_1",
          object: "chat.completion.chunk",
          created: 1,
          model: "client-model",
          system_fingerprint: null,
          choices: [],
          usage,
        })
      }\n\n` +
      "data: [DONE]\n\n",
  );
  const plain = sseEvents(encodeAll((w) => chatEncoder(w, INFO), PARALLEL));
  assert.ok(
    plain.every((e) => e.event === "" && (e.data === "[DONE]" || !("usage" in (e.data as Json)))),
  );
  const asked = sseEvents(
    encodeAll((w) => chatEncoder(w, { ...INFO, usageChunk: true }), PARALLEL),
  );
  assert.deepEqual((asked.at(-2)!.data as any).usage, {
    prompt_tokens: 100,
    completion_tokens: 30,
    total_tokens: 130,
    prompt_tokens_details: { cached_tokens: 40 },
    completion_tokens_details: { reasoning_tokens: 10 },
  });
});

Deno.test("a client's custom tool call is written whole as a custom call", () => {
  const chunks = sseEvents(
    encodeAll((w) => chatEncoder(w, { ...INFO, customTools: new Set(["patch"]) }), [
      { type: "start" },
      { type: "tool-input-start", id: "c1", name: "patch" },
      { type: "tool-input-start", id: "c2", name: "f" },
      { type: "tool-input-delta", id: "c1", delta: '{"input":"line 1\\n' },
      { type: "tool-input-delta", id: "c2", delta: "{}" },
      { type: "tool-input-delta", id: "c1", delta: 'line 2"}' },
      { type: "tool-input-end", id: "c2" },
      { type: "tool-input-end", id: "c1" },
      { type: "finish", reason: "tool-calls" },
    ]),
  ).slice(1, -2).map((e) => (e.data as any).choices[0].delta.tool_calls[0]);
  assert.deepEqual(chunks, [
    { index: 1, id: "c2", type: "function", function: { name: "f", arguments: "" } },
    { index: 1, function: { arguments: "{}" } },
    { index: 0, id: "c1", type: "custom", custom: { name: "patch", input: "line 1\nline 2" } },
  ]);
});

Deno.test("fail() and an error event end the stream with the error payload, once", () => {
  const error = (message: string) =>
    `data: ${
      JSON.stringify({
        error: { message, type: "server_error", param: null, code: "upstream_error" },
      })
    }\n\n`;
  assert.equal(
    encodeAll((w) => chatEncoder(w, INFO), PARALLEL.slice(0, 3), "cut"),
    chunkText({ role: "assistant", content: "" }) + chunkText({ content: "Checking." }) +
      error("cut"),
  );
  let out = "";
  const encoder = chatEncoder((t) => out += t, INFO);
  encoder.push({ type: "error", message: "boom", code: "x" });
  encoder.fail("again");
  encoder.push({ type: "finish", reason: "stop" });
  assert.equal(out, error("boom"));
  // Nothing after a finish either.
  const finished = encodeAll((w) => chatEncoder(w, INFO), PARALLEL, "late");
  assert.ok(finished.endsWith("data: [DONE]\n\n"));
});

Deno.test("what the encoder writes, the decoder reads back to the same answer", () => {
  const written = encodeAll((w) => chatEncoder(w, { ...INFO, usageChunk: true }), PARALLEL);
  const events = decodeEverySplit((emit) => chatDecoder(emit, "gateway"), written);
  const original = collectOf(PARALLEL);
  const read = collectOf(events);
  assert.deepEqual(read, {
    ...original,
    id: "ans_1",
    model: "client-model",
    finish: { reason: "tool-calls", raw: "tool_calls" },
  });
});
