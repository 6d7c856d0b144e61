/**
 * The official SDKs on translated routes: their streaming helpers, tool round trips, chained
 * Responses calls and structured-output parse helpers work when the model behind the route speaks
 * another protocol. Each call is billed as the usage the SDK saw.
 */
import assert from "node:assert/strict";
import { Anthropic, GoogleGenAI, OpenAI } from "./deps.ts";
import { eventually, startStack, usageOf } from "./helpers/setup.ts";
import { WEATHER } from "./helpers/wire_clients.ts";

const stack = await startStack();
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

const RATE = { input: 2500, cached: 250, output: 15000 };

async function keyFor(account: string): Promise<string> {
  return (await gateway.createKey(account, "--credit", "5")).key;
}

async function spentAfter(key: string, requests: number): Promise<number> {
  await eventually(async () => (await usageOf(gateway, key)).requests === requests);
  return (await usageOf(gateway, key)).spent_nanousd;
}

const POINT = {
  type: "object",
  properties: { city: { type: "string" }, celsius: { type: "integer" } },
  required: ["city", "celsius"],
  additionalProperties: false,
};

Deno.test("openai responses.stream to a Claude model: a tool round trip, then a chained call by previous_response_id", async () => {
  const key = await keyFor("sdk-resp-claude");
  const openai = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  const tools: OpenAI.Responses.Tool[] = [{ type: "function", ...WEATHER, strict: true }];
  const stream = openai.responses.stream({
    model: "claude-test",
    input: "Weather in Paris?",
    tools,
  });
  let args = "";
  for await (const event of stream) {
    if (event.type === "response.function_call_arguments.delta") args += event.delta;
  }
  const first = await stream.finalResponse();
  const call = first.output.find((item) => item.type === "function_call");
  assert.ok(call && call.type === "function_call", JSON.stringify(first.output));
  assert.equal(call.name, "get_weather");
  assert.deepEqual(JSON.parse(args), { city: "Paris" });
  assert.equal(
    await spentAfter(key, 1),
    first.usage!.input_tokens * RATE.input +
      first.usage!.output_tokens * RATE.output,
  );

  // The gateway keeps the conversation: the next call names only the previous answer.
  const second = await openai.responses.create({
    model: "claude-test",
    previous_response_id: first.id,
    input: [{ type: "function_call_output", call_id: call.call_id, output: "18C and cloudy" }],
    tools,
  });
  assert.match(second.output_text, /the tool returned 18C and cloudy/);
  const upstream = (await stack.upstreamRequests()).at(-1)!;
  assert.equal(upstream.path, "/anthropic/v1/messages");
  const messages = (upstream.body as { messages: { role: string }[] }).messages;
  assert.deepEqual(messages.map((m) => m.role), ["user", "assistant", "user"]);
  const third = await openai.responses.create({
    model: "gemini-test",
    previous_response_id: second.id,
    input: "And tomorrow?",
  });
  assert.equal(third.status, "completed");
  const gemini = (await stack.upstreamRequests()).at(-1)!;
  // The question, the call, its result, the answer, and the new question.
  assert.equal((gemini.body as { contents: unknown[] }).contents.length, 5);

  // Another account cannot continue it.
  const other = new OpenAI({
    apiKey: await keyFor("sdk-resp-other"),
    baseURL: `${gateway.url}/v1`,
    maxRetries: 0,
  });
  await assert.rejects(
    other.responses.create({ model: "claude-test", previous_response_id: second.id, input: "hi" }),
    (error: unknown) => error instanceof OpenAI.NotFoundError,
  );
});

Deno.test("openai responses.parse with a JSON schema on a Gemini model gives the parsed object", async () => {
  const key = await keyFor("sdk-resp-parse");
  const openai = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  const parsed = await openai.responses.parse({
    model: "gemini-test",
    input: "Where is it warm?",
    text: { format: { type: "json_schema", name: "point", schema: POINT, strict: true } },
  });
  const value = parsed.output_parsed as { city: string; celsius: number };
  assert.equal(typeof value.city, "string");
  assert.equal(typeof value.celsius, "number");
  const seen = (await stack.upstreamRequests()).at(-1)!;
  const config = (seen.body as { generationConfig: Record<string, unknown> }).generationConfig;
  assert.equal(config.responseMimeType, "application/json");
});

Deno.test("openai chat.completions.stream to a Claude model and to a local server: tool calls by index, usage chunk", async () => {
  for (const model of ["claude-test", "local-test"]) {
    const key = await keyFor(`sdk-chat-${model}`);
    const openai = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const tools: OpenAI.Chat.ChatCompletionTool[] = [{ type: "function", function: WEATHER }];
    const stream = openai.chat.completions.stream({
      model,
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools,
      stream_options: { include_usage: true },
    });
    const first = await stream.finalChatCompletion();
    const call = first.choices[0].message.tool_calls?.[0];
    assert.ok(call && call.type === "function", JSON.stringify(first));
    assert.equal(first.choices[0].finish_reason, "tool_calls");
    assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });
    assert.ok(first.usage, "the usage chunk asked for");
    assert.equal(
      await spentAfter(key, 1),
      first.usage.prompt_tokens * RATE.input + first.usage.completion_tokens * RATE.output,
    );
    const second = await openai.chat.completions.create({
      model,
      tools,
      messages: [
        { role: "user", content: "Weather in Paris?" },
        first.choices[0].message,
        { role: "tool", tool_call_id: call.id, content: "18C and cloudy" },
      ],
    });
    assert.match(second.choices[0].message.content ?? "", /18C and cloudy/);
  }
});

Deno.test("openai chat.completions.parse with response_format on a Claude model", async () => {
  const key = await keyFor("sdk-chat-parse");
  const openai = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  const parsed = await openai.chat.completions.parse({
    model: "claude-test",
    messages: [{ role: "user", content: "Where is it warm?" }],
    response_format: {
      type: "json_schema",
      json_schema: { name: "point", schema: POINT, strict: true },
    },
  });
  const value = parsed.choices[0].message.parsed as { city: string; celsius: number };
  assert.equal(typeof value.city, "string");
  assert.equal(typeof value.celsius, "number");
});

Deno.test("anthropic messages.stream to a GPT model: tool_use blocks with input_json deltas, then a tool_result", async () => {
  const key = await keyFor("sdk-msg-gpt");
  const anthropic = new Anthropic({ apiKey: key, baseURL: gateway.url, maxRetries: 0 });
  const tools: Anthropic.Tool[] = [{
    name: WEATHER.name,
    description: WEATHER.description,
    input_schema: WEATHER.parameters as Anthropic.Tool.InputSchema,
  }];
  const stream = anthropic.messages.stream({
    model: "gpt-test",
    max_tokens: 512,
    messages: [{ role: "user", content: "Weather in Paris?" }],
    tools,
  });
  let json = "";
  stream.on("inputJson", (delta) => {
    json += delta;
  });
  const first = await stream.finalMessage();
  const use = first.content.find((block) => block.type === "tool_use");
  assert.ok(use && use.type === "tool_use", JSON.stringify(first.content));
  assert.deepEqual(use.input, { city: "Paris" });
  assert.deepEqual(JSON.parse(json), { city: "Paris" });
  assert.equal(first.stop_reason, "tool_use");
  assert.equal(
    await spentAfter(key, 1),
    first.usage.input_tokens * RATE.input +
      (first.usage.cache_read_input_tokens ?? 0) * RATE.cached +
      first.usage.output_tokens * RATE.output,
  );
  const second = await anthropic.messages.create({
    model: "gpt-test",
    max_tokens: 512,
    tools,
    messages: [
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: first.content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "18C" }] },
    ],
  });
  const text = second.content.find((block) => block.type === "text");
  assert.ok(text && text.type === "text");
  assert.match(text.text, /the tool returned 18C/);
  // Counting goes to the model's own counting endpoint, in the upstream's protocol.
  const count = await anthropic.messages.countTokens({
    model: "gpt-test",
    messages: [{ role: "user", content: "Weather in Paris?" }],
  });
  assert.ok(count.input_tokens > 0);
  assert.equal((await stack.upstreamRequests()).at(-1)!.path, "/openai/v1/responses/input_tokens");
});

Deno.test("anthropic messages.stream to Gemini, GPT and a local server: the first event's usage counts the input, billed as the final message", async () => {
  for (const model of ["gemini-test", "gpt-test", "local-test"]) {
    const key = await keyFor(`sdk-msg-start-${model}`);
    const anthropic = new Anthropic({ apiKey: key, baseURL: gateway.url, maxRetries: 0 });
    const stream = anthropic.messages.stream({
      model,
      max_tokens: 256,
      messages: [{ role: "user", content: "Tell me about the weather in Paris." }],
    });
    // The first event's usage as it arrived (the SDK goes on to update that object in place).
    let first: { type: string; usage?: string } | undefined;
    for await (const event of stream) {
      first ??= {
        type: event.type,
        usage: event.type === "message_start" ? JSON.stringify(event.message.usage) : undefined,
      };
    }
    const final = await stream.finalMessage();
    assert.equal(first?.type, "message_start");
    // What LangChain reads: the input at message_start (Gemini's first count, else the
    // gateway's estimate), never 0; the final message has the upstream's own count.
    const input = JSON.parse(first!.usage!).input_tokens;
    assert.ok(input > 0, `${model}: ${first!.usage}`);
    assert.ok(final.usage.input_tokens > 0);
    if (model === "gemini-test") assert.equal(input, final.usage.input_tokens);
    assert.equal(
      await spentAfter(key, 1),
      final.usage.input_tokens * RATE.input +
        (final.usage.cache_read_input_tokens ?? 0) * RATE.cached +
        final.usage.output_tokens * RATE.output,
      model,
    );
  }
});

Deno.test("google genai generateContentStream to Claude and GPT models: function calls, responses, schema output", async () => {
  for (const model of ["claude-test", "gpt-test"]) {
    const key = await keyFor(`sdk-genai-${model}`);
    const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gateway.url } });
    const config = {
      tools: [{
        functionDeclarations: [{
          name: WEATHER.name,
          description: WEATHER.description,
          parametersJsonSchema: WEATHER.parameters,
        }],
      }],
    };
    const contents = [{ role: "user", parts: [{ text: "Weather in Paris?" }] }];
    const stream = await ai.models.generateContentStream({ model, contents, config });
    const parts: Record<string, unknown>[] = [];
    let usage: Record<string, number> | undefined;
    for await (const chunk of stream) {
      parts.push(...(chunk.candidates?.[0]?.content?.parts ?? []) as Record<string, unknown>[]);
      if (chunk.usageMetadata) usage = chunk.usageMetadata as Record<string, number>;
    }
    const call = parts.find((p) => p.functionCall)?.functionCall as
      | { id?: string; name: string; args: unknown }
      | undefined;
    assert.ok(call, JSON.stringify(parts));
    assert.equal(call.name, "get_weather");
    assert.deepEqual(call.args, { city: "Paris" });
    assert.ok(usage);
    assert.equal(
      await spentAfter(key, 1),
      usage.promptTokenCount * RATE.input +
        (usage.candidatesTokenCount + (usage.thoughtsTokenCount ?? 0)) * RATE.output,
    );
    const second = await ai.models.generateContent({
      model,
      config,
      contents: [
        ...contents,
        { role: "model", parts },
        {
          role: "user",
          parts: [{
            functionResponse: { id: call.id, name: call.name, response: { result: "18C" } },
          }],
        },
      ],
    });
    assert.match(second.text ?? "", /18C/);
    const structured = await ai.models.generateContent({
      model,
      contents: "Where is it warm?",
      config: { responseMimeType: "application/json", responseJsonSchema: POINT },
    });
    const value = JSON.parse(structured.text ?? "");
    assert.equal(typeof value.city, "string");
    assert.equal(typeof value.celsius, "number");
    const count = await ai.models.countTokens({ model, contents: "Weather in Paris?" });
    assert.ok((count.totalTokens ?? 0) > 0);
  }
});
