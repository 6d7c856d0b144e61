/**
 * POST /v1/chat/completions through the gateway, driven by the official `openai` SDK: JSON,
 * streams with and without `include_usage` (usage is always asked of the upstream and billed),
 * tool calls, the Anthropic-compatible vendors' OpenAI surfaces, and errors.
 */
import assert from "node:assert/strict";
import { OpenAI } from "./deps.ts";
import { eventually, startStack, UPSTREAM_KEY, usageOf } from "./helpers/setup.ts";
import { bearer, type Json, post, readBody, sseEvents } from "./helpers/http.ts";

const stack = await startStack();
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

/** nanoUSD at the test prices: $2.50 / $15 per million → 2500 / 15000 per token. */
const cost = (u: { prompt_tokens: number; completion_tokens: number }) =>
  u.prompt_tokens * 2500 + u.completion_tokens * 15000;

async function client(account: string) {
  const { key } = await gateway.createKey(account, "--credit", "5");
  return { key, openai: new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 }) };
}

async function lastUpstream() {
  return (await stack.upstreamRequests()).at(-1)!;
}

Deno.test("chat.completions.create returns the upstream's completion and bills its usage", async () => {
  const { key, openai } = await client("chat-json");
  const completion = await openai.chat.completions.create({
    model: "gpt-test",
    messages: [{ role: "system", content: "Be terse." }, { role: "user", content: "Hi there" }],
  });
  assert.equal(completion.object, "chat.completion");
  assert.equal(completion.choices[0].message.content, "You said: Hi there");
  assert.equal(completion.choices[0].finish_reason, "stop");
  const seen = await lastUpstream();
  assert.equal(seen.path, "/openai/v1/chat/completions");
  assert.equal((seen.body as { model: string }).model, "gpt-5.4");
  const usage = await usageOf(gateway, key);
  assert.equal(usage.spent_nanousd, cost(completion.usage!));
  assert.equal(usage.by_model["gpt-test"].requests, 1);
  assert.equal(usage.by_unit.input_tokens.quantity, completion.usage!.prompt_tokens);
});

Deno.test("a stream without include_usage is billed, and the client sees no usage chunk", async () => {
  const { key, openai } = await client("chat-stream-plain");
  const stream = await openai.chat.completions.create({
    model: "gpt-test",
    messages: [{ role: "user", content: "Tell me about streams" }],
    stream: true,
  });
  let text = "";
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    assert.ok(chunk.choices.length > 0, "the usage-only chunk must not reach the client");
    assert.ok(!chunk.usage, "no usage for a client that did not ask");
    text += chunk.choices[0].delta.content ?? "";
  }
  assert.equal(text, "You said: Tell me about streams");
  assert.ok(chunks > 3);
  const seen = await lastUpstream();
  assert.deepEqual((seen.body as { stream_options: unknown }).stream_options, {
    include_usage: true,
  });
  await eventually(async () => (await usageOf(gateway, key)).requests === 1);
  const usage = await usageOf(gateway, key);
  assert.ok(usage.by_unit.input_tokens.quantity > 0);
  assert.equal(usage.by_unit.output_tokens.quantity, chunks - 2); // role chunk and finish chunk
  assert.equal(
    usage.spent_nanousd,
    usage.by_unit.input_tokens.quantity * 2500 + usage.by_unit.output_tokens.quantity * 15000,
  );
});

Deno.test("a stream with include_usage gets the usage chunk, and the bill matches it", async () => {
  const { key, openai } = await client("chat-stream-usage");
  const stream = await openai.chat.completions.create({
    model: "gpt-test",
    messages: [{ role: "user", content: "Count with me" }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let reported: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) if (chunk.usage) reported = chunk.usage;
  assert.ok(reported && reported.prompt_tokens > 0 && reported.completion_tokens > 0);
  await eventually(async () => (await usageOf(gateway, key)).requests === 1);
  assert.equal((await usageOf(gateway, key)).spent_nanousd, cost(reported));
});

Deno.test("raw stream without include_usage: unnamed data events, [DONE] last, nothing else changed", async () => {
  const { key } = await gateway.createKey("chat-stream-raw", "--credit", "5");
  const res = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "gpt-test",
      messages: [{ role: "user", content: "raw" }],
      stream: true,
    }),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type")!, /^text\/event-stream/);
  const text = await res.text();
  assert.ok(!text.includes("event:"));
  const datas = text.split("\n\n").filter(Boolean).map((e) => e.replace(/^data: /, ""));
  assert.equal(datas.at(-1), "[DONE]");
  for (const data of datas.slice(0, -1)) {
    const chunk = JSON.parse(data);
    assert.equal(chunk.object, "chat.completion.chunk");
    assert.ok(chunk.choices.length === 1 && !("usage" in chunk));
  }
});

Deno.test("tool calls stream as indexed fragments through the gateway", async () => {
  const { openai } = await client("chat-tools");
  const stream = await openai.chat.completions.create({
    model: "grok-test",
    messages: [{ role: "user", content: "Weather in Paris?" }],
    tools: [{
      type: "function",
      function: {
        name: "get_weather",
        parameters: {
          type: "object",
          properties: { city: { type: "string" } },
          required: ["city"],
        },
      },
    }],
    stream: true,
  });
  let name = "";
  let args = "";
  let finish: string | null = null;
  for await (const chunk of stream) {
    const call = chunk.choices[0]?.delta.tool_calls?.[0];
    name += call?.function?.name ?? "";
    args += call?.function?.arguments ?? "";
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(name, "get_weather");
  assert.deepEqual(JSON.parse(args), { city: "Paris" });
  assert.equal(finish, "tool_calls");
  assert.equal((await lastUpstream()).path, "/xai/v1/chat/completions");
});

Deno.test("DeepSeek, Moonshot and Zhipu chat go to their OpenAI-compatible surfaces with Bearer auth", async () => {
  const { key, openai } = await client("chat-vendors");
  for (
    const [model, vendor] of [["deepseek-test", "deepseek"], ["kimi-test", "moonshot"], [
      "glm-test",
      "zhipu",
    ]]
  ) {
    const completion = await openai.chat.completions.create({
      model,
      messages: [{ role: "user", content: `hello ${vendor}` }],
    });
    assert.equal(completion.choices[0].message.content, `You said: hello ${vendor}`);
    const seen = await lastUpstream();
    assert.equal(seen.path, `/${vendor}/compat/chat/completions`);
    assert.match(seen.headers.authorization, /^Bearer /);
  }
  assert.equal((await usageOf(gateway, key)).requests, 3);
});

Deno.test("chat errors come in OpenAI's envelope: validation, wrong model kind, upstream 429", async () => {
  const { key, openai } = await client("chat-errors");
  await assert.rejects(
    openai.chat.completions.create({ model: "gpt-test", messages: [] }),
    (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && e.param === "messages",
  );
  await assert.rejects(
    // A hosted tool a chat-only upstream cannot run is refused by the field that asks for it.
    openai.chat.completions.create({
      model: "local-test",
      messages: [{ role: "user", content: "x" }],
      web_search_options: {},
    }),
    (e: InstanceType<typeof OpenAI.APIError>) =>
      e.status === 400 && e.param === "web_search_options" && /web_search/.test(e.message),
  );
  await assert.rejects(
    openai.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "[[emulate status=429]]" }],
    }),
    (e: InstanceType<typeof OpenAI.APIError>) =>
      e.status === 429 && e.code === "rate_limit_exceeded",
  );
  assert.equal((await usageOf(gateway, key)).spent_nanousd, 0);
});

Deno.test("a chat stream the upstream cuts ends with an error payload and is billed on an estimate", async () => {
  const { key, openai } = await client("chat-cut");
  const stream = await openai.chat.completions.create({
    model: "gpt-test",
    messages: [{ role: "user", content: "[[emulate cut=4 words=50]]" }],
    stream: true,
  });
  await assert.rejects(async () => {
    for await (const _ of stream) { /* read until the error */ }
  }, /ended the stream unexpectedly/);
  await eventually(async () => (await usageOf(gateway, key)).requests === 1);
  assert.ok((await usageOf(gateway, key)).spent_nanousd > 0);
});

Deno.test("a chat stream the upstream ends with its own error ends with that error, not a second one", async () => {
  const { key, openai } = await client("chat-upstream-error");
  const messages = [{ role: "user" as const, content: "[[emulate words=50 stream_error=6]]" }];
  const res = await post(gateway.url, "/v1/chat/completions", bearer(key), {
    model: "gpt-test",
    stream: true,
    messages,
  });
  assert.equal(res.status, 200);
  const { text, failed } = await readBody(res);
  assert.equal(failed, false, "the body ends cleanly, after the upstream's error");
  const events = sseEvents(text);
  const errors = events.filter((e) => typeof e.data === "object" && "error" in e.data);
  assert.equal(errors.length, 1, `one error, the upstream's: ${text}`);
  assert.equal(events.at(-1), errors[0], "and it is the stream's end");
  const error = (errors[0].data as Json).error;
  assert.equal(error.code, "rate_limit_exceeded");
  // Redacted as an error answer is: the operator's organisation, the upstream's model id.
  assert.match(error.message, /^Rate limit reached for gpt-test in organization org-\[redacted\]/);
  assert.ok(!text.includes("[DONE]"));
  assert.ok(events.length > 2, "content came before the error");
  // The SDK raises the upstream's error.
  const stream = await openai.chat.completions.create({
    model: "gpt-test",
    stream: true,
    messages,
  });
  await assert.rejects(async () => {
    for await (const _ of stream) { /* read until the error */ }
  }, /Rate limit reached for gpt-test/);
  // Billed for what was relayed, as any stream cut after output.
  await eventually(async () => (await usageOf(gateway, key)).requests === 2);
  const usage = await usageOf(gateway, key);
  assert.ok(usage.spent_nanousd > 0);
  assert.equal(usage.held_nanousd, 0);
});

Deno.test("a usage the upstream sends unasked passes through; only what include_usage caused is taken out", async () => {
  const { key } = await gateway.createKey("chat-unasked-usage", "--credit", "5");
  const messages = [{ role: "user", content: "count with me [[emulate finish_usage=1]]" }];
  const res = await post(gateway.url, "/v1/chat/completions", bearer(key), {
    model: "gpt-test",
    stream: true,
    messages,
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  const seen = await lastUpstream();
  assert.deepEqual((seen.body as Json).stream_options, { include_usage: true }, "asked to bill");
  // What the upstream sends a client that did not ask: what this client must see, byte for byte
  // (but the answer's id and time).
  const direct = await post(
    stack.emulatorUrl,
    "/openai/v1/chat/completions",
    bearer(UPSTREAM_KEY),
    {
      model: "gpt-5.4",
      stream: true,
      messages,
    },
  );
  const same = (t: string) =>
    t.replace(/"id":"chatcmpl-\w+"/g, '"id":"chatcmpl-X"').replace(/"created":\d+/g, '"created":0');
  assert.equal(same(text), same(await direct.text()));
  const events = sseEvents(text);
  assert.equal(events.at(-1)!.data, "[DONE]");
  const chunks = events.slice(0, -1).map((e) => e.data as Json);
  assert.ok(chunks.every((c) => c.choices.length === 1), "no usage-only chunk");
  assert.ok(chunks.slice(0, -1).every((c) => !("usage" in c)), "no usage: null members");
  const last = chunks.at(-1)!;
  assert.equal(last.choices[0].finish_reason, "stop");
  assert.ok(last.usage.completion_tokens > 0, "the upstream's own usage, as it sent it");
  await eventually(async () => (await usageOf(gateway, key)).requests === 1);
  assert.equal((await usageOf(gateway, key)).spent_nanousd, cost(last.usage));
});
