/**
 * What a translated conversation carries besides text: reasoning state replayed byte for byte to
 * the provider that issued it (the emulator rejects forged or foreign signatures as the real APIs
 * do), the Gemini 3 rule for calls from elsewhere, upstream errors in the client's protocol, cut
 * streams ended in the client's error event and billed, and features a target cannot express
 * refused by name.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { eventually, startStack, usageOf } from "./helpers/setup.ts";
import { WEATHER } from "./helpers/wire_clients.ts";
import { anthropic, bearer, goog, postJson, sseEvents } from "./helpers/http.ts";

const stack = await startStack();
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

const post = (path: string, headers: Record<string, string>, body: unknown) =>
  postJson(gateway.url, path, headers, body);
const lastUpstream = async () => (await stack.upstreamRequests()).at(-1)!;

Deno.test("a Responses client's reasoning from Claude comes back as encrypted_content and is replayed to Claude", async () => {
  const { key } = await gateway.createKey("state-resp-claude", "--credit", "5");
  const tools = [{ type: "function", ...WEATHER }];
  const input: any[] = [{ role: "user", content: "Weather in Paris?" }];
  const first = await post("/v1/responses", bearer(key), {
    model: "claude-test",
    input,
    tools,
    reasoning: { effort: "low", summary: "auto" },
    max_output_tokens: 4096,
  });
  assert.equal(first.status, 200, first.text);
  const [reasoning, call] = first.json.output;
  assert.equal(reasoning.type, "reasoning");
  assert.ok(reasoning.encrypted_content.startsWith("swy1."), "a token, never the raw signature");
  assert.ok(reasoning.summary[0].text.length > 0);
  assert.equal(call.type, "function_call");
  const second = await post("/v1/responses", bearer(key), {
    model: "claude-test",
    input: [...input, ...first.json.output, {
      type: "function_call_output",
      call_id: call.call_id,
      output: "sunny",
    }],
    tools,
    reasoning: { effort: "low", summary: "auto" },
    max_output_tokens: 4096,
  });
  // The emulator, as Anthropic, refuses a thinking block whose signature it did not issue.
  assert.equal(second.status, 200, second.text);
  const sent = (await lastUpstream()).body as any;
  const thinking = sent.messages[1].content[0];
  assert.equal(thinking.type, "thinking");
  assert.ok(!thinking.signature.startsWith("swy1."), "the provider's own bytes went back");
  // The same state sent to another provider is dropped, not forged.
  const other = await post("/v1/responses", bearer(key), {
    model: "gpt-test",
    input: [...input, ...first.json.output, {
      type: "function_call_output",
      call_id: call.call_id,
      output: "sunny",
    }],
    tools,
  });
  assert.equal(other.status, 200, other.text);
  const toOpenai = (await lastUpstream()).body as any;
  assert.ok(toOpenai.input.every((item: any) => item.type !== "reasoning"));
});

Deno.test("a Messages client with thinking on a Gemini 3 model: the thought signature rides on a thinking block and goes back", async () => {
  const { key } = await gateway.createKey("state-msg-gemini3", "--credit", "5");
  const tools = [{
    name: WEATHER.name,
    description: WEATHER.description,
    input_schema: WEATHER.parameters,
  }];
  const messages: any[] = [{ role: "user", content: "Weather in Paris?" }];
  const body = {
    model: "gemini-3-test",
    max_tokens: 8000,
    thinking: { type: "enabled", budget_tokens: 2048 },
    tools,
  };
  const first = await post("/v1/messages", anthropic(key), { ...body, messages, stream: true });
  assert.equal(first.status, 200, first.text);
  // Rebuild the message from the stream, as the SDK does.
  const content: any[] = [];
  let json = "";
  for (const { data } of sseEvents(first.text)) {
    const e = data as any;
    if (e.type === "content_block_start") content.push({ ...e.content_block });
    if (e.type === "content_block_delta" && e.delta.type === "signature_delta") {
      content.at(-1).signature = e.delta.signature;
    }
    if (e.type === "content_block_delta" && e.delta.type === "input_json_delta") {
      json += e.delta.partial_json;
    }
    if (e.type === "content_block_delta" && e.delta.type === "thinking_delta") {
      content.at(-1).thinking += e.delta.thinking;
    }
  }
  const use = content.find((b) => b.type === "tool_use");
  use.input = JSON.parse(json);
  assert.ok(content.some((b) => b.type === "thinking" && b.signature.startsWith("swy1.")));
  const second = await post("/v1/messages", anthropic(key), {
    ...body,
    messages: [...messages, { role: "assistant", content }, {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny" }],
    }],
  });
  // The emulator, as Gemini 3, refuses a call without the signature it issued.
  assert.equal(second.status, 200, second.text);
  const sent = (await lastUpstream()).body as any;
  const signature = sent.contents[1].parts.find((p: any) => p.functionCall).thoughtSignature;
  assert.ok(
    signature && !signature.startsWith("swy1.") && signature !== "skip_thought_signature_validator",
  );
});

Deno.test("a chat client's tool loop on Gemini 3 has no signature to carry: the documented skip value is sent", async () => {
  const { key } = await gateway.createKey("state-chat-gemini3", "--credit", "5");
  const tools = [{ type: "function", function: WEATHER }];
  const first = await post("/v1/chat/completions", bearer(key), {
    model: "gemini-3-test",
    messages: [{ role: "user", content: "Weather?" }],
    tools,
  });
  const message = first.json.choices[0].message;
  const second = await post("/v1/chat/completions", bearer(key), {
    model: "gemini-3-test",
    tools,
    messages: [{ role: "user", content: "Weather?" }, message, {
      role: "tool",
      tool_call_id: message.tool_calls[0].id,
      content: "sunny",
    }],
  });
  assert.equal(second.status, 200, second.text);
  const sent = (await lastUpstream()).body as any;
  assert.equal(
    sent.contents[1].parts[0].thoughtSignature,
    "skip_thought_signature_validator",
  );
});

Deno.test("a Gemini client on a GPT model: encrypted reasoning rides on the call's thoughtSignature and is replayed", async () => {
  const { key } = await gateway.createKey("state-gemini-gpt", "--credit", "5");
  const tools = [{
    functionDeclarations: [{
      name: WEATHER.name,
      description: WEATHER.description,
      parametersJsonSchema: WEATHER.parameters,
    }],
  }];
  const contents: any[] = [{ role: "user", parts: [{ text: "Weather?" }] }];
  const generationConfig = { thinkingConfig: { thinkingBudget: 4096, includeThoughts: true } };
  const first = await post("/v1beta/models/gpt-test:generateContent", goog(key), {
    contents,
    tools,
    generationConfig,
  });
  assert.equal(first.status, 200, first.text);
  const parts = first.json.candidates[0].content.parts;
  const call = parts.find((p: any) => p.functionCall);
  assert.ok(call.thoughtSignature.startsWith("swy1."));
  const second = await post("/v1beta/models/gpt-test:generateContent", goog(key), {
    contents: [...contents, { role: "model", parts }, {
      role: "user",
      parts: [{
        functionResponse: { name: call.functionCall.name, response: { result: "sunny" } },
      }],
    }],
    tools,
    generationConfig,
  });
  // The emulator, as OpenAI, refuses encrypted content it did not issue.
  assert.equal(second.status, 200, second.text);
  const sent = (await lastUpstream()).body as any;
  const reasoning = sent.input.find((i: any) => i.type === "reasoning");
  assert.ok(reasoning && !reasoning.encrypted_content.startsWith("swy1."));
  assert.equal(
    sent.input.find((i: any) => i.type === "function_call").call_id,
    call.functionCall.id,
  );
});

Deno.test("upstream errors reach the client in its own protocol, with the matching status", async () => {
  const { key } = await gateway.createKey("state-errors", "--credit", "5");
  const limited = await post("/v1/messages", anthropic(key), {
    model: "gpt-test",
    max_tokens: 64,
    messages: [{ role: "user", content: "[[emulate status=429]]" }],
  });
  assert.equal(limited.status, 429);
  assert.equal(limited.json.type, "error");
  assert.equal(limited.json.error.type, "rate_limit_error");
  assert.ok(limited.headers.get("retry-after"));
  const bad = await post("/v1beta/models/claude-test:generateContent", goog(key), {
    contents: [{ role: "user", parts: [{ text: "[[emulate status=400]]" }] }],
  });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.status, "INVALID_ARGUMENT");
  assert.match(bad.json.error.message, /Emulated error 400/);
  const down = await post("/v1/chat/completions", bearer(key), {
    model: "gemini-test",
    messages: [{ role: "user", content: "[[emulate status=500]]" }],
  });
  assert.equal(down.status, 502);
  assert.equal(down.json.error.type, "server_error");
  assert.equal((await usageOf(gateway, key)).spent_nanousd, 0, "failed calls are free");
});

Deno.test("a translated stream the upstream cuts ends in the client's error event and is billed for what was relayed", async () => {
  const { key } = await gateway.createKey("state-cut", "--credit", "5");
  const cut = await post("/v1/messages", anthropic(key), {
    model: "gemini-test",
    max_tokens: 2000,
    stream: true,
    messages: [{ role: "user", content: "[[emulate cut=8 words=200]]" }],
  });
  const events = sseEvents(cut.text);
  assert.equal(events[0].event, "message_start");
  assert.equal(events.at(-1)!.event, "error");
  assert.ok(!events.some((e) => e.event === "message_stop"));
  await eventually(async () => (await usageOf(gateway, key)).requests === 1);
  assert.ok((await usageOf(gateway, key)).spent_nanousd > 0);
});

Deno.test("what the target cannot express is a 400 naming the client's field", async () => {
  const { key } = await gateway.createKey("state-refuse", "--credit", "5");
  const search = await post("/v1/messages", anthropic(key), {
    model: "local-test",
    max_tokens: 64,
    messages: [{ role: "user", content: "hi" }],
    tools: [{ type: "code_execution_20250825", name: "code_execution" }],
  });
  assert.equal(search.status, 400);
  assert.match(search.json.error.message, /tools\[0\].*chat completions/);
  const stop = await post("/v1beta/models/gpt-test:generateContent", goog(key), {
    contents: [{ role: "user", parts: [{ text: "hi" }] }],
    generationConfig: { stopSequences: ["x"] },
  });
  assert.equal(stop.status, 400);
  assert.match(stop.json.error.message, /generationConfig\.stopSequences/);
  const many = await post("/v1/chat/completions", bearer(key), {
    model: "claude-test",
    n: 2,
    messages: [{ role: "user", content: "hi" }],
  });
  assert.equal(many.status, 400);
  assert.equal(many.json.error.param, "n");
  assert.equal((await usageOf(gateway, key)).spent_nanousd, 0);
});
