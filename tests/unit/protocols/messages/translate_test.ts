/** Messages ⇄ canonical converters, pure: requests, answers and streams (fed at every byte split). */
import assert from "node:assert/strict";
import { decodeRequest } from "../../../../src/protocols/messages/decode_request.ts";
import { encodeRequest } from "../../../../src/protocols/messages/encode_request.ts";
import { decodeResponse } from "../../../../src/protocols/messages/decode_response.ts";
import { encodeResponse } from "../../../../src/protocols/messages/encode_response.ts";
import { messagesDecoder, messagesEncoder } from "../../../../src/protocols/messages/stream.ts";
import { generateDecoder } from "../../../../src/protocols/generate/stream.ts";
import { responsesDecoder } from "../../../../src/protocols/responses/stream.ts";
import { chatDecoder } from "../../../../src/protocols/chat/stream.ts";
import { SseScanner } from "../../../../src/http/sse.ts";
import { GatewayError } from "../../../../src/http/errors.ts";
import type { CanonicalEvent, CanonicalRequest } from "../../../../src/translate/ir.ts";
import type { AnswerInfo, StreamDecoder } from "../../../../src/translate/codec.ts";
import { fromToken, toToken } from "../../../../src/translate/opaque.ts";

const TRANSCRIPTS = new URL("../../../fixtures/transcripts/anthropic/", import.meta.url);
const transcript = (name: string) => JSON.parse(Deno.readTextFileSync(new URL(name, TRANSCRIPTS)));

const info: AnswerInfo = { id: "msg_test", model: "m", created: 1, token: toToken };
const target = { model: "claude-x", provider: "anthropic", family: "anthropic" as const };

/** Canonical events of an SSE text fed to the decoder in two chunks split at `at`. */
function decodeSplit(text: string, at: number): CanonicalEvent[] {
  const events: CanonicalEvent[] = [];
  const decoder = messagesDecoder((e) => events.push(e), "anthropic");
  const scanner = new SseScanner((e) => decoder.push(e));
  const bytes = new TextEncoder().encode(text);
  scanner.push(bytes.subarray(0, at));
  scanner.push(bytes.subarray(at));
  scanner.end();
  decoder.end();
  return events;
}

/** The SSE events an encoder writes for `events`, parsed. */
function encode(
  events: CanonicalEvent[],
  answer: AnswerInfo = info,
): { event: string; data: Record<string, unknown> }[] {
  let out = "";
  const encoder = messagesEncoder((t) => out += t, answer);
  for (const e of events) encoder.push(e);
  const parsed: { event: string; data: Record<string, unknown> }[] = [];
  new SseScanner((e) => parsed.push({ event: e.event, data: JSON.parse(e.data()) })).push(
    new TextEncoder().encode(out),
  );
  return parsed;
}

Deno.test("a recorded tool-use request decodes to tools, choice and a user message", () => {
  const body = transcript("messages-tool-use.json").request.body;
  const request = decodeRequest(body, {});
  assert.deepEqual(request.messages, [{
    role: "user",
    content: [{ type: "text", text: "What's the weather in Paris?" }],
  }]);
  assert.equal(request.tools[0].name, "get_weather");
  assert.deepEqual(request.tools[0].parameters.required, ["city"]);
  assert.deepEqual(request.toolChoice, { type: "auto" });
  assert.equal(request.maxOutputTokens, 4096);
  assert.equal(request.stream, false);
});

Deno.test("tool results lead the next user turn; system and thinking handled", () => {
  const request = decodeRequest({
    system: [{ type: "text", text: "Be terse." }],
    max_tokens: 100,
    thinking: { type: "enabled", budget_tokens: 2000 },
    messages: [
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "hmm", signature: "sig-native" },
          { type: "tool_use", id: "toolu_1", name: "f", input: { a: 1 } },
          { type: "tool_use", id: "toolu_2", name: "g", input: {} },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: "one" },
          {
            type: "tool_result",
            tool_use_id: "toolu_2",
            content: [{ type: "text", text: "two" }],
            is_error: true,
          },
          { type: "text", text: "and?" },
        ],
      },
    ],
  }, {});
  assert.deepEqual(request.system, [{ type: "text", text: "Be terse." }]);
  assert.equal(request.messages[1].role, "assistant");
  const reasoning = request.messages[1].content[0];
  assert.deepEqual(reasoning, {
    type: "reasoning",
    text: "hmm",
    opaque: { provider: "", kind: "thinking-signature", value: "sig-native" },
  });
  assert.deepEqual(request.messages[2], {
    role: "tool",
    content: [
      { type: "tool-result", id: "toolu_1", content: [{ type: "text", text: "one" }] },
      {
        type: "tool-result",
        id: "toolu_2",
        content: [{ type: "text", text: "two" }],
        isError: true,
      },
    ],
  });
  assert.deepEqual(request.messages[3], {
    role: "user",
    content: [{ type: "text", text: "and?" }],
  });
  assert.deepEqual(request.reasoning, { budgetTokens: 2000, effort: "low", visible: true });
});

Deno.test("wrong types are 400s naming the field", () => {
  for (
    const [body, param] of [
      [
        { messages: [{ role: "user", content: [{ type: "image", source: "x" }] }] },
        "messages[0].content[0].source",
      ],
      [
        { messages: [{ role: "assistant", content: [{ type: "tool_use", id: 5, name: "f" }] }] },
        "messages[0].content[0].id",
      ],
      [{ messages: [], tools: [{ name: 1 }] }, "tools[0].name"],
      [{ messages: [], container: "c" }, "container"],
    ] as const
  ) {
    assert.throws(() => decodeRequest(body as Record<string, unknown>, {}), (error) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.status, 400);
      assert.equal(error.options.param, param);
      return true;
    });
  }
});

function canonical(overrides: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return {
    system: [],
    messages: [],
    tools: [],
    hostedTools: [],
    stream: false,
    fields: { messages: "input", tools: "tools" },
    ...overrides,
  };
}

Deno.test("encoding merges turns, puts results first and never sends foreign signatures", () => {
  const body = encodeRequest(
    canonical({
      system: [{ type: "text", text: "A" }],
      maxOutputTokens: 4000,
      reasoning: { effort: "low" },
      messages: [
        { role: "system", content: [{ type: "text", text: "B" }] },
        { role: "user", content: [{ type: "text", text: "q" }] },
        {
          role: "assistant",
          content: [
            {
              type: "reasoning",
              text: "mine",
              opaque: { provider: "anthropic", kind: "thinking-signature", value: "S1" },
            },
            {
              type: "reasoning",
              text: "theirs",
              opaque: { provider: "gemini", kind: "thought-signature", value: "G" },
            },
            { type: "text", text: "" },
            { type: "tool-call", id: "call.1", name: "f", input: { x: 1 } },
          ],
        },
        { role: "user", content: [{ type: "text", text: "more" }] },
        {
          role: "tool",
          content: [{ type: "tool-result", id: "call.1", content: [{ type: "text", text: "r" }] }],
        },
      ],
    }),
    target,
  );
  assert.equal(body.system, "A\n\nB");
  assert.equal(body.max_tokens, 4000);
  assert.deepEqual(body.thinking, { type: "enabled", budget_tokens: 2048 });
  const messages = body.messages as Record<string, unknown>[];
  assert.deepEqual(messages[1].content, [
    { type: "thinking", thinking: "mine", signature: "S1" },
    {
      type: "tool_use",
      id: "call_1_" + (messages[1].content as { id: string }[])[1].id.split("_").at(-1),
      name: "f",
      input: { x: 1 },
    },
  ]);
  const results = messages[2].content as Record<string, unknown>[];
  assert.equal(results[0].type, "tool_result");
  assert.equal(results[0].tool_use_id, (messages[1].content as { id: string }[])[1].id);
  assert.deepEqual(results[1], { type: "text", text: "more" });
});

Deno.test("one result a tool call: a repeated one is dropped, silently when it says the same, named when not", () => {
  const result = (text: string) => ({
    role: "tool" as const,
    content: [{
      type: "tool-result" as const,
      id: "c1",
      content: [{ type: "text" as const, text }],
    }],
  });
  const replayed = (again: string) =>
    canonical({
      messages: [
        { role: "user", content: [{ type: "text", text: "q" }] },
        { role: "assistant", content: [{ type: "tool-call", id: "c1", name: "f", input: {} }] },
        result("r"),
        result(again),
        { role: "user", content: [{ type: "text", text: "and?" }] },
      ],
    });
  for (const [again, named] of [["r", []], ["other", ["duplicate_result_dropped"]]] as const) {
    const kinds: string[] = [];
    const body = encodeRequest(replayed(again), target, (kind) => kinds.push(kind));
    const turn = (body.messages as { content: { type: string; content?: unknown }[] }[])[2];
    assert.deepEqual(turn.content.map((b) => b.type), ["tool_result", "text"], again);
    assert.deepEqual(turn.content[0].content, "r", "the first stands");
    assert.deepEqual(kinds, named);
  }
});

Deno.test("thinking is turned off when the tool loop's turn carries no signed thinking, or a tool is forced", () => {
  const loop = canonical({
    reasoning: { effort: "high" },
    messages: [
      { role: "user", content: [{ type: "text", text: "q" }] },
      { role: "assistant", content: [{ type: "tool-call", id: "c1", name: "f", input: {} }] },
      {
        role: "tool",
        content: [{ type: "tool-result", id: "c1", content: [{ type: "text", text: "r" }] }],
      },
    ],
  });
  assert.equal(encodeRequest(loop, target).thinking, undefined);
  const forced = canonical({
    reasoning: { effort: "high" },
    tools: [{ name: "f", parameters: { type: "object" } }],
    toolChoice: { type: "tool", name: "f" },
    messages: [{ role: "user", content: [{ type: "text", text: "q" }] }],
  });
  const body = encodeRequest(forced, target);
  assert.equal(body.thinking, undefined);
  assert.deepEqual(body.tool_choice, { type: "tool", name: "f" });
});

Deno.test("hosted web search maps to the server tool; other hosted tools are refused by name", () => {
  const body = encodeRequest(
    canonical({
      hostedTools: [{ type: "web_search", field: "tools[2]", maxUses: 3 }],
      messages: [{ role: "user", content: [{ type: "text", text: "q" }] }],
    }),
    target,
  );
  assert.deepEqual(body.tools, [{ type: "web_search_20250305", name: "web_search", max_uses: 3 }]);
  assert.throws(
    () =>
      encodeRequest(
        canonical({
          hostedTools: [{ type: "other", field: "tools[0].type", name: "code_interpreter" }],
        }),
        target,
      ),
    (e) => e instanceof GatewayError && e.status === 400 && e.options.param === "tools[0].type",
  );
});

Deno.test("answers decode with usage split by cache and encode back for a Messages client", () => {
  const body = JSON.parse(transcript("messages-tool-use.json").response.body_text);
  const answer = decodeResponse(body, "anthropic");
  assert.equal(answer.finish.reason, "tool-calls");
  assert.deepEqual(answer.usage, {
    input: 572,
    cacheRead: 0,
    cacheWrite: 0,
    output: 53,
    reasoning: 0,
  });
  assert.deepEqual(answer.content, [{
    type: "tool-call",
    id: "toolu_01WN4AuToBnJyXNQXwQBBebj",
    name: "get_weather",
    input: { city: "Paris" },
  }]);
  const cached = decodeResponse({
    content: [],
    stop_reason: "end_turn",
    usage: {
      input_tokens: 10,
      cache_read_input_tokens: 100,
      cache_creation_input_tokens: 5,
      output_tokens: 7,
    },
  }, "anthropic");
  assert.deepEqual(cached.usage, {
    input: 115,
    cacheRead: 100,
    cacheWrite: 5,
    output: 7,
    reasoning: 0,
  });
  const out = encodeResponse(cached, info);
  assert.deepEqual(out.usage, {
    input_tokens: 10,
    cache_creation_input_tokens: 5,
    cache_read_input_tokens: 100,
    output_tokens: 7,
  });
});

Deno.test("foreign opaque state reaches a Messages client as a token it replays", () => {
  const opaque = { provider: "gemini", kind: "thought-signature" as const, value: "CiQ" };
  const out = encodeResponse({
    id: "x",
    model: "m",
    content: [{ type: "tool-call", id: "call_1", name: "f", input: {}, opaque }],
    finish: { reason: "tool-calls" },
    usage: { input: 1, cacheRead: 0, cacheWrite: 0, output: 1, reasoning: 0 },
  }, info);
  const blocks = out.content as Record<string, unknown>[];
  assert.equal(blocks[0].type, "thinking");
  assert.deepEqual(fromToken(blocks[0].signature)?.opaque, opaque);
  assert.equal(out.stop_reason, "tool_use");
  // Replayed by the client, it comes back as the provider's own state, on the call again.
  const request = decodeRequest({ messages: [{ role: "assistant", content: blocks }] }, {});
  assert.deepEqual(request.messages[0].content, [
    { type: "tool-call", id: "call_1", name: "f", input: {}, opaque },
  ]);
});

Deno.test("the recorded stream decodes identically at every byte split", () => {
  const text = transcript("messages-text-stream.json").response.body_text as string;
  const whole = decodeSplit(text, 0);
  assert.deepEqual(whole.map((e) => e.type), [
    "start",
    "text-start",
    "text-delta",
    "text-end",
    "usage",
    "finish",
  ]);
  assert.deepEqual(whole.at(-1), {
    type: "finish",
    reason: "stop",
    raw: "end_turn",
    usage: { input: 20, cacheRead: 0, cacheWrite: 0, output: 5, reasoning: 0 },
  });
  const length = new TextEncoder().encode(text).length;
  for (let at = 1; at < length; at++) assert.deepEqual(decodeSplit(text, at), whole, `split ${at}`);
});

Deno.test("the encoder writes the exact grammar and never interleaves blocks", () => {
  const written = encode([
    { type: "start", usage: { input: 12 } },
    { type: "text-start", id: "t" },
    { type: "tool-input-start", id: "c1", name: "f" },
    { type: "tool-input-start", id: "c2", name: "g" },
    { type: "tool-input-delta", id: "c2", delta: '{"b":' },
    { type: "text-delta", id: "t", delta: "Hi" },
    { type: "text-end", id: "t" },
    { type: "tool-input-delta", id: "c1", delta: '{"a":1}' },
    { type: "tool-input-delta", id: "c2", delta: "2}" },
    { type: "tool-input-end", id: "c1" },
    { type: "tool-input-end", id: "c2" },
    {
      type: "finish",
      reason: "tool-calls",
      usage: { input: 12, cacheRead: 0, cacheWrite: 0, output: 9, reasoning: 0 },
    },
  ]);
  assert.deepEqual(written.map((e) => e.event), [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
  ]);
  assert.deepEqual(written[4].data.content_block, {
    type: "tool_use",
    id: "c1",
    name: "f",
    input: {},
  });
  assert.deepEqual(written.slice(7, 10).map((e) => e.data.index), [2, 2, 2]);
  assert.deepEqual(
    written.slice(8, 10).map((e) => (e.data.delta as { partial_json: string }).partial_json),
    ['{"b":', "2}"],
  );
  assert.deepEqual(written[11].data, {
    type: "message_delta",
    delta: { stop_reason: "tool_use", stop_sequence: null },
    usage: {
      input_tokens: 12,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: 9,
    },
  });
  assert.equal(
    ((written[0].data.message as Record<string, unknown>).usage as Record<string, number>)
      .input_tokens,
    12,
  );
});

Deno.test("no empty text block is written, and a failure ends with the error event", () => {
  const written = encode([
    { type: "start" },
    { type: "text-start", id: "t" },
    { type: "text-end", id: "t" },
    { type: "error", message: "boom" },
  ]);
  assert.deepEqual(written.map((e) => e.event), ["message_start", "error"]);
  assert.deepEqual(written[1].data, {
    type: "error",
    error: { type: "api_error", message: "boom" },
  });
});

/** The canonical events of an upstream's SSE text, decoded by `decoder`. */
function decoded(
  decoder: (emit: (e: CanonicalEvent) => void, provider: string) => StreamDecoder,
  sse: string,
): CanonicalEvent[] {
  const events: CanonicalEvent[] = [];
  const d = decoder((e) => events.push(e), "up");
  const scanner = new SseScanner((e) => d.push(e));
  scanner.push(new TextEncoder().encode(sse));
  scanner.end();
  d.end();
  return events;
}

const dataOf = (chunks: unknown[]) => chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("");

Deno.test("message_start carries the input the upstream's first event counted, else the gateway's estimate; message_delta the final counts", () => {
  const estimated: AnswerInfo = { ...info, inputEstimate: 42 };
  const usageAt = (written: ReturnType<typeof encode>) => ({
    start: (written[0].data.message as Record<string, unknown>).usage,
    delta: written.find((e) => e.event === "message_delta")!.data.usage,
  });

  // Gemini counts the prompt on its first fragment: message_start shows that count.
  const gemini = decoded(
    generateDecoder,
    dataOf([
      {
        candidates: [{ content: { role: "model", parts: [{ text: "Hi" }] }, index: 0 }],
        usageMetadata: { promptTokenCount: 30, cachedContentTokenCount: 10, totalTokenCount: 30 },
        responseId: "r",
      },
      {
        candidates: [{
          content: { role: "model", parts: [{ text: " there" }] },
          finishReason: "STOP",
          index: 0,
        }],
        usageMetadata: {
          promptTokenCount: 31,
          cachedContentTokenCount: 10,
          candidatesTokenCount: 2,
          totalTokenCount: 33,
        },
        responseId: "r",
      },
    ]),
  );
  assert.equal(encode(gemini, estimated)[0].event, "message_start");
  assert.deepEqual(usageAt(encode(gemini, estimated)), {
    start: {
      input_tokens: 20,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 10,
      output_tokens: 0,
    },
    delta: {
      input_tokens: 21,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 10,
      output_tokens: 2,
    },
  });

  // Responses counts nothing at response.created (usage null), chat nothing before its last
  // chunk: message_start shows the estimate, message_delta the upstream's count, input included.
  const responses = decoded(
    responsesDecoder,
    [
      ["response.created", { response: { id: "resp_1", status: "in_progress", usage: null } }],
      ["response.output_item.added", {
        output_index: 0,
        item: { type: "message", id: "m1", role: "assistant", content: [] },
      }],
      ["response.output_text.delta", {
        item_id: "m1",
        output_index: 0,
        content_index: 0,
        delta: "Hi",
      }],
      ["response.completed", {
        response: {
          id: "resp_1",
          status: "completed",
          output: [{
            type: "message",
            id: "m1",
            role: "assistant",
            content: [{ type: "output_text", text: "Hi" }],
          }],
          usage: { input_tokens: 37, output_tokens: 1, input_tokens_details: { cached_tokens: 0 } },
        },
      }],
    ].map(([event, data]) =>
      `event: ${event}\ndata: ${JSON.stringify({ type: event, ...data as object })}\n\n`
    ).join(""),
  );
  const chat = decoded(
    chatDecoder,
    dataOf([
      {
        id: "c",
        choices: [{ index: 0, delta: { role: "assistant", content: "Hi" } }],
        usage: null,
      },
      { id: "c", choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: null },
      { id: "c", choices: [], usage: { prompt_tokens: 37, completion_tokens: 1 } },
    ]) + "data: [DONE]\n\n",
  );
  for (const events of [responses, chat]) {
    const { start, delta } = usageAt(encode(events, estimated));
    assert.equal((start as Record<string, number>).input_tokens, 42);
    assert.equal((start as Record<string, number>).output_tokens, 0);
    assert.equal((delta as Record<string, number>).input_tokens, 37);
    assert.equal((delta as Record<string, number>).output_tokens, 1);
  }

  // A chat server that counts on every chunk: its first count is shown.
  const counting = decoded(
    chatDecoder,
    dataOf([
      {
        id: "c",
        choices: [{ index: 0, delta: { content: "Hi" } }],
        usage: { prompt_tokens: 35, completion_tokens: 1 },
      },
      {
        id: "c",
        choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
        usage: { prompt_tokens: 35, completion_tokens: 1 },
      },
    ]) + "data: [DONE]\n\n",
  );
  assert.equal(
    (usageAt(encode(counting, estimated)).start as Record<string, number>).input_tokens,
    35,
  );
  // No estimate given (a stream encoded outside a call): 0, as before anything is counted.
  assert.equal((usageAt(encode(chat)).start as Record<string, number>).input_tokens, 0);
});
