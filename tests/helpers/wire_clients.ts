/**
 * Minimal clients of the four text protocols, written from the protocol files, for tests that
 * drive every client route the same way: one function tool offered, a call made, its result sent
 * back. Each reads answers — JSON or its own stream grammar — into one shape, checking the
 * grammar as it goes.
 */
import assert from "node:assert/strict";
import { sseEvents } from "./http.ts";

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

/** What a client made of an answer. */
export interface Answer {
  text: string;
  calls: { id: string; name: string; args: Json }[];
  /** Usage as the client's protocol reports it, in canonical terms. */
  usage: { input: number; cacheRead: number; cacheWrite: number; output: number };
  /** `stop` | `length` | `tool-calls` | other raw values. */
  finish: string;
  /** The answer's raw items/blocks/parts, as the client replays them. */
  replay: unknown;
  /** The answer id, when the protocol has one. */
  id?: string;
}

export interface WireClient {
  name: string;
  path(model: string, stream: boolean): string;
  headers(key: string): Record<string, string>;
  /** The first request: a question and one function tool. */
  first(model: string, prompt: string, stream: boolean): Json;
  /** The second request: the history, the call answered with `result`. */
  second(model: string, prompt: string, stream: boolean, answer: Answer, result: string): Json;
  read(body: string, stream: boolean): Answer;
}

export const WEATHER = {
  name: "get_weather",
  description: "The weather in a city.",
  parameters: {
    type: "object",
    properties: { city: { type: "string", description: "The city." } },
    required: ["city"],
    additionalProperties: false,
  },
};

// ---------------------------------------------------------------------------------------------

function responsesAnswer(response: Json): Answer {
  const calls: Answer["calls"] = [];
  let text = "";
  for (const item of response.output ?? []) {
    if (item.type === "function_call") {
      calls.push({ id: item.call_id, name: item.name, args: JSON.parse(item.arguments) });
    }
    if (item.type === "message") {
      for (const part of item.content) if (part.type === "output_text") text += part.text;
    }
  }
  const u = response.usage ?? {};
  return {
    id: response.id,
    text,
    calls,
    usage: {
      input: u.input_tokens,
      cacheRead: u.input_tokens_details?.cached_tokens ?? 0,
      cacheWrite: 0,
      output: u.output_tokens,
    },
    finish: response.status === "incomplete" ? "length" : calls.length ? "tool-calls" : "stop",
    replay: response.output,
  };
}

export const responsesClient: WireClient = {
  name: "responses",
  path: () => "/v1/responses",
  headers: (key) => ({ authorization: `Bearer ${key}` }),
  first: (model, prompt, stream) => ({
    model,
    input: [{ role: "user", content: prompt }],
    tools: [{ type: "function", ...WEATHER, strict: true }],
    stream,
  }),
  second: (model, prompt, stream, answer, result) => ({
    model,
    input: [
      { role: "user", content: prompt },
      ...(answer.replay as Json[]),
      { type: "function_call_output", call_id: answer.calls[0].id, output: result },
    ],
    tools: [{ type: "function", ...WEATHER, strict: true }],
    stream,
  }),
  read(body, stream) {
    if (!stream) return responsesAnswer(JSON.parse(body));
    const events = sseEvents(body);
    let sequence = -1;
    const args = new Map<string, string>();
    for (const { event, data } of events) {
      const e = data as Json;
      assert.equal(event, e.type, "the event line names the payload's type");
      assert.ok(e.sequence_number > sequence, `sequence numbers increase (${e.type})`);
      sequence = e.sequence_number;
      if (e.type === "response.function_call_arguments.delta") {
        args.set(e.item_id, (args.get(e.item_id) ?? "") + e.delta);
      }
    }
    assert.equal(events[0].event, "response.created");
    const last = events.at(-1)!.data as Json;
    assert.match(last.type, /^response\.(completed|incomplete)$/);
    assert.equal(last.response.id, (events[0].data as Json).response.id, "one id throughout");
    for (const item of last.response.output) {
      if (item.type === "function_call") {
        assert.equal(args.get(item.id), item.arguments, "the deltas make the arguments");
      }
    }
    return responsesAnswer(last.response);
  },
};

// ---------------------------------------------------------------------------------------------

function messagesAnswer(message: Json): Answer {
  const calls: Answer["calls"] = [];
  let text = "";
  for (const block of message.content) {
    if (block.type === "tool_use") {
      calls.push({ id: block.id, name: block.name, args: block.input });
    }
    if (block.type === "text") text += block.text;
  }
  const u = message.usage;
  const cacheRead = u.cache_read_input_tokens ?? 0;
  const cacheWrite = u.cache_creation_input_tokens ?? 0;
  return {
    id: message.id,
    text,
    calls,
    usage: {
      input: u.input_tokens + cacheRead + cacheWrite,
      cacheRead,
      cacheWrite,
      output: u.output_tokens,
    },
    finish: message.stop_reason === "tool_use"
      ? "tool-calls"
      : message.stop_reason === "max_tokens"
      ? "length"
      : message.stop_reason === "end_turn"
      ? "stop"
      : message.stop_reason,
    replay: message.content,
  };
}

export const messagesClient: WireClient = {
  name: "messages",
  path: () => "/v1/messages",
  headers: (key) => ({ "x-api-key": key, "anthropic-version": "2023-06-01" }),
  first: (model, prompt, stream) => ({
    model,
    max_tokens: 1024,
    messages: [{ role: "user", content: prompt }],
    tools: [{
      name: WEATHER.name,
      description: WEATHER.description,
      input_schema: WEATHER.parameters,
    }],
    stream,
  }),
  second: (model, prompt, stream, answer, result) => ({
    model,
    max_tokens: 1024,
    messages: [
      { role: "user", content: prompt },
      { role: "assistant", content: answer.replay },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: answer.calls[0].id, content: result }],
      },
    ],
    tools: [{
      name: WEATHER.name,
      description: WEATHER.description,
      input_schema: WEATHER.parameters,
    }],
    stream,
  }),
  read(body, stream) {
    if (!stream) return messagesAnswer(JSON.parse(body));
    const events = sseEvents(body);
    assert.equal(events[0].event, "message_start");
    const message = structuredClone((events[0].data as Json).message);
    const partial = new Map<number, string>();
    let open = -1;
    for (const { event, data } of events.slice(1)) {
      const e = data as Json;
      assert.equal(event, e.type);
      if (e.type === "content_block_start") {
        assert.equal(open, -1, "blocks never interleave");
        open = e.index;
        assert.equal(e.index, message.content.length, "block indexes count up");
        message.content.push(structuredClone(e.content_block));
      } else if (e.type === "content_block_delta") {
        assert.equal(e.index, open);
        const block = message.content[e.index];
        if (e.delta.type === "text_delta") block.text += e.delta.text;
        if (e.delta.type === "thinking_delta") block.thinking += e.delta.thinking;
        if (e.delta.type === "signature_delta") block.signature = e.delta.signature;
        if (e.delta.type === "input_json_delta") {
          partial.set(e.index, (partial.get(e.index) ?? "") + e.delta.partial_json);
        }
      } else if (e.type === "content_block_stop") {
        assert.equal(e.index, open);
        const block = message.content[e.index];
        if (block.type === "tool_use") block.input = JSON.parse(partial.get(e.index) || "{}");
        if (block.type === "text") assert.ok(block.text.length > 0, "no empty text block");
        open = -1;
      } else if (e.type === "message_delta") {
        message.stop_reason = e.delta.stop_reason;
        message.usage = { ...message.usage, ...e.usage };
      }
    }
    assert.equal(events.at(-1)!.event, "message_stop");
    return messagesAnswer(message);
  },
};

// ---------------------------------------------------------------------------------------------

function generateAnswer(chunks: Json[]): Answer {
  const parts: Json[] = [];
  let finish = "";
  let usage: Json = {};
  for (const chunk of chunks) {
    const candidate = chunk.candidates?.[0];
    for (const part of candidate?.content?.parts ?? []) parts.push(part);
    if (candidate?.finishReason) finish = candidate.finishReason;
    if (chunk.usageMetadata) usage = chunk.usageMetadata;
  }
  const calls: Answer["calls"] = [];
  let text = "";
  for (const part of parts) {
    if (part.functionCall) {
      calls.push({
        id: part.functionCall.id,
        name: part.functionCall.name,
        args: part.functionCall.args,
      });
    } else if (typeof part.text === "string" && !part.thought) text += part.text;
  }
  return {
    text,
    calls,
    usage: {
      input: usage.promptTokenCount ?? 0,
      cacheRead: usage.cachedContentTokenCount ?? 0,
      cacheWrite: 0,
      output: (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0),
    },
    finish: finish === "MAX_TOKENS"
      ? "length"
      : calls.length
      ? "tool-calls"
      : finish === "STOP"
      ? "stop"
      : finish,
    // Text fragments are replayed as one part, as the SDKs do.
    replay: parts.filter((p) => !(p.text === "" && !p.thoughtSignature)),
  };
}

function generateClient(name: string, sse: boolean): WireClient {
  const tools = [{
    functionDeclarations: [{
      name: WEATHER.name,
      description: WEATHER.description,
      parametersJsonSchema: WEATHER.parameters,
    }],
  }];
  return {
    name,
    path: (model, stream) =>
      `/v1beta/models/${model}:${stream ? "streamGenerateContent" : "generateContent"}${
        stream && sse ? "?alt=sse" : ""
      }`,
    headers: (key) => ({ "x-goog-api-key": key }),
    first: (_model, prompt) => ({ contents: [{ role: "user", parts: [{ text: prompt }] }], tools }),
    second: (_model, prompt, _stream, answer, result) => ({
      contents: [
        { role: "user", parts: [{ text: prompt }] },
        { role: "model", parts: answer.replay },
        {
          role: "user",
          parts: [{
            functionResponse: {
              ...(answer.calls[0].id ? { id: answer.calls[0].id } : {}),
              name: answer.calls[0].name,
              response: { result },
            },
          }],
        },
      ],
      tools,
    }),
    read(body, stream) {
      if (!stream) return generateAnswer([JSON.parse(body)]);
      if (!sse) {
        const array = JSON.parse(body);
        assert.ok(Array.isArray(array), "the stream is one JSON array");
        return generateAnswer(array);
      }
      const events = sseEvents(body);
      for (const { event } of events) assert.equal(event, "", "no event lines");
      return generateAnswer(events.map((e) => e.data as Json));
    },
  };
}

export const generateSseClient = generateClient("generate-sse", true);
export const generateArrayClient = generateClient("generate-array", false);

// ---------------------------------------------------------------------------------------------

function chatAnswer(completion: Json): Answer {
  const message = completion.choices[0].message;
  const calls = (message.tool_calls ?? []).map((c: Json) => ({
    id: c.id,
    name: c.function.name,
    args: JSON.parse(c.function.arguments),
  }));
  const u = completion.usage;
  return {
    id: completion.id,
    text: message.content ?? "",
    calls,
    usage: {
      input: u.prompt_tokens,
      cacheRead: u.prompt_tokens_details?.cached_tokens ?? 0,
      cacheWrite: 0,
      output: u.completion_tokens,
    },
    finish: completion.choices[0].finish_reason === "tool_calls"
      ? "tool-calls"
      : completion.choices[0].finish_reason,
    replay: message,
  };
}

export const chatClient: WireClient = {
  name: "chat",
  path: () => "/v1/chat/completions",
  headers: (key) => ({ authorization: `Bearer ${key}` }),
  first: (model, prompt, stream) => ({
    model,
    messages: [{ role: "user", content: prompt }],
    tools: [{ type: "function", function: WEATHER }],
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
  }),
  second: (model, prompt, stream, answer, result) => {
    const replay = answer.replay as Json;
    return {
      model,
      messages: [
        { role: "user", content: prompt },
        { role: "assistant", content: replay.content ?? null, tool_calls: replay.tool_calls },
        { role: "tool", tool_call_id: answer.calls[0].id, content: result },
      ],
      tools: [{ type: "function", function: WEATHER }],
      stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
    };
  },
  read(body, stream) {
    if (!stream) return chatAnswer(JSON.parse(body));
    const events = sseEvents(body);
    assert.equal(events.at(-1)!.data, "[DONE]");
    const chunks = events.slice(0, -1).map((e) => e.data as Json);
    const calls: Json[] = [];
    let content = "";
    let finish: string | null = null;
    let usage: Json | undefined;
    for (const chunk of chunks) {
      assert.equal(chunk.object, "chat.completion.chunk");
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices) {
        if (choice.delta?.content) content += choice.delta.content;
        for (const call of choice.delta?.tool_calls ?? []) {
          const at = calls[call.index] ??= {
            id: call.id,
            type: "function",
            function: { name: call.function?.name, arguments: "" },
          };
          at.function.arguments += call.function?.arguments ?? "";
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
    }
    assert.ok(usage, "the usage chunk asked for came");
    return chatAnswer({
      id: chunks[0].id,
      choices: [{
        message: {
          role: "assistant",
          content: content || null,
          ...(calls.length ? { tool_calls: calls } : {}),
        },
        finish_reason: finish,
      }],
      usage,
    });
  },
};

export const WIRE_CLIENTS: WireClient[] = [
  responsesClient,
  messagesClient,
  generateSseClient,
  generateArrayClient,
  chatClient,
];
