/**
 * The provider emulator on its own, over HTTP: the keyless openai-compatible route, structured
 * output, the tool-call directives (`tool=`, `parallel=`, `arg.K=V`) in all four text families as
 * JSON and as streams, reasoning artefacts it can verify (Anthropic thinking and redacted
 * thinking, Responses `encrypted_content`, Gemini 3 thought signatures), the history checks
 * of the real APIs, each in its family's error envelope, and Gemini's embedding shapes.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { startEmulator } from "../src/emulator/server.ts";
import {
  anthropic,
  bearer as bearerOf,
  goog as googOf,
  postJson,
  sseEvents,
} from "./helpers/http.ts";

const KEY = "upstream-secret-1234";
const emulator = startEmulator({ requiredKey: KEY });
const base = `http://127.0.0.1:${emulator.addr.port}`;
Deno.test.afterAll(() => emulator.shutdown());

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  postJson(base, path, headers, body);

const bearer = bearerOf(KEY);
const xApiKey = anthropic(KEY);
const goog = googOf(KEY);

const WEATHER = {
  name: "get_weather",
  description: "The weather in a city.",
  parameters: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false,
  },
};
const READ = {
  name: "Read",
  description: "Reads a file.",
  parameters: {
    type: "object",
    properties: { file_path: { type: "string" }, limit: { type: "integer", minimum: 10 } },
    required: ["file_path", "limit"],
  },
};

/** What an answer said, in any family, JSON or stream. */
interface Said {
  text: string;
  calls: { id?: string; name: string; args: any }[];
  /** The answer's items/blocks/parts, for replaying it. */
  replay: any;
  usage?: any;
}

/** One text family: how to ask it, and how to read its JSON and its stream. */
interface Family {
  name: string;
  ask(prompt: string, extra: Record<string, unknown>, stream: boolean): Promise<Said>;
}

async function ok(path: string, body: unknown, headers: Record<string, string>) {
  const res = await post(path, body, headers);
  assert.equal(res.status, 200, res.text);
  return res;
}

const responses: Family = {
  name: "responses",
  async ask(prompt, extra, stream) {
    const tools = [{ type: "function", ...WEATHER }, { type: "function", ...READ }];
    const res = await ok("/openai/v1/responses", {
      model: "gpt-5.4",
      input: prompt,
      tools,
      stream,
      ...extra,
    }, bearer);
    let response = res.json;
    let text = "";
    if (stream) {
      for (const { data } of sseEvents(res.text) as any[]) {
        if (data.type === "response.output_text.delta") text += data.delta;
        if (data.type === "response.completed") response = data.response;
      }
      assert.equal(text, textOf(response));
    }
    return {
      text: textOf(response),
      calls: response.output.filter((i: any) => i.type === "function_call").map((i: any) => ({
        id: i.call_id,
        name: i.name,
        args: JSON.parse(i.arguments),
      })),
      replay: response.output,
      usage: response.usage,
    };
    function textOf(r: any) {
      return r.output.filter((i: any) => i.type === "message")
        .flatMap((i: any) => i.content.map((p: any) => p.text)).join("");
    }
  },
};

const chat: Family = {
  name: "chat",
  async ask(prompt, extra, stream) {
    const tools = [{ type: "function", function: WEATHER }, { type: "function", function: READ }];
    const res = await ok("/openai/v1/chat/completions", {
      model: "gpt-5.4",
      messages: [{ role: "user", content: prompt }],
      tools,
      stream,
      ...extra,
    }, bearer);
    if (!stream) {
      const message = res.json.choices[0].message;
      return {
        text: message.content ?? "",
        calls: (message.tool_calls ?? []).map((c: any) => ({
          id: c.id,
          name: c.function.name,
          args: JSON.parse(c.function.arguments),
        })),
        replay: message,
      };
    }
    let text = "";
    const calls: any[] = [];
    for (const { data } of sseEvents(res.text) as any[]) {
      if (data === "[DONE]") continue;
      const delta = data.choices[0]?.delta ?? {};
      if (delta.content) text += delta.content;
      for (const call of delta.tool_calls ?? []) {
        calls[call.index] ??= { id: call.id, name: call.function.name, args: "" };
        calls[call.index].args += call.function.arguments ?? "";
      }
    }
    return {
      text,
      calls: calls.map((c) => ({ ...c, args: JSON.parse(c.args) })),
      replay: null,
    };
  },
};

/** Rebuilds Messages content blocks from a stream, as the SDK does. */
function messagesContent(sse: string): any[] {
  const content: any[] = [];
  const json: string[] = [];
  for (const { data } of sseEvents(sse) as any[]) {
    if (data.type === "content_block_start") {
      content[data.index] = structuredClone(data.content_block);
      json[data.index] = "";
    }
    if (data.type === "content_block_delta") {
      const block = content[data.index];
      const d = data.delta;
      if (d.type === "text_delta") block.text += d.text;
      if (d.type === "thinking_delta") block.thinking += d.thinking;
      if (d.type === "signature_delta") block.signature = d.signature;
      if (d.type === "input_json_delta") json[data.index] += d.partial_json;
    }
    if (data.type === "content_block_stop" && content[data.index].type === "tool_use") {
      content[data.index].input = JSON.parse(json[data.index] || "{}");
    }
  }
  return content;
}

const messages: Family = {
  name: "messages",
  async ask(prompt, extra, stream) {
    const tools = [WEATHER, READ].map(({ parameters, ...t }) => ({
      ...t,
      input_schema: parameters,
    }));
    const res = await ok("/anthropic/v1/messages", {
      model: "claude-sonnet-4-5",
      max_tokens: 4096,
      messages: [{ role: "user", content: prompt }],
      tools,
      stream,
      ...extra,
    }, xApiKey);
    const content = stream ? messagesContent(res.text) : res.json.content;
    return {
      text: content.filter((b: any) => b.type === "text").map((b: any) => b.text).join(""),
      calls: content.filter((b: any) => b.type === "tool_use").map((b: any) => ({
        id: b.id,
        name: b.name,
        args: b.input,
      })),
      replay: content,
    };
  },
};

const gemini: Family = {
  name: "gemini",
  async ask(prompt, extra, stream) {
    const tools = [{
      functionDeclarations: [
        { ...WEATHER, parameters: undefined, parametersJsonSchema: WEATHER.parameters },
        READ,
      ],
    }];
    const model = "gemini-3-flash-preview";
    const path = stream ? `${model}:streamGenerateContent?alt=sse` : `${model}:generateContent`;
    const res = await ok(`/gemini/v1beta/models/${path}`, {
      contents: [{ role: "user", parts: [{ text: prompt }] }],
      tools,
      ...extra,
    }, goog);
    const chunks = stream ? sseEvents(res.text).map((e) => e.data as any) : [res.json];
    const parts = chunks.flatMap((c) => c.candidates[0].content.parts);
    return {
      text: parts.filter((p: any) => "text" in p && !p.thought).map((p: any) => p.text).join(""),
      calls: parts.filter((p: any) => p.functionCall).map((p: any) => ({
        id: p.functionCall.id,
        name: p.functionCall.name,
        args: p.functionCall.args,
      })),
      replay: parts,
      usage: chunks.at(-1).usageMetadata,
    };
  },
};

const FAMILIES = [responses, chat, messages, gemini];

// ---------------------------------------------------------------------------------------------

Deno.test("the openai-compatible route needs no key and ignores any Authorization", async () => {
  const body = { model: "llama-3.1-8b", messages: [{ role: "user", content: "Hi" }] };
  const variants: Record<string, string>[] = [
    {},
    { authorization: "Bearer whatever" },
    { authorization: "junk" },
  ];
  for (const headers of variants) {
    const res = await post("/local/v1/chat/completions", body, headers);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.object, "chat.completion");
    assert.equal(res.json.choices[0].message.content, "You said: Hi");
  }
  const stream = await post("/local/v1/chat/completions", { ...body, stream: true });
  assert.equal(sseEvents(stream.text).at(-1)!.data, "[DONE]");
  // The keyed routes still want their key.
  const keyed = await post("/openai/v1/chat/completions", { ...body, model: "gpt-5.4" });
  assert.equal(keyed.status, 401);
});

// ---------------------------------------------------------------------------------------------

const SCHEMA = {
  type: "object",
  properties: {
    city: { type: "string" },
    count: { type: "integer", minimum: 3 },
    tags: { type: "array", items: { type: "string", enum: ["a", "b"] }, minItems: 2 },
    kind: { const: "report" },
    when: { type: "string", format: "date-time" },
    note: { type: ["null", "string"] },
    owner: { $ref: "#/$defs/person" },
  },
  required: ["city", "count", "tags", "kind", "when", "note", "owner"],
  additionalProperties: false,
  $defs: {
    person: {
      type: "object",
      properties: { name: { type: "string", minLength: 8 } },
      required: ["name"],
    },
  },
};
const CONFORMING = {
  city: "Paris",
  count: 3,
  tags: ["a", "a"],
  kind: "report",
  when: "2025-01-01T00:00:00Z",
  note: "Paris",
  owner: { name: "Parisxxx" },
};

Deno.test("structured output: the answer is JSON conforming to the schema, JSON and stream", async () => {
  const asks: [Family, Record<string, unknown>][] = [
    [responses, { text: { format: { type: "json_schema", name: "r", schema: SCHEMA } } }],
    [chat, {
      response_format: { type: "json_schema", json_schema: { name: "r", schema: SCHEMA } },
    }],
    [messages, { output_config: { format: { type: "json_schema", schema: SCHEMA } } }],
    [gemini, {
      generationConfig: { responseMimeType: "application/json", responseJsonSchema: SCHEMA },
    }],
  ];
  for (const [family, extra] of asks) {
    for (const stream of [false, true]) {
      const said = await family.ask("Report please [[emulate tool=none]]", extra, stream);
      assert.deepEqual(JSON.parse(said.text), CONFORMING, `${family.name} stream=${stream}`);
    }
  }
  // Gemini's own Schema (upper-case types) too.
  const said = await gemini.ask("Pick [[emulate tool=none]]", {
    generationConfig: {
      responseMimeType: "application/json",
      responseSchema: {
        type: "OBJECT",
        properties: { n: { type: "NUMBER" }, ok: { type: "BOOLEAN" } },
        required: ["n", "ok"],
      },
    },
  }, false);
  assert.deepEqual(JSON.parse(said.text), { n: 1, ok: true });
});

Deno.test("structured output: json_object gives a small JSON object", async () => {
  for (
    const [family, extra] of [
      [responses, { text: { format: { type: "json_object" } } }],
      [chat, { response_format: { type: "json_object" } }],
      [gemini, { generationConfig: { responseMimeType: "application/json" } }],
    ] as const
  ) {
    const said = await family.ask("Say hi [[emulate tool=none]]", extra, true);
    const value = JSON.parse(said.text);
    assert.equal(typeof value, "object");
    assert.match(value.answer, /You said: Say hi/, family.name);
  }
});

// ---------------------------------------------------------------------------------------------

Deno.test("tool directives: default, tool=NAME, tool=none, parallel=2 and arg.KEY=VALUE in every family", async () => {
  for (const family of FAMILIES) {
    for (const stream of [false, true]) {
      const label = `${family.name} stream=${stream}`;
      const plain = await family.ask("Weather?", {}, stream);
      assert.deepEqual(plain.calls.map((c) => [c.name, c.args]), [["get_weather", {
        city: "Paris",
      }]], label);

      const named = await family.ask("[[emulate tool=Read arg.file_path=/tmp/x.txt]]", {}, stream);
      assert.deepEqual(
        named.calls.map((c) => [c.name, c.args]),
        [["Read", { file_path: "/tmp/x.txt", limit: 10 }]],
        label,
      );

      const none = await family.ask("Just talk [[emulate tool=none]]", {}, stream);
      assert.deepEqual(none.calls, [], label);
      assert.equal(none.text, "You said: Just talk", label);

      const two = await family.ask("Both [[emulate parallel=2]]", {}, stream);
      assert.deepEqual(two.calls.map((c) => c.name), ["get_weather", "Read"], label);

      const twice = await family.ask(
        "[[emulate tool=Read parallel=2 arg.file_path=/a]]",
        {},
        stream,
      );
      assert.deepEqual(twice.calls.map((c) => [c.name, c.args.file_path]), [
        ["Read", "/a"],
        ["Read", "/a"],
      ], label);
      if (family !== gemini) {
        assert.ok(twice.calls[0].id && twice.calls[0].id !== twice.calls[1].id, label);
      }

      const unknown = await family.ask("[[emulate tool=Write]]", {}, stream);
      assert.deepEqual(unknown.calls, [], `${label}: a tool not offered is not called`);
    }
  }
});

Deno.test("after a tool result the answer says what the tool returned", async () => {
  const prompt = "Weather?";
  // Responses
  const r = await responses.ask(prompt, {}, false);
  const r2 = await ok("/openai/v1/responses", {
    model: "gpt-5.4",
    input: [{ role: "user", content: prompt }, ...r.replay, {
      type: "function_call_output",
      call_id: r.calls[0].id,
      output: [{ type: "input_text", text: "18C and cloudy" }],
    }],
    tools: [{ type: "function", ...WEATHER }],
  }, bearer);
  assert.equal(r2.json.output.at(-1).content[0].text, "You said: the tool returned 18C and cloudy");
  // chat
  const c = await chat.ask(prompt, {}, false);
  const c2 = await ok("/openai/v1/chat/completions", {
    model: "gpt-5.4",
    messages: [{ role: "user", content: prompt }, c.replay, {
      role: "tool",
      tool_call_id: c.calls[0].id,
      content: [{ type: "text", text: "18C and cloudy" }],
    }],
  }, bearer);
  assert.equal(c2.json.choices[0].message.content, "You said: the tool returned 18C and cloudy");
  // Messages
  const m = await messages.ask(prompt, {}, false);
  const m2 = await ok("/anthropic/v1/messages", {
    model: "claude-sonnet-4-5",
    max_tokens: 100,
    messages: [{ role: "user", content: prompt }, { role: "assistant", content: m.replay }, {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: m.calls[0].id, content: "18C and cloudy" }],
    }],
  }, xApiKey);
  assert.equal(m2.json.content[0].text, "You said: the tool returned 18C and cloudy");
  // Gemini
  const g = await gemini.ask(prompt, {}, false);
  const g2 = await ok("/gemini/v1beta/models/gemini-3-flash-preview:generateContent", {
    contents: [{ role: "user", parts: [{ text: prompt }] }, { role: "model", parts: g.replay }, {
      role: "user",
      parts: [{
        functionResponse: { name: "get_weather", response: { result: "18C and cloudy" } },
      }],
    }],
  }, goog);
  assert.equal(
    g2.json.candidates[0].content.parts.map((p: any) => p.text).join(""),
    "You said: the tool returned 18C and cloudy",
  );
});

Deno.test("a forced tool_choice names the tool called", async () => {
  const r = await responses.ask("x", { tool_choice: { type: "function", name: "Read" } }, false);
  assert.deepEqual(r.calls.map((c) => c.name), ["Read"]);
  const c = await chat.ask("x", {
    tool_choice: { type: "function", function: { name: "Read" } },
  }, true);
  assert.deepEqual(c.calls.map((c) => c.name), ["Read"]);
  const m = await messages.ask("x [[emulate parallel=2]]", {
    tool_choice: { type: "tool", name: "Read", disable_parallel_tool_use: true },
  }, false);
  assert.deepEqual(m.calls.map((c) => c.name), ["Read"]);
  const g = await gemini.ask("x", {
    toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["Read"] } },
  }, false);
  assert.deepEqual(g.calls.map((c) => c.name), ["Read"]);
});

// ---------------------------------------------------------------------------------------------

const THINKING = { type: "enabled", budget_tokens: 2048 };

Deno.test("Messages: thinking signatures are verified, loops need their thinking, forced tools refuse thinking", async () => {
  for (const stream of [false, true]) {
    const first = await messages.ask("Weather?", { thinking: THINKING }, stream);
    const [thinking, use] = first.replay;
    assert.equal(thinking.type, "thinking");
    assert.ok(thinking.signature.length > 20);
    assert.equal(use.type, "tool_use");
    const history = (content: unknown[]) => [
      { role: "user", content: "Weather?" },
      { role: "assistant", content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny" }] },
    ];
    const send = (content: unknown[], extra: Record<string, unknown> = {}) =>
      post("/anthropic/v1/messages", {
        model: "claude-sonnet-4-5",
        max_tokens: 4096,
        thinking: THINKING,
        messages: history(content),
        ...extra,
      }, xApiKey);
    const good = await send(first.replay);
    assert.equal(good.status, 200, good.text);
    assert.match(good.json.content.at(-1).text, /the tool returned sunny/);

    const forged = await send([{ ...thinking, thinking: thinking.thinking + " (edited)" }, use]);
    assert.equal(forged.status, 400);
    assert.equal(forged.json.error.type, "invalid_request_error");
    assert.equal(
      forged.json.error.message,
      "messages.1.content.0: Invalid `signature` in `thinking` block",
    );

    const dropped = await send([use]);
    assert.equal(dropped.status, 400);
    assert.match(
      dropped.json.error.message,
      /^messages\.1\.content\.0\.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`\. When `thinking` is enabled, a final `assistant` message must start with a thinking block/,
    );
    // Without thinking the same history is fine.
    const off = await post("/anthropic/v1/messages", {
      model: "claude-sonnet-4-5",
      max_tokens: 4096,
      messages: history([use]),
    }, xApiKey);
    assert.equal(off.status, 200, off.text);
  }
  for (const tool_choice of [{ type: "any" }, { type: "tool", name: "Read" }]) {
    const forced = await post("/anthropic/v1/messages", {
      model: "claude-sonnet-4-5",
      max_tokens: 4096,
      thinking: THINKING,
      tool_choice,
      tools: [{ name: "Read", input_schema: READ.parameters }],
      messages: [{ role: "user", content: "x" }],
    }, xApiKey);
    assert.equal(forced.status, 400);
    assert.equal(
      forced.json.error.message,
      "Thinking may not be enabled when tool_choice forces tool use.",
    );
  }
});

Deno.test("Messages: redacted thinking ([[emulate redacted=1]]) round-trips; forged data is refused", async () => {
  for (const stream of [false, true]) {
    const first = await messages.ask(
      "Weather? [[emulate redacted=1]]",
      { thinking: THINKING },
      stream,
    );
    const [redacted, use] = first.replay;
    assert.equal(redacted.type, "redacted_thinking");
    assert.equal(typeof redacted.data, "string");
    const send = (block: unknown) =>
      post("/anthropic/v1/messages", {
        model: "claude-sonnet-4-5",
        max_tokens: 4096,
        thinking: THINKING,
        messages: [
          { role: "user", content: "Weather?" },
          { role: "assistant", content: [block, use] },
          {
            role: "user",
            content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny" }],
          },
        ],
      }, xApiKey);
    assert.equal((await send(redacted)).status, 200);
    const data = redacted.data as string;
    const flipped = data.slice(0, 8) + (data[8] === "A" ? "B" : "A") + data.slice(9);
    const forged = await send({ ...redacted, data: flipped });
    assert.equal(forged.status, 400);
    assert.equal(
      forged.json.error.message,
      "messages.1.content.0: Invalid `data` in `redacted_thinking` block",
    );
  }
});

Deno.test("Responses: a reasoning item first, encrypted_content verified on replay, reasoning tokens in usage", async () => {
  for (const stream of [false, true]) {
    const reasoning = { effort: "low", summary: "auto" };
    const first = await responses.ask("Weather?", {
      reasoning,
      include: ["reasoning.encrypted_content"],
      store: false,
    }, stream);
    const [item, call] = first.replay;
    assert.equal(item.type, "reasoning");
    assert.ok(item.id.startsWith("rs_"));
    assert.equal(item.summary[0].type, "summary_text");
    assert.ok(item.encrypted_content.length > 20);
    assert.equal(call.type, "function_call");
    assert.ok(first.usage.output_tokens_details.reasoning_tokens > 0);
    const send = (items: any[]) =>
      post("/openai/v1/responses", {
        model: "gpt-5.4",
        reasoning,
        store: false,
        input: [{ role: "user", content: "Weather?" }, ...items, {
          type: "function_call_output",
          call_id: call.call_id,
          output: "sunny",
        }],
      }, bearer);
    assert.equal((await send(first.replay)).status, 200);
    // Replayed without its id (as some clients do), it still verifies.
    const { id: _, ...anonymous } = item;
    assert.equal((await send([anonymous, call])).status, 200);
    const forged = await send([{ ...item, encrypted_content: "gAAAAB" + "x".repeat(80) }, call]);
    assert.equal(forged.status, 400);
    assert.equal(
      forged.json.error.message,
      `The encrypted content for item ${item.id} could not be verified.`,
    );
    assert.equal(forged.json.error.type, "invalid_request_error");
  }
  // No summary asked: an empty summary; no include: no encrypted_content.
  const bare = await responses.ask(
    "Hi [[emulate tool=none]]",
    { reasoning: { effort: "low" } },
    false,
  );
  assert.deepEqual(bare.replay[0].summary, []);
  assert.equal(bare.replay[0].encrypted_content, undefined);
  const none = await responses.ask("Hi [[emulate tool=none]]", {}, false);
  assert.equal(none.replay[0].type, "message");
  assert.equal(none.usage.output_tokens_details.reasoning_tokens, 0);
});

Deno.test("Gemini 3: calls carry a thought signature that must come back on the first call", async () => {
  for (const stream of [false, true]) {
    const first = await gemini.ask("Weather? [[emulate parallel=2]]", {
      generationConfig: { thinkingConfig: { includeThoughts: true } },
    }, stream);
    const thought = first.replay.find((p: any) => p.thought);
    assert.ok(thought && thought.text.length > 0);
    const calls = first.replay.filter((p: any) => p.functionCall);
    assert.equal(calls.length, 2);
    assert.ok(calls[0].thoughtSignature);
    assert.ok(first.usage.thoughtsTokenCount > 0);
    const send = (model: string, parts: any[]) =>
      post(`/gemini/v1beta/models/${model}:generateContent`, {
        contents: [{ role: "user", parts: [{ text: "Weather?" }] }, { role: "model", parts }, {
          role: "user",
          parts: calls.map((c: any) => ({
            functionResponse: { name: c.functionCall.name, response: { result: "sunny" } },
          })),
        }],
      }, goog);
    assert.equal((await send("gemini-3-flash-preview", calls)).status, 200);
    const skip = [{ ...calls[0], thoughtSignature: "skip_thought_signature_validator" }, calls[1]];
    assert.equal((await send("gemini-3-pro-preview", skip)).status, 200);

    const { thoughtSignature: _, ...unsigned } = calls[0];
    const missing = await send("gemini-3-flash-preview", [unsigned, calls[1]]);
    assert.equal(missing.status, 400);
    assert.equal(missing.json.error.status, "INVALID_ARGUMENT");
    assert.match(
      missing.json.error.message,
      /^Function call is missing a thought_signature in functionCall parts\. .*`default_api:get_weather`/,
    );
    // A signature it did not issue, or one moved onto a call with other arguments.
    const moved = {
      ...calls[0],
      functionCall: { ...calls[0].functionCall, args: { city: "Rome" } },
    };
    for (const bad of [{ ...calls[0], thoughtSignature: "CiQBforged" }, moved]) {
      const forged = await send("gemini-3-flash-preview", [bad, calls[1]]);
      assert.equal(forged.status, 400);
      assert.equal(forged.json.error.message, "Corrupted thought signature.");
    }
    // Gemini 2.x does not check.
    assert.equal((await send("gemini-2.5-flash", [unsigned, calls[1]])).status, 200);
  }
});

// ---------------------------------------------------------------------------------------------

Deno.test("Messages history checks, in Anthropic's envelope", async () => {
  const send = (messages: unknown[], extra: Record<string, unknown> = {}) =>
    post("/anthropic/v1/messages", {
      model: "claude-sonnet-4-5",
      max_tokens: 100,
      messages,
      ...extra,
    }, xApiKey);
  const use = { type: "tool_use", id: "toolu_01", name: "Read", input: {} };
  const cases: [unknown[], RegExp][] = [
    [
      [{ role: "user", content: "x" }, { role: "assistant", content: [use] }, {
        role: "user",
        content: "thanks",
      }],
      /^messages\.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01\./,
    ],
    [
      [{ role: "user", content: "x" }, { role: "assistant", content: [use] }, {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "toolu_01", content: "a" }, {
          type: "tool_result",
          tool_use_id: "toolu_99",
          content: "b",
        }],
      }],
      /^messages\.2\.content\.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_99\./,
    ],
    [
      [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_01", content: "a" }] }],
      /unexpected `tool_use_id` found in `tool_result` blocks: toolu_01/,
    ],
    [
      [{ role: "user", content: "x" }, { role: "assistant", content: [use] }, {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_01", content: "a" },
          { type: "tool_result", tool_use_id: "toolu_01", content: "a" },
        ],
      }],
      /^messages\.2\.content\.1: each tool_use must have a single result\. Found multiple `tool_result` blocks with id: toolu_01$/,
    ],
    [
      [{ role: "user", content: [{ type: "text", text: "" }] }],
      /^messages: text content blocks must be non-empty$/,
    ],
    [[{ role: "user", content: "" }], /^messages: text content blocks must be non-empty$/],
    [
      [{ role: "user", content: [{ type: "text", text: "  " }] }],
      /^messages: text content blocks must contain non-whitespace text$/,
    ],
    [
      [{ role: "user", content: "x" }, {
        role: "assistant",
        content: [{ ...use, id: "call.1" }],
      }, {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "call.1", content: "a" }],
      }],
      /^messages\.1\.content\.0\.tool_use\.id: String should match pattern '\^\[a-zA-Z0-9_-\]\+\$'/,
    ],
    [
      [{ role: "assistant", content: "Hello" }, { role: "user", content: "x" }],
      /^messages: first message must use the "user" role$/,
    ],
  ];
  for (const [history, message] of cases) {
    const res = await send(history);
    assert.equal(res.status, 400, JSON.stringify(history));
    assert.equal(res.json.type, "error");
    assert.equal(res.json.error.type, "invalid_request_error");
    assert.match(res.json.error.message, message);
  }
  const system = await send([{ role: "user", content: "x" }], {
    system: [{ type: "text", text: "" }],
  });
  assert.equal(system.status, 400);
  // A valid loop, and a final assistant prefill, are fine.
  assert.equal(
    (await send([{ role: "user", content: "x" }, { role: "assistant", content: [use] }, {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_01", content: "a" }, {
        type: "text",
        text: "go on",
      }],
    }])).status,
    200,
  );
  assert.equal(
    (await send([{ role: "user", content: "x" }, { role: "assistant", content: "Sure" }])).status,
    200,
  );
});

Deno.test("Responses: a call output must answer a call of the input (unless chained)", async () => {
  const input = [{ role: "user", content: "x" }, {
    type: "function_call",
    call_id: "call_a",
    name: "Read",
    arguments: "{}",
  }, { type: "function_call_output", call_id: "call_b", output: "?" }];
  const res = await post("/openai/v1/responses", { model: "gpt-5.4", input }, bearer);
  assert.equal(res.status, 400);
  assert.equal(
    res.json.error.message,
    "No tool call found for function call output with call_id call_b.",
  );
  assert.equal(res.json.error.type, "invalid_request_error");
  const answered = input.map((i: any) => i.call_id === "call_b" ? { ...i, call_id: "call_a" } : i);
  assert.equal(
    (await post("/openai/v1/responses", { model: "gpt-5.4", input: answered }, bearer)).status,
    200,
  );
  // With previous_response_id the call is upstream's, not the input's.
  const first = await post("/openai/v1/responses", {
    model: "gpt-5.4",
    input: "Weather?",
    tools: [{ type: "function", ...WEATHER }],
  }, bearer);
  const call = first.json.output[0];
  const chained = await post("/openai/v1/responses", {
    model: "gpt-5.4",
    previous_response_id: first.json.id,
    input: [{ type: "function_call_output", call_id: call.call_id, output: "sunny" }],
  }, bearer);
  assert.equal(chained.status, 200, chained.text);
});

Deno.test("chat: tool messages must answer the calls of the assistant turn just before", async () => {
  const assistant = {
    role: "assistant",
    content: null,
    tool_calls: [
      { id: "call_a", type: "function", function: { name: "Read", arguments: "{}" } },
      { id: "call_b", type: "function", function: { name: "Read", arguments: "{}" } },
    ],
  };
  const tool = (id: string) => ({ role: "tool", tool_call_id: id, content: "ok" });
  const send = (messages: unknown[]) =>
    post("/openai/v1/chat/completions", { model: "gpt-5.4", messages }, bearer);
  const orphan = await send([{ role: "user", content: "x" }, tool("call_a")]);
  assert.equal(orphan.status, 400);
  assert.equal(
    orphan.json.error.message,
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
  );
  assert.equal(orphan.json.error.param, "messages.[1].role");
  const stranger = await send([{ role: "user", content: "x" }, assistant, tool("call_z")]);
  assert.equal(stranger.status, 400);
  const partial = await send([
    { role: "user", content: "x" },
    assistant,
    tool("call_a"),
    { role: "user", content: "and?" },
  ]);
  assert.equal(partial.status, 400);
  assert.equal(
    partial.json.error.message,
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_b",
  );
  const unanswered = await send([{ role: "user", content: "x" }, assistant]);
  assert.equal(unanswered.status, 400);
  const good = await send([
    { role: "user", content: "x" },
    assistant,
    tool("call_b"),
    tool("call_a"),
    { role: "user", content: "and?" },
  ]);
  assert.equal(good.status, 200, good.text);
  // The keyless route checks the same.
  assert.equal(
    (await post("/local/v1/chat/completions", {
      model: "qwen",
      messages: [{ role: "user", content: "x" }, tool("call_a")],
    })).status,
    400,
  );
});

Deno.test("Gemini: roles, response counts and schema keywords, in Google's envelope", async () => {
  const send = (body: Record<string, unknown>, model = "gemini-2.5-flash") =>
    post(`/gemini/v1beta/models/${model}:generateContent`, body, goog);
  const role = await send({ contents: [{ role: "assistant", parts: [{ text: "x" }] }] });
  assert.equal(role.status, 400);
  assert.equal(role.json.error.status, "INVALID_ARGUMENT");
  assert.equal(role.json.error.message, "Please use a valid role: user, model.");

  const call = { functionCall: { name: "Read", args: {} } };
  const response = { functionResponse: { name: "Read", response: { result: "ok" } } };
  const count = await send({
    contents: [
      { role: "user", parts: [{ text: "x" }] },
      { role: "model", parts: [call, call] },
      { role: "user", parts: [response] },
    ],
  });
  assert.equal(count.status, 400);
  assert.equal(
    count.json.error.message,
    "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
  );
  const stray = await send({ contents: [{ role: "user", parts: [response] }] });
  assert.equal(stray.status, 400);

  const schema = await send({
    contents: [{ role: "user", parts: [{ text: "x" }] }],
    tools: [{
      functionDeclarations: [{
        name: "Read",
        parameters: {
          type: "object",
          properties: {
            path: { type: "string" },
            opts: { type: "object", additionalProperties: false },
          },
          additionalProperties: false,
        },
      }],
    }],
  });
  assert.equal(schema.status, 400);
  assert.equal(
    schema.json.error.message,
    `Invalid JSON payload received. Unknown name "additionalProperties" at 'tools[0].function_declarations[0].parameters.properties[1].value': Cannot find field.\n` +
      `Invalid JSON payload received. Unknown name "additionalProperties" at 'tools[0].function_declarations[0].parameters': Cannot find field.`,
  );
  assert.equal(schema.json.error.details[0]["@type"], "type.googleapis.com/google.rpc.BadRequest");
  for (
    const keyword of ["$schema", "$ref", "$defs", "const", "exclusiveMinimum", "propertyNames"]
  ) {
    const res = await send({
      contents: [{ role: "user", parts: [{ text: "x" }] }],
      tools: [{
        functionDeclarations: [{ name: "Read", parameters: { type: "object", [keyword]: 1 } }],
      }],
    });
    assert.equal(res.status, 400, keyword);
    assert.ok(res.json.error.message.includes(`Unknown name "${keyword}"`), res.text);
  }
  // parametersJsonSchema takes full JSON Schema.
  const raw = await send({
    contents: [{ role: "user", parts: [{ text: "x" }] }],
    tools: [{ functionDeclarations: [{ name: "Read", parametersJsonSchema: SCHEMA }] }],
  });
  assert.equal(raw.status, 200, raw.text);
  assert.deepEqual(raw.json.candidates[0].content.parts[0].functionCall.args, CONFORMING);
});

Deno.test("Gemini embeddings: embedContent and batchEmbedContents shapes, usage, and refusals", async () => {
  const at = (model: string, action: string) => `/gemini/v1beta/models/${model}:${action}`;
  const one = await post(at("gemini-embedding-001", "embedContent"), {
    content: { parts: [{ text: "Hello there" }] },
  }, goog);
  assert.equal(one.status, 200, one.text);
  assert.deepEqual(Object.keys(one.json), ["embedding", "usageMetadata"]);
  assert.equal(one.json.embedding.values.length, 3072);
  const norm = one.json.embedding.values.reduce((n: number, x: number) => n + x * x, 0);
  assert.ok(Math.abs(norm - 1) < 1e-4, "a unit vector");
  assert.deepEqual(one.json.usageMetadata, {
    promptTokenCount: 2,
    promptTokenDetails: [{ modality: "TEXT", tokenCount: 2 }],
  });
  const request = (text: string, extra: Record<string, unknown> = {}) => ({
    model: "models/text-embedding-004",
    content: { parts: [{ text }] },
    ...extra,
  });
  const batch = await post(at("text-embedding-004", "batchEmbedContents"), {
    requests: [request("Hello there"), request("General Kenobi", { outputDimensionality: 4 })],
  }, goog);
  assert.equal(batch.status, 200, batch.text);
  assert.deepEqual(batch.json.embeddings.map((e: any) => e.values.length), [768, 4]);
  assert.equal(batch.json.usageMetadata.promptTokenCount, 4);
  const bare = await post(at("text-embedding-004", "batchEmbedContents"), {
    requests: [request("no usage [[emulate no_usage=1]]")],
  }, goog);
  assert.deepEqual(Object.keys(bare.json), ["embeddings"]);

  const refusals: [string, unknown, number, RegExp][] = [
    ["gemini-2.5-flash", { content: { parts: [{ text: "x" }] } }, 404, /not supported for/],
    ["text-embedding-004", { requests: [] }, 400, /requests is not specified/],
    ["text-embedding-004", { requests: Array(101).fill(request("x")) }, 400, /at most 100/],
    [
      "text-embedding-004",
      { requests: [{ content: { parts: [{ text: "x" }] } }] },
      400,
      /requests\[0\]\.model/,
    ],
    ["text-embedding-004", { requests: [request("x", { taskType: "NOPE" })] }, 400, /task_type/],
    [
      "text-embedding-004",
      { requests: [request("x", { outputDimensionality: 769 })] },
      400,
      /output_dimensionality/,
    ],
  ];
  for (const [model, body, status, message] of refusals) {
    const action = "requests" in (body as object) ? "batchEmbedContents" : "embedContent";
    const res = await post(at(model, action), body, goog);
    assert.equal(res.status, status, res.text);
    assert.equal(res.json.error.code, status);
    assert.match(res.json.error.message, message);
  }
});
