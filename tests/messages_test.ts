/** POST /v1/messages through the gateway, driven by the official Anthropic SDK and raw HTTP. */
import assert from "node:assert/strict";
import { Anthropic } from "./deps.ts";
import { eventually, startStack, UPSTREAM_KEY, usageOf } from "./helpers/setup.ts";

const stack = await startStack();
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

/** nanoUSD per token at the test prices. */
const RATE = { input: 2500, cached: 250, write: 3125, write1h: 5000, output: 15000 };

async function client(account: string, credit = "5") {
  const { key } = await gateway.createKey(account, "--credit", credit);
  return { key, anthropic: new Anthropic({ apiKey: key, baseURL: gateway.url, maxRetries: 0 }) };
}

Deno.test("messages.create answers through the gateway and bills input and output exactly", async () => {
  const { key, anthropic } = await client("msg-create");
  const message = await anthropic.messages.create({
    model: "claude-test",
    max_tokens: 256,
    messages: [{ role: "user", content: "What is 1+1?" }],
  });
  assert.equal(message.type, "message");
  assert.equal(message.role, "assistant");
  assert.equal(message.model, "claude-sonnet-4-5");
  assert.deepEqual(message.content, [{ type: "text", text: "You said: What is 1+1?" }]);
  assert.equal(message.stop_reason, "end_turn");
  // The SDK reads Anthropic's `request-id` header; the gateway sends it beside `x-request-id`.
  assert.match((message as { _request_id?: string | null })._request_id ?? "", /^req_/);
  const usage = await usageOf(gateway, key);
  assert.equal(
    usage.spent_nanousd,
    message.usage.input_tokens * RATE.input + message.usage.output_tokens * RATE.output,
  );
  assert.equal(usage.requests, 1);
  const seen = (await stack.upstreamRequests()).at(-1)!;
  assert.equal(seen.path, "/anthropic/v1/messages");
  assert.equal(seen.headers["x-api-key"], UPSTREAM_KEY);
  assert.match(seen.headers["anthropic-version"], /^\d{4}-\d\d-\d\d$/); // the SDK's, forwarded
  assert.equal(seen.headers.authorization, undefined);
  // anthropic-version and anthropic-beta go through as the client sent them.
  const raw = await fetch(`${gateway.url}/v1/messages?beta=true`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
      "anthropic-beta": "interleaved-thinking-2025-05-14,claude-code-20250219",
    },
    body: JSON.stringify({
      model: "claude-test",
      max_tokens: 32,
      system: [{ type: "text", text: "sys", cache_control: { type: "ephemeral" } }],
      messages: [{ role: "system", content: "extra" }, { role: "user", content: "hi" }],
      context_management: { edits: [] },
      output_config: { effort: "high" },
      tools: [{ name: "t", input_schema: { type: "object" }, defer_loading: true }],
      tool_choice: { type: "none" },
    }),
  });
  assert.equal(raw.status, 200);
  await raw.body?.cancel();
  const forwarded = (await stack.upstreamRequests()).at(-1)!;
  assert.equal(forwarded.headers["anthropic-version"], "2023-06-01");
  assert.equal(
    forwarded.headers["anthropic-beta"],
    "interleaved-thinking-2025-05-14,claude-code-20250219",
  );
  assert.deepEqual((forwarded.body as Record<string, unknown>).context_management, { edits: [] });
  assert.deepEqual((forwarded.body as Record<string, unknown>).tools, [
    { name: "t", input_schema: { type: "object" }, defer_loading: true },
  ]);
  assert.equal((seen.body as { model: string }).model, "claude-sonnet-4-5");
});

Deno.test("messages.stream with finalMessage(): thinking, ping and cumulative usage billed once", async () => {
  const { key, anthropic } = await client("msg-stream");
  const stream = anthropic.messages.stream({
    model: "claude-test",
    max_tokens: 2048,
    thinking: { type: "enabled", budget_tokens: 1024 },
    messages: [{ role: "user", content: "Think, then greet me" }],
  });
  const events: string[] = [];
  stream.on("streamEvent", (event) => {
    events.push(event.type === "content_block_delta" ? `delta:${event.delta.type}` : event.type);
  });
  const final = await stream.finalMessage();
  assert.equal(final.content[0].type, "thinking");
  assert.equal(final.content[1].type, "text");
  assert.equal((final.content[1] as Anthropic.TextBlock).text, "You said: Think, then greet me");
  const thinkingDeltas = events.filter((e) => e === "delta:thinking_delta").length;
  const textDeltas = events.filter((e) => e === "delta:text_delta").length;
  assert.deepEqual(events, [
    "message_start",
    "content_block_start",
    ...Array(thinkingDeltas).fill("delta:thinking_delta"),
    "delta:signature_delta",
    "content_block_stop",
    "content_block_start",
    ...Array(textDeltas).fill("delta:text_delta"),
    "content_block_stop",
    "message_delta",
    "message_stop",
  ]);
  await eventually(async () => (await usageOf(gateway, key)).requests === 1);
  const usage = await usageOf(gateway, key);
  assert.equal(usage.by_unit.output_tokens.quantity, final.usage.output_tokens);
  assert.equal(usage.by_unit.input_tokens.quantity, final.usage.input_tokens);
  assert.equal(
    usage.spent_nanousd,
    final.usage.input_tokens * RATE.input + final.usage.output_tokens * RATE.output,
  );
});

Deno.test("a tool-use round trip: tool_use out (streamed as input_json_delta), tool_result in", async () => {
  const { anthropic } = await client("msg-tools");
  const tools: Anthropic.Tool[] = [{
    name: "get_weather",
    description: "Current weather",
    input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  }];
  const first = await anthropic.messages.stream({
    model: "claude-test",
    max_tokens: 512,
    tools,
    messages: [{ role: "user", content: "Weather in Paris?" }],
  }).finalMessage();
  assert.equal(first.stop_reason, "tool_use");
  const use = first.content.find((b) => b.type === "tool_use") as Anthropic.ToolUseBlock;
  assert.deepEqual(use.input, { city: "Paris" });
  const second = await anthropic.messages.create({
    model: "claude-test",
    max_tokens: 512,
    tools,
    messages: [
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: first.content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "18C" }] },
    ],
  });
  assert.equal(second.stop_reason, "end_turn");
  assert.deepEqual(second.content, [{ type: "text", text: "You said: the tool returned 18C" }]);
});

Deno.test("countTokens: the upstream's count where it has one, a marked estimate otherwise, free", async () => {
  const { key, anthropic } = await client("msg-count");
  const counted = await anthropic.messages.countTokens({
    model: "claude-test",
    messages: [{ role: "user", content: "The quick brown fox jumps over the lazy dog." }],
  });
  assert.ok(counted.input_tokens > 10);
  const raw = await fetch(`${gateway.url}/v1/messages/count_tokens`, {
    method: "POST",
    headers: {
      "x-api-key": key,
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
    },
    body: JSON.stringify({
      model: "deepseek-test",
      messages: [{ role: "user", content: "x".repeat(400) }],
    }),
  });
  assert.equal(raw.status, 200);
  assert.equal(raw.headers.get("x-switchyard-token-count"), "estimate");
  // One token per four bytes of the request's text: 400 × "x", "user", and the keys.
  assert.deepEqual(await raw.json(), { input_tokens: 104 });
  assert.equal((await usageOf(gateway, key)).requests, 0);
});

for (
  const [model, prefix, upstream] of [
    ["deepseek-test", "/deepseek", "deepseek-v4-pro"],
    ["kimi-test", "/moonshot", "kimi-k2"],
    ["glm-test", "/zhipu", "glm-4.6"],
  ]
) {
  Deno.test(`Anthropic-compatible provider ${prefix.slice(1)} is reached with its own base URL`, async () => {
    const { key, anthropic } = await client(`msg-${prefix.slice(1)}`);
    const message = await anthropic.messages.create({
      model,
      max_tokens: 64,
      messages: [{ role: "user", content: "hello" }],
    });
    assert.equal(message.model, upstream);
    const seen = (await stack.upstreamRequests()).at(-1)!;
    assert.equal(seen.path, `${prefix}/v1/messages`);
    assert.equal(seen.headers["x-api-key"], UPSTREAM_KEY);
    const usage = await usageOf(gateway, key);
    assert.equal(usage.by_model[model].requests, 1);
  });
}

Deno.test("cache reads and 5-minute / 1-hour cache writes are each billed at their own rate", async () => {
  const { key, anthropic } = await client("msg-cache");
  const message = await anthropic.messages.create({
    model: "claude-test",
    max_tokens: 64,
    system: [{
      type: "text",
      text: "A long system prompt that is cached for an hour. ".repeat(8),
      cache_control: { type: "ephemeral", ttl: "1h" },
    }],
    messages: [{ role: "user", content: "hi [[emulate cached=20 cache_write=30]]" }],
  });
  const u = message.usage;
  assert.equal(u.cache_read_input_tokens, 20);
  assert.equal(u.cache_creation_input_tokens, 30);
  assert.equal(u.cache_creation?.ephemeral_1h_input_tokens, 30);
  const usage = await usageOf(gateway, key);
  assert.equal(usage.by_unit.cached_input_tokens.quantity, 20);
  assert.equal(usage.by_unit.cache_write_1h_tokens.quantity, 30);
  assert.equal(usage.by_unit.cache_write_tokens, undefined);
  assert.equal(
    usage.spent_nanousd,
    u.input_tokens * RATE.input + 20 * RATE.cached + 30 * RATE.write1h +
      u.output_tokens * RATE.output,
  );
  // A 5-minute write in a stream: message_start and message_delta both carry it; billed once.
  const streamed = await anthropic.messages.stream({
    model: "claude-test",
    max_tokens: 64,
    messages: [{ role: "user", content: "hello [[emulate cache_write=12]]" }],
  }).finalMessage();
  await eventually(async () => (await usageOf(gateway, key)).requests === 2);
  const after = await usageOf(gateway, key);
  assert.equal(after.by_unit.cache_write_tokens.quantity, 12);
  assert.equal(
    after.spent_nanousd - usage.spent_nanousd,
    streamed.usage.input_tokens * RATE.input + 12 * RATE.write +
      streamed.usage.output_tokens * RATE.output,
  );
});

Deno.test("upstream errors keep Anthropic's format: 429 and 529 relayed, 500 becomes 502, none billed", async () => {
  const { key, anthropic } = await client("msg-errors");
  const cases: [string, number, unknown][] = [
    ["[[emulate status=429]]", 429, Anthropic.RateLimitError],
    ["[[emulate status=529]]", 529, Anthropic.InternalServerError],
    ["[[emulate status=500]]", 502, Anthropic.InternalServerError],
    ["[[emulate status=400]]", 400, Anthropic.BadRequestError],
  ];
  for (const [prompt, status, type] of cases) {
    await assert.rejects(
      anthropic.messages.create({
        model: "claude-test",
        max_tokens: 64,
        messages: [{ role: "user", content: prompt }],
      }),
      (error: unknown) => {
        assert.ok(error instanceof (type as typeof Anthropic.APIError), String(error));
        assert.equal((error as InstanceType<typeof Anthropic.APIError>).status, status);
        return true;
      },
    );
  }
  const res = await fetch(`${gateway.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify({
      model: "claude-test",
      max_tokens: 8,
      messages: [{ role: "user", content: "[[emulate status=529]]" }],
    }),
  });
  assert.equal(res.status, 529);
  assert.equal((await res.json()).error.type, "overloaded_error");
  assert.equal((await usageOf(gateway, key)).requests, 0);
});

Deno.test("a client that disconnects mid-stream aborts the upstream and is billed once, for what it received", async () => {
  const { key } = await client("msg-disconnect");
  const before = await stack.emulatorStats();
  const controller = new AbortController();
  const res = await fetch(`${gateway.url}/v1/messages?beta=true`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify({
      model: "claude-test",
      max_tokens: 4096,
      stream: true,
      messages: [{ role: "user", content: "go [[emulate words=500 delay=5]]" }],
    }),
    signal: controller.signal,
  });
  const reader = res.body!.getReader();
  let text = "";
  while ((text.match(/event: content_block_delta/g) ?? []).length < 8) {
    text += new TextDecoder().decode((await reader.read()).value);
  }
  controller.abort();
  await eventually(async () =>
    (await stack.emulatorStats()).streamsCancelled === before.streamsCancelled + 1
  );
  // Settled: charged and its hold released (a second charge would count a second request).
  await eventually(async () => {
    const usage = await usageOf(gateway, key);
    return usage.requests === 1 && usage.held_nanousd === 0;
  });
  const usage = await usageOf(gateway, key);
  assert.equal(usage.requests, 1);
  // message_start reported the input; the output is the estimate of the deltas relayed (one
  // token per four bytes: at least the 8 received), not message_start's placeholder 1.
  assert.ok(usage.by_unit.input_tokens.quantity > 0);
  const output = usage.by_unit.output_tokens.quantity;
  assert.ok(output >= 8 && output < 500, `output ${output}`);
});

Deno.test("Messages errors are Anthropic-shaped: 401, 404 model, 400 validation, 413, 402", async () => {
  const { key } = await client("msg-shapes");
  const post = (headers: Record<string, string>, body: unknown) =>
    fetch(`${gateway.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  const ok = { model: "claude-test", max_tokens: 16, messages: [{ role: "user", content: "hi" }] };
  const cases: [Record<string, string>, unknown, number, string, RegExp][] = [
    [{}, ok, 401, "authentication_error", /x-api-key/],
    [{ "x-api-key": "sy-wrong" }, ok, 401, "authentication_error", /Invalid API key/],
    [{ "x-api-key": key }, { ...ok, model: "claude-nope" }, 404, "not_found_error", /claude-nope/],
    [
      { "x-api-key": key },
      { ...ok, max_tokens: undefined },
      400,
      "invalid_request_error",
      /max_tokens/,
    ],
    [{ "x-api-key": key }, { ...ok, messages: "hi" }, 400, "invalid_request_error", /messages/],
    [
      { "x-api-key": key },
      { ...ok, model: "gpt-test", stop_sequences: ["x"] },
      400,
      "invalid_request_error",
      /stop_sequences.*Responses protocol/,
    ],
    [
      { "x-api-key": key },
      { ...ok, messages: [{ role: "user", content: "x".repeat(70_000) }] },
      413,
      "request_too_large",
      /larger than the limit/,
    ],
  ];
  for (const [headers, body, status, type, message] of cases) {
    const res = await post(headers, body);
    assert.equal(res.status, status, JSON.stringify(body).slice(0, 80));
    const json = await res.json();
    assert.equal(json.type, "error");
    assert.equal(json.error.type, type);
    assert.match(json.error.message, message);
    assert.equal(json.request_id, res.headers.get("x-request-id"));
    assert.equal(res.headers.get("request-id"), res.headers.get("x-request-id"));
  }
  const { key: poor } = await gateway.createKey("msg-poor");
  const res = await post({ authorization: `Bearer ${poor}` }, ok);
  assert.equal(res.status, 402);
  assert.equal((await res.json()).error.type, "billing_error");
});
