/** POST /v1/responses through the gateway, driven by the official `openai` SDK and raw HTTP. */
import assert from "node:assert/strict";
import { OpenAI } from "./deps.ts";
import { eventually, startStack, UPSTREAM_KEY, usageOf } from "./helpers/setup.ts";
import { booksOf, ledgerOf } from "./helpers/store.ts";

const stack = await startStack();
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

/** nanoUSD at the test prices: $2.50 / $0.25 / $15 per million → 2500 / 250 / 15000 per token. */
function expectedCost(u: { input_tokens: number; output_tokens: number; cached?: number }) {
  const cached = u.cached ?? 0;
  return (u.input_tokens - cached) * 2500 + cached * 250 + u.output_tokens * 15000;
}

async function client(account: string, credit = "5") {
  const { key } = await gateway.createKey(account, "--credit", credit);
  return { key, openai: new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 }) };
}

Deno.test("responses.create returns the upstream's answer and bills its usage exactly", async () => {
  const { key, openai } = await client("resp-create");
  const response = await openai.responses.create({
    model: "gpt-test",
    instructions: "Be terse.",
    input: "Name three primes",
  });
  assert.equal(response.object, "response");
  assert.equal(response.status, "completed");
  assert.equal(response.output_text, "You said: Name three primes");
  assert.ok(response.usage!.input_tokens > 0 && response.usage!.output_tokens > 0);
  const usage = await usageOf(gateway, key);
  const cost = expectedCost(response.usage!);
  assert.equal(usage.spent_nanousd, cost);
  assert.equal(usage.balance_nanousd, 5_000_000_000 - cost);
  assert.equal(usage.requests, 1);
  assert.deepEqual(usage.by_unit, {
    input_tokens: {
      quantity: response.usage!.input_tokens,
      spent_usd: usage.by_unit.input_tokens.spent_usd,
      spent_nanousd: response.usage!.input_tokens * 2500,
    },
    output_tokens: {
      quantity: response.usage!.output_tokens,
      spent_usd: usage.by_unit.output_tokens.spent_usd,
      spent_nanousd: response.usage!.output_tokens * 15000,
    },
  });
  assert.equal(usage.by_model["gpt-test"].requests, 1);
});

Deno.test("the upstream gets the operator's key and the upstream model id; unknown fields pass untouched", async () => {
  const { key } = await client("resp-forward");
  // What Codex sends: developer items with ids, custom and tool_search tools, include,
  // prompt_cache_key, client_metadata, no instructions.
  const body = {
    model: "gpt-test",
    input: [
      {
        type: "message",
        id: "msg_dev_1",
        role: "developer",
        content: [{ type: "input_text", text: "Rules." }],
      },
      { type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] },
    ],
    tools: [
      {
        type: "custom",
        name: "apply_patch",
        description: "patch",
        format: { type: "grammar", syntax: "lark", definition: "start: x" },
      },
      { type: "tool_search" },
    ],
    include: ["reasoning.encrypted_content"],
    prompt_cache_key: "conv-123",
    client_metadata: { originator: "codex_exec" },
    store: false,
    reasoning: { effort: "medium", summary: "auto" },
  };
  const res = await fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200);
  const json = await res.json();
  assert.equal(json.output[0].type, "reasoning");
  assert.equal(json.output[1].type, "message");
  const seen = (await stack.upstreamRequests()).at(-1)!;
  assert.equal(seen.path, "/openai/v1/responses");
  assert.equal(seen.headers.authorization, `Bearer ${UPSTREAM_KEY}`);
  assert.ok(!JSON.stringify(seen).includes(key), "the client's key must never reach the upstream");
  assert.deepEqual(seen.body, { ...body, model: "gpt-5.4" });
});

Deno.test("responses.stream delivers every event in order and bills the completed usage", async () => {
  const { key, openai } = await client("resp-stream");
  const stream = openai.responses.stream({
    model: "gpt-test",
    input: "Stream me a sentence please",
  });
  const types: string[] = [];
  const sequence: number[] = [];
  let text = "";
  for await (const event of stream) {
    types.push(event.type);
    sequence.push(event.sequence_number);
    if (event.type === "response.output_text.delta") text += event.delta;
  }
  const final = await stream.finalResponse();
  const deltas = types.filter((t) => t === "response.output_text.delta").length;
  assert.deepEqual(types, [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    ...Array(deltas).fill("response.output_text.delta"),
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
  ]);
  assert.deepEqual(sequence, sequence.map((_, i) => i));
  assert.equal(text, "You said: Stream me a sentence please");
  assert.equal(final.output_text, text);
  assert.equal(final.status, "completed");
  await eventually(async () => (await usageOf(gateway, key)).requests === 1);
  assert.equal((await usageOf(gateway, key)).spent_nanousd, expectedCost(final.usage!));
});

Deno.test("a function-call round trip: function_call out, function_call_output in", async () => {
  const { openai } = await client("resp-tools");
  const tools: OpenAI.Responses.Tool[] = [{
    type: "function",
    name: "get_weather",
    description: "Current weather",
    parameters: {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false,
    },
    strict: true,
  }];
  const first = await openai.responses.create({
    model: "gpt-test",
    input: "Weather in Paris?",
    tools,
  });
  const call = first.output.find((item) => item.type === "function_call");
  assert.ok(call && call.type === "function_call");
  assert.equal(call.name, "get_weather");
  assert.deepEqual(JSON.parse(call.arguments), { city: "Paris" });
  const second = await openai.responses.create({
    model: "gpt-test",
    tools,
    input: [
      { role: "user", content: "Weather in Paris?" },
      call,
      { type: "function_call_output", call_id: call.call_id, output: "18C and cloudy" },
    ],
  });
  assert.equal(second.output_text, "You said: the tool returned 18C and cloudy");
  // The streamed variant carries the arguments as deltas.
  const stream = openai.responses.stream({ model: "gpt-test", input: "Weather?", tools });
  let args = "";
  for await (const event of stream) {
    if (event.type === "response.function_call_arguments.delta") args += event.delta;
  }
  assert.deepEqual(JSON.parse(args), { city: "Paris" });
});

Deno.test("upstream errors: 4xx relayed with status and message, 5xx becomes 502, neither billed", async () => {
  const { key, openai } = await client("resp-errors");
  await assert.rejects(
    openai.responses.create({ model: "gpt-test", input: "[[emulate status=429]]" }),
    (error: unknown) => {
      assert.ok(error instanceof OpenAI.RateLimitError);
      assert.equal(error.status, 429);
      // OpenAI names the operator's organization and the upstream model: neither reaches the client.
      assert.match(
        error.message,
        /Rate limit reached for gpt-test in organization org-\[redacted\]/,
      );
      assert.doesNotMatch(error.message, /gpt-5\.4|EmuLat3d/);
      assert.equal(error.headers?.get("retry-after"), "1");
      return true;
    },
  );
  await assert.rejects(
    openai.responses.create({ model: "gpt-test", input: "[[emulate status=400]]" }),
    (error: unknown) => error instanceof OpenAI.BadRequestError,
  );
  await assert.rejects(
    openai.responses.create({ model: "gpt-test", input: "[[emulate status=500]]" }),
    (error: unknown) => {
      assert.ok(error instanceof OpenAI.APIError);
      assert.equal(error.status, 502);
      assert.match(error.message, /upstream provider failed \(status 500\)/);
      return true;
    },
  );
  const usage = await usageOf(gateway, key);
  assert.equal(usage.requests, 0);
  assert.equal(usage.spent_nanousd, 0);
  assert.equal(usage.balance_nanousd, 5_000_000_000);
});

Deno.test("a refused or unreachable upstream is a 502 and a wrong upstream key is not the client's fault", async () => {
  const broken = await startStack({
    providers: {
      openai: { type: "openai", baseUrl: "http://127.0.0.1:9/v1", apiKey: "x" },
      xai: { type: "xai", baseUrl: `${stack.emulatorUrl}/xai/v1`, apiKey: "wrong-upstream-key" },
    },
  });
  try {
    const { key } = await broken.gateway.createKey("resp-broken", "--credit", "1");
    for (
      const [model, message] of [["gpt-test", /Could not reach/], [
        "grok-test",
        /refused the gateway's credentials/,
      ]]
    ) {
      const res = await fetch(`${broken.gateway.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model, input: "hi" }),
      });
      assert.equal(res.status, 502);
      const body = await res.json();
      assert.equal(body.error.type, "server_error");
      assert.match(body.error.message, message as RegExp);
    }
    assert.equal((await usageOf(broken.gateway, key)).requests, 0);
  } finally {
    await broken.stop();
  }
});

Deno.test("a client that disconnects mid-stream aborts the upstream and is billed exactly once", async () => {
  const { key } = await client("resp-disconnect");
  const before = await stack.emulatorStats();
  const controller = new AbortController();
  const res = await fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "gpt-test",
      input: "long answer [[emulate words=400 delay=5]]",
      stream: true,
    }),
    signal: controller.signal,
  });
  const reader = res.body!.getReader();
  let received = "";
  while ((received.match(/event: response\.output_text\.delta/g) ?? []).length < 10) {
    received += new TextDecoder().decode((await reader.read()).value);
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
  assert.equal(usage.requests, 1, "billed once");
  const output = usage.by_unit.output_tokens.quantity;
  assert.ok(output >= 10 && output < 400, `estimated output ${output} counts the deltas relayed`);
  assert.equal(usage.spent_nanousd, usage.by_unit.input_tokens.spent_nanousd + output * 15000);
  const charges = (await ledgerOf(gateway, { account: "resp-disconnect" }))
    .filter((e) => e.kind === "charge");
  assert.deepEqual(charges.map((e) => e.estimated), [true]);
});

Deno.test("an upstream that cuts the stream gives the client an error event and bills once", async () => {
  const { key, openai } = await client("resp-cut");
  const stream = openai.responses.stream({ model: "gpt-test", input: "hello [[emulate cut=6]]" });
  await assert.rejects(async () => {
    for await (const _ of stream) { /* consume */ }
  }, /ended the stream unexpectedly/);
  await eventually(async () => (await usageOf(gateway, key)).requests === 1);
});

Deno.test("50 concurrent calls from one account: the ledger sum equals the balance change", async () => {
  const { key, openai } = await client("resp-concurrent", "10");
  const results = await Promise.all(
    Array.from(
      { length: 50 },
      (_, i) =>
        i % 2
          ? openai.responses.create({ model: "gpt-test", input: `question ${i} ${"x ".repeat(i)}` })
          : (async () => {
            const s = openai.responses.stream({ model: "grok-test", input: `stream ${i}` });
            for await (const _ of s) { /* drain */ }
            return s.finalResponse();
          })(),
    ),
  );
  const expected = results.reduce((sum, r) => sum + expectedCost(r.usage!), 0);
  await eventually(async () => (await usageOf(gateway, key)).requests === 50);
  const usage = await usageOf(gateway, key);
  assert.equal(usage.spent_nanousd, expected);
  assert.equal(usage.balance_nanousd, 10_000_000_000 - expected);
  const books = await booksOf(gateway, "resp-concurrent");
  const charges = books.entries.filter((e) => e.kind === "charge");
  const sums = {
    ledger: books.charged,
    n: books.settled,
    lines: charges.flatMap((e) => e.units).reduce((sum, u) => sum + Number(u.amount), 0),
    balance: books.balance,
    held: books.held,
  };
  assert.deepEqual(sums, {
    ledger: expected,
    n: 50,
    lines: expected,
    balance: 10_000_000_000 - expected,
    held: 0,
  });
  assert.equal(usage.by_model["gpt-test"].requests + usage.by_model["grok-test"].requests, 50);
});

Deno.test("a balance that cannot cover the call gets 402 before any upstream call", async () => {
  const { key } = await gateway.createKey("resp-broke");
  const before = await stack.upstreamCount();
  const res = await fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-test", input: "hi" }),
  });
  assert.equal(res.status, 402);
  const body = await res.json();
  assert.equal(body.error.code, "insufficient_balance");
  assert.match(body.error.message, /Insufficient balance/);
  assert.equal(await stack.upstreamCount(), before, "no upstream call");
  // A free model needs no balance, and its usage is recorded at zero cost.
  const free = await fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "free-test", input: "hi" }),
  });
  assert.equal(free.status, 200);
  await free.body?.cancel();
  const usage = await usageOf(gateway, key);
  assert.equal(usage.requests, 1);
  assert.equal(usage.spent_nanousd, 0);
});

Deno.test("xAI models route to the xAI upstream", async () => {
  const { openai } = await client("resp-xai");
  const response = await openai.responses.create({ model: "grok-test", input: "hi grok" });
  assert.equal(response.model, "grok-4");
  const seen = (await stack.upstreamRequests()).at(-1)!;
  assert.equal(seen.path, "/xai/v1/responses");
});

Deno.test("bad input gets 400 naming the field; unknown models 404; wrong media type 415; big bodies 413", async () => {
  const { key } = await client("resp-invalid");
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${gateway.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
      body,
    });
  const cases: [unknown, string, number, RegExp][] = [
    [{ input: "hi" }, "model", 400, /Invalid 'model': is required/],
    [{ model: "gpt-test" }, "input", 400, /Invalid 'input': is required/],
    [{ model: "gpt-test", input: 5 }, "input", 400, /must be a string or an array/],
    [
      { model: "gpt-test", input: "x", max_output_tokens: 15 },
      "max_output_tokens",
      400,
      /at least 16/,
    ],
    [
      { model: "gpt-test", input: "x", max_output_tokens: 16.5 },
      "max_output_tokens",
      400,
      /integer/,
    ],
    [{ model: "gpt-test", input: "x", stream: "yes" }, "stream", 400, /boolean/],
    [{ model: "gpt-test", input: "x", instructions: 1 }, "instructions", 400, /string/],
    [{ model: "nope-1", input: "x" }, "model", 404, /The model `nope-1` does not exist/],
    [
      {
        model: "claude-test",
        input: "x",
        tools: [{ type: "file_search", vector_store_ids: ["v"] }],
      },
      "tools[0]",
      400,
      /Messages protocol/,
    ],
  ];
  for (const [body, param, status, message] of cases) {
    const res = await post(JSON.stringify(body));
    assert.equal(res.status, status, JSON.stringify(body));
    const json = await res.json();
    assert.equal(json.error.param, param);
    assert.equal(json.error.type, "invalid_request_error");
    assert.match(json.error.message, message);
  }
  const notJson = await post("{oops");
  assert.equal(notJson.status, 400);
  assert.match((await notJson.json()).error.message, /not valid JSON/);
  const big = await post(JSON.stringify({ model: "gpt-test", input: "x".repeat(70_000) }));
  assert.equal(big.status, 413);
  assert.deepEqual(await big.json(), {
    error: {
      message: "The request body is larger than the limit of 65536 bytes",
      type: "invalid_request_error",
      param: null,
      code: "request_too_large",
    },
  });
  const form = await post("a=1", { "content-type": "application/x-www-form-urlencoded" });
  assert.equal(form.status, 415);
  assert.equal((await form.json()).error.code, "unsupported_media_type");
  const usage = await usageOf(gateway, key);
  assert.equal(usage.requests, 0);
});

Deno.test("an upstream that does not answer in time is a 504, not billed", async () => {
  const slow = await startStack({ server: { upstreamTimeoutMs: 300, maxBodyBytes: 65536 } });
  try {
    const { key } = await slow.gateway.createKey("resp-timeout", "--credit", "1");
    const res = await fetch(`${slow.gateway.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", input: "hi [[emulate wait=1500]]" }),
    });
    assert.equal(res.status, 504);
    const body = await res.json();
    assert.equal(body.error.type, "server_error");
    assert.equal(body.error.code, "upstream_timeout");
    assert.match(body.error.message, /did not answer within 300 ms/);
    const usage = await usageOf(slow.gateway, key);
    assert.equal(usage.requests, 0);
    assert.equal(usage.balance_nanousd, 1_000_000_000);
  } finally {
    await slow.stop();
  }
});

Deno.test("through the gateway a client gets the same answer as from the upstream directly", async () => {
  const { key } = await client("resp-same");
  const body = {
    model: "gpt-test",
    instructions: "Answer directly.",
    input: [{ role: "user", content: "What is 2+2?" }],
    reasoning: { effort: "low" },
    metadata: { trace: "t-1" },
  };
  const mask = (text: string) =>
    text.replace(/"(resp|msg|rs|fc|call)_[0-9a-f]+"/g, '"$1_X"').replace(
      /"(created_at|completed_at)":\d+/g,
      '"$1":0',
    );
  const direct = await fetch(`${stack.emulatorUrl}/openai/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${UPSTREAM_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ ...body, model: "gpt-5.4" }),
  });
  const via = await fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  assert.equal(via.status, direct.status);
  assert.equal(via.headers.get("content-type"), direct.headers.get("content-type"));
  assert.equal(mask(await via.text()), mask(await direct.text()));
  // Streams: the same bytes, event by event.
  const stream = async (url: string, auth: string, model: string) =>
    mask(
      await (await fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${auth}`, "content-type": "application/json" },
        body: JSON.stringify({ ...body, model, stream: true }),
      })).text(),
    );
  assert.equal(
    await stream(`${gateway.url}/v1/responses`, key, "gpt-test"),
    await stream(`${stack.emulatorUrl}/openai/v1/responses`, UPSTREAM_KEY, "gpt-5.4"),
  );
});
