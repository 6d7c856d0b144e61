/** The chat-completions converters (pure): requests, answers, and streams both ways. */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import {
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
} from "../../src/protocols/chat/codec.ts";
import { chatDecoder, chatEncoder } from "../../src/protocols/chat/stream.ts";
import { GatewayError } from "../../src/http/errors.ts";
import type { CanonicalRequest } from "../../src/translate/ir.ts";
import { decodeEverySplit, encodeAll, INFO, PARALLEL, parseSse } from "../helpers/codec.ts";

const TRANSCRIPTS = new URL("../../../shared/transcripts/openai/", import.meta.url);
const transcript = (name: string) => JSON.parse(Deno.readTextFileSync(new URL(name, TRANSCRIPTS)));
const local = { model: "qwen3-coder", provider: "local", family: "openai-compatible" as const };

Deno.test("a chat request decodes every part type, tools, choice and format", () => {
  const request = decodeRequest({
    model: "m",
    messages: [
      { role: "system", content: "Be brief." },
      {
        role: "user",
        content: [
          { type: "text", text: "Look:" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AAAA", detail: "low" } },
          { type: "image_url", image_url: { url: "https://x.test/a.jpg" } },
          {
            type: "file",
            file: { file_data: "data:application/pdf;base64,JVBE", filename: "a.pdf" },
          },
          { type: "input_audio", input_audio: { data: "UklG", format: "wav" } },
        ],
      },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c1", type: "function", function: { name: "f", arguments: '{"a":1}' } },
          { id: "c2", type: "function", function: { name: "f", arguments: "not json" } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "one" },
      { role: "tool", tool_call_id: "c2", content: [{ type: "text", text: "two" }] },
      { role: "developer", content: "Later note." },
    ],
    tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }],
    tool_choice: { type: "function", function: { name: "f" } },
    response_format: {
      type: "json_schema",
      json_schema: { name: "n", schema: { type: "object" } },
    },
    max_tokens: 50,
    stop: "END",
    reasoning_effort: "low",
  }, {});
  assert.deepEqual(request.system, [{ type: "text", text: "Be brief." }]);
  assert.equal(request.messages.length, 4);
  const user = request.messages[0];
  assert.equal(user.role, "user");
  assert.deepEqual(user.content.map((p) => p.type === "file" ? p.mediaType : p.type), [
    "text",
    "image/png",
    "image/*",
    "application/pdf",
    "audio/wav",
  ]);
  const assistant = request.messages[1];
  assert.equal(assistant.role, "assistant");
  assert.deepEqual(
    assistant.content.map((p) => p.type === "tool-call" ? p.input : null),
    [{ a: 1 }, { _raw: "not json" }],
  );
  assert.equal(request.messages[2].role, "tool");
  assert.equal(request.messages[2].content.length, 2, "consecutive results are one turn");
  assert.equal(request.messages[3].role, "system", "a later system message stays in place");
  assert.deepEqual(request.toolChoice, { type: "tool", name: "f" });
  assert.deepEqual(request.responseFormat, { type: "json", schema: { type: "object" }, name: "n" });
  assert.equal(request.maxOutputTokens, 50);
  assert.deepEqual(request.stop, ["END"]);
  assert.deepEqual(request.reasoning, { effort: "low" });
});

Deno.test("chat requests the target cannot take are 400s naming the field", () => {
  for (
    const [body, field] of [
      [
        { messages: [{ role: "user", content: [{ type: "file", file: { file_id: "f" } }] }] },
        "messages[0].content[0].file.file_id",
      ],
      [{ messages: [], logprobs: true }, "logprobs"],
      [{ messages: [{ role: "robot", content: "x" }] }, "messages[0].role"],
      [{ messages: [], tools: [{ type: "web" }] }, "tools[0].type"],
    ] as const
  ) {
    assert.throws(
      () => decodeRequest(body, {}),
      (e: GatewayError) => e.status === 400 && e.options.param === field,
    );
  }
});

function canonical(extra: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return {
    system: [{ type: "text", text: "S" }],
    messages: [
      { role: "user", content: [{ type: "text", text: "hi" }] },
      {
        role: "assistant",
        content: [
          {
            type: "reasoning",
            text: "thought",
            opaque: { provider: "anthropic", kind: "thinking-signature", value: "sig" },
          },
          { type: "tool-call", id: "toolu_1", name: "f", input: { a: 1 } },
        ],
      },
      {
        role: "tool",
        content: [{
          type: "tool-result",
          id: "toolu_1",
          content: [{ type: "text", text: "bad" }],
          isError: true,
        }],
      },
    ],
    tools: [{ name: "f", parameters: { type: "object" } }],
    hostedTools: [],
    stream: true,
    maxOutputTokens: 100,
    fields: { messages: "messages", tools: "tools" },
    ...extra,
  };
}

Deno.test("encoding for a chat upstream: cap field by family, usage always asked, reasoning never sent", () => {
  const body = encodeRequest(canonical(), local);
  assert.equal(body.max_tokens, 100);
  assert.equal(body.max_completion_tokens, undefined);
  assert.deepEqual(body.stream_options, { include_usage: true });
  assert.deepEqual(body.messages, [
    { role: "system", content: "S" },
    { role: "user", content: "hi" },
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "toolu_1",
        type: "function",
        function: { name: "f", arguments: '{"a":1}' },
      }],
    },
    { role: "tool", tool_call_id: "toolu_1", content: "Error: bad" },
  ]);
  const openai = encodeRequest(canonical(), { ...local, family: "openai" });
  assert.equal(openai.max_completion_tokens, 100);
  assert.throws(
    () =>
      encodeRequest(
        canonical({ hostedTools: [{ type: "web_search", field: "tools[1].type" }] }),
        local,
      ),
    (e: GatewayError) =>
      e.status === 400 && e.options.param === "tools[1].type" && /chat completions/.test(e.message),
  );
  assert.throws(
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
    (e: GatewayError) => e.options.param === "generationConfig.candidateCount",
  );
});

Deno.test("answers: prompt_tokens include cached tokens; length wins over tool calls", () => {
  const answer = decodeResponse({
    id: "x",
    model: "m",
    choices: [{
      message: {
        role: "assistant",
        content: "partial",
        reasoning_content: "why",
        tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: '{"a":' } }],
      },
      finish_reason: "length",
    }],
    usage: {
      prompt_tokens: 100,
      completion_tokens: 20,
      prompt_tokens_details: { cached_tokens: 60 },
      completion_tokens_details: { reasoning_tokens: 5 },
    },
  }, "local");
  assert.deepEqual(answer.usage, {
    input: 100,
    cacheRead: 60,
    cacheWrite: 0,
    output: 20,
    reasoning: 5,
  });
  assert.equal(answer.finish.reason, "length");
  assert.deepEqual(answer.content.map((p) => p.type), ["reasoning", "text", "tool-call"]);
  const client = encodeResponse(answer, INFO) as Record<string, any>;
  assert.equal(client.choices[0].finish_reason, "length");
  assert.deepEqual(client.usage, {
    prompt_tokens: 100,
    completion_tokens: 20,
    total_tokens: 120,
    prompt_tokens_details: { cached_tokens: 60 },
    completion_tokens_details: { reasoning_tokens: 5 },
  });
  // Arguments that were not JSON go back exactly as they came.
  assert.equal(client.choices[0].message.tool_calls[0].function.arguments, '{"a":');
});

Deno.test("the recorded tool-call stream decodes identically at every byte split", () => {
  const recorded = transcript("chat-tool-call-stream-usage.json").response.body_text as string;
  const events = decodeEverySplit((emit) => chatDecoder(emit, "openai"), recorded);
  assert.equal(events[0].type, "start");
  const start = events.find((e) => e.type === "tool-input-start");
  assert.ok(start && start.type === "tool-input-start" && start.name === "get_capital");
  const args = events.flatMap((e) => e.type === "tool-input-delta" ? [e.delta] : []).join("");
  assert.deepEqual(JSON.parse(args), { country: "UK" });
  const finish = events.at(-1)!;
  assert.ok(finish.type === "finish" && finish.reason === "tool-calls" && finish.usage!.input > 0);
});

Deno.test("parallel calls keep their own indexes, by index not by id", () => {
  const text = [
    {
      choices: [{
        index: 0,
        delta: {
          role: "assistant",
          tool_calls: [{
            index: 0,
            id: "a",
            type: "function",
            function: { name: "f", arguments: "" },
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
            id: "b",
            type: "function",
            function: { name: "g", arguments: '{"y"' },
          }],
        },
      }],
    },
    {
      choices: [{
        index: 0,
        delta: { tool_calls: [{ index: 0, function: { arguments: '{"x":1}' } }] },
      }],
    },
    {
      choices: [{
        index: 0,
        delta: { tool_calls: [{ index: 1, function: { arguments: ":2}" } }] },
      }],
    },
    { choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
    { choices: [], usage: { prompt_tokens: 5, completion_tokens: 7 } },
  ].map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n";
  const events = decodeEverySplit((emit) => chatDecoder(emit, "local"), text);
  const args = (id: string) =>
    events.flatMap((e) => e.type === "tool-input-delta" && e.id === id ? [e.delta] : []).join("");
  assert.equal(args("a"), '{"x":1}');
  assert.equal(args("b"), '{"y":2}');
  const finish = events.at(-1)!;
  assert.ok(finish.type === "finish" && finish.usage?.output === 7);
});

Deno.test("the encoder writes chunks, the usage chunk only when asked, then [DONE]; a failure ends with an error", () => {
  const withUsage = parseSse(
    encodeAll((w) => chatEncoder(w, { ...INFO, usageChunk: true }), PARALLEL),
  );
  assert.equal(withUsage.at(-1)!.data, "[DONE]");
  const usage = withUsage.at(-2)!.data as Record<string, any>;
  assert.deepEqual(usage.choices, []);
  assert.equal(usage.usage.prompt_tokens, 100);
  const plain = parseSse(encodeAll((w) => chatEncoder(w, INFO), PARALLEL));
  assert.ok(plain.every((e) => e.data === "[DONE]" || !(e.data as any).usage));
  const chunks = plain.slice(0, -1).map((e) => e.data as Record<string, any>);
  const args = (index: number) =>
    chunks.flatMap((c) =>
      (c.choices[0]?.delta.tool_calls ?? []).filter((t: any) => t.index === index)
    )
      .map((t: any) => t.function.arguments).join("");
  assert.equal(args(0), '{"city":"Paris"}');
  assert.equal(args(1), '{"zone":"UTC"}');
  assert.equal(chunks.at(-1)!.choices[0].finish_reason, "tool_calls");
  const failed = parseSse(encodeAll((w) => chatEncoder(w, INFO), PARALLEL.slice(0, 3), "cut"));
  assert.deepEqual((failed.at(-1)!.data as any).error.message, "cut");
});
