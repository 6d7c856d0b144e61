/**
 * Money you can trust: no overdraft (a missing output cap, concurrency), every price driver
 * metered or refused (service tiers, hosted tools, long context, background responses), usage
 * merged as the protocol means it, and upstream count errors relayed. The last test checks every
 * account of the run: balance = credits − settled charges, nothing left held.
 */
import assert from "node:assert/strict";
import { eventually, MAX_OUT, startStack, TEST_PRICE, usageOf } from "./helpers/setup.ts";
import { anthropic, bearer, goog, post as httpPost } from "./helpers/http.ts";
import { booksOf, withStore } from "./helpers/store.ts";

const stack = await startStack({
  models: {
    "metered-test": {
      provider: "openai",
      upstream: "gpt-5.4",
      ...MAX_OUT,
      price: {
        ...TEST_PRICE,
        tiers: { priority: { input: 5, cachedInput: 0.5, output: 30 } },
        tools: { web_search: 0.01, file_search: 0.0025 },
      },
    },
    "claude-metered": {
      provider: "anthropic",
      upstream: "claude-sonnet-4-5",
      ...MAX_OUT,
      price: {
        ...TEST_PRICE,
        longContext: { above: 60, input: 6, cacheWrite: 7.5, cachedInput: 0.6, output: 22.5 },
        tools: { web_search: 0.01 },
      },
    },
    "claude-missing": {
      provider: "anthropic",
      upstream: "claude-retired-model-x",
      ...MAX_OUT,
      price: TEST_PRICE,
    },
    "gemini-grounded": {
      provider: "gemini",
      upstream: "gemini-3-flash",
      ...MAX_OUT,
      price: { ...TEST_PRICE, tools: { web_search: 0.014 } },
    },
    "gemini-grounded-per-prompt": {
      provider: "gemini",
      upstream: "gemini-2.5-flash",
      ...MAX_OUT,
      price: { ...TEST_PRICE, tools: { grounded_prompt: 0.035 } },
    },
    "unknown-max-test": { provider: "openai", upstream: "gpt-5.4", price: TEST_PRICE },
  },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

const post = (path: string, headers: Record<string, string>, body: unknown) =>
  httpPost(gateway.url, path, headers, body);

/** What one call of each chat protocol looks like without an output cap (Messages: too big). */
const UNCAPPED: [string, string, (key: string) => Record<string, string>, unknown][] = [
  ["responses", "/v1/responses", bearer, {
    model: "gpt-test",
    input: "go [[emulate words=8000]]",
  }],
  ["messages", "/v1/messages", anthropic, {
    model: "claude-test",
    max_tokens: 4096,
    messages: [{ role: "user", content: "go [[emulate words=8000]]" }],
  }],
  ["chat", "/v1/chat/completions", bearer, {
    model: "gpt-test",
    messages: [{ role: "user", content: "go [[emulate words=8000]]" }],
  }],
  ["generate", "/v1beta/models/gemini-test:generateContent", goog, {
    contents: [{ role: "user", parts: [{ text: "go [[emulate words=8000]]" }] }],
  }],
];

for (const [name, path, auth, body] of UNCAPPED) {
  Deno.test(`${name}: a call the balance cannot fully cover runs under a cap it does cover`, async () => {
    const { key } = await gateway.createKey(`overdraft-${name}`, "--credit", "0.02");
    const res = await post(path, auth(key), body);
    assert.equal(res.status, 200, await res.clone().text());
    const cap = Number(res.headers.get("x-switchyard-max-output-tokens"));
    assert.ok(cap > 16 && cap < 1400, `${name}: the cap sent upstream (${cap}) fits $0.02`);
    await res.body?.cancel();
    const seen = (await stack.upstreamRequests()).at(-1)!.body as Record<string, unknown>;
    const sent = name === "responses"
      ? seen.max_output_tokens
      : name === "generate"
      ? (seen.generationConfig as Record<string, unknown>).maxOutputTokens
      : name === "chat"
      ? seen.max_completion_tokens
      : seen.max_tokens;
    assert.equal(sent, cap);
    const usage = await usageOf(gateway, key);
    assert.equal(usage.held_nanousd, 0);
    assert.ok(usage.balance_nanousd >= 0, `${name}: balance ${usage.balance_nanousd} ≥ 0`);
    assert.ok(usage.spent_nanousd > 15_000_000, `${name}: most of the $0.02 was used`);
    // Too little left for even the smallest call: 402 before the upstream.
    const before = await stack.upstreamCount();
    const { key: broke } = await gateway.createKey(`overdraft-${name}-broke`, "--credit", "0.0001");
    const refused = await post(path, auth(broke), body);
    assert.equal(refused.status, 402);
    await refused.body?.cancel();
    assert.equal(await stack.upstreamCount(), before, "no upstream call");
  });
}

Deno.test("20 concurrent uncapped calls never take the account below zero", async () => {
  const { key } = await gateway.createKey("overdraft-concurrent", "--credit", "0.05");
  const results = await Promise.all(
    Array.from({ length: 20 }, async (_, i) => {
      const res = await post("/v1/responses", bearer(key), {
        model: "gpt-test",
        input: `go ${i} [[emulate words=3000]]`,
        stream: i % 2 === 0,
      });
      await res.text();
      return res.status;
    }),
  );
  assert.ok(results.every((s) => s === 200 || s === 402), results.join());
  assert.ok(results.includes(200) && results.includes(402), results.join());
  await eventually(async () => (await usageOf(gateway, key)).held_nanousd === 0);
  const usage = await usageOf(gateway, key);
  assert.ok(usage.balance_nanousd >= 0, `balance ${usage.balance_nanousd}`);
  assert.equal(usage.balance_nanousd + usage.spent_nanousd, 50_000_000);
});

Deno.test("a model without a known output limit gets the default cap sent upstream", async () => {
  const { key } = await gateway.createKey("unknown-max", "--credit", "5");
  const res = await post("/v1/responses", bearer(key), { model: "unknown-max-test", input: "hi" });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("x-switchyard-max-output-tokens"), "8192");
  await res.body?.cancel();
  assert.equal(
    ((await stack.upstreamRequests()).at(-1)!.body as Record<string, unknown>).max_output_tokens,
    8192,
  );
  // A catalogued limit is the upstream's own: nothing is added to the body.
  const known = await post("/v1/responses", bearer(key), { model: "gpt-test", input: "hi" });
  assert.equal(known.headers.get("x-switchyard-max-output-tokens"), null);
  await known.body?.cancel();
  assert.equal(
    ((await stack.upstreamRequests()).at(-1)!.body as Record<string, unknown>).max_output_tokens,
    undefined,
  );
});

Deno.test("service tiers: a priced tier is billed at its rates, an unpriced one is refused", async () => {
  const { key } = await gateway.createKey("tiers", "--credit", "5");
  const res = await post("/v1/responses", bearer(key), {
    model: "metered-test",
    input: "fast please",
    service_tier: "priority",
  });
  const body = await res.json();
  assert.equal(body.service_tier, "priority");
  const usage = await usageOf(gateway, key);
  assert.deepEqual(Object.keys(usage.by_unit).sort(), [
    "input_tokens.priority",
    "output_tokens.priority",
  ]);
  assert.equal(
    usage.spent_nanousd,
    body.usage.input_tokens * 5000 + body.usage.output_tokens * 30000,
  );
  // The same request on the default tier, for comparison, costs half.
  const standard = await (await post("/v1/chat/completions", bearer(key), {
    model: "metered-test",
    messages: [{ role: "user", content: "fast please" }],
    service_tier: "default",
  })).json();
  assert.equal(standard.service_tier, "default");
  for (
    const [path, model, tier] of [
      ["/v1/responses", "metered-test", "flex"],
      ["/v1/responses", "gpt-test", "priority"],
      ["/v1/chat/completions", "gpt-test", "priority"],
    ]
  ) {
    const refused = await post(path, bearer(key), {
      model,
      input: "x",
      messages: [{ role: "user", content: "x" }],
      service_tier: tier,
    });
    assert.equal(refused.status, 400, `${model} ${tier}`);
    const error = (await refused.json()).error;
    assert.equal(error.param, "service_tier");
    assert.match(error.message, new RegExp(`\`${tier}\` is not offered`));
  }
});

Deno.test("Responses hosted tools are billed per call; an unpriced one is refused", async () => {
  const { key } = await gateway.createKey("hosted-responses", "--credit", "5");
  const tools = [{ type: "web_search" }, { type: "file_search", vector_store_ids: ["vs_1"] }];
  const json = await (await post("/v1/responses", bearer(key), {
    model: "metered-test",
    input: "latest news",
    tools,
  })).json();
  assert.deepEqual(json.output.map((i: { type: string }) => i.type), [
    "web_search_call",
    "file_search_call",
    "message",
  ]);
  const streamed = await post("/v1/responses", bearer(key), {
    model: "metered-test",
    input: "latest news",
    tools,
    stream: true,
  });
  assert.match(await streamed.text(), /response\.web_search_call\.completed/);
  await eventually(async () => (await usageOf(gateway, key)).requests === 2);
  const usage = await usageOf(gateway, key);
  assert.deepEqual(usage.by_unit.web_search_calls, {
    quantity: 2,
    spent_usd: "0.02",
    spent_nanousd: 20_000_000,
  });
  assert.equal(usage.by_unit.file_search_calls.spent_nanousd, 5_000_000);
  for (
    const [model, tool] of [["metered-test", "code_interpreter"], ["gpt-test", "web_search"]]
  ) {
    const refused = await post("/v1/responses", bearer(key), {
      model,
      input: "x",
      tools: [{ type: "function", name: "f", parameters: {} }, { type: tool }],
    });
    assert.equal(refused.status, 400);
    const error = (await refused.json()).error;
    assert.equal(error.param, "tools[1].type");
    assert.match(error.message, new RegExp(`\`${tool}\` is not priced`));
  }
  const background = await post("/v1/responses", bearer(key), {
    model: "gpt-test",
    input: "x",
    background: true,
  });
  assert.equal(background.status, 400);
  assert.equal((await background.json()).error.param, "background");
  const search = await post("/v1/chat/completions", bearer(key), {
    model: "gpt-test",
    messages: [{ role: "user", content: "x" }],
    web_search_options: {},
  });
  assert.equal(search.status, 400);
  assert.equal((await search.json()).error.param, "web_search_options");
});

Deno.test("Anthropic web search requests are billed per search, JSON and stream", async () => {
  const { key } = await gateway.createKey("hosted-messages", "--credit", "5");
  const body = {
    model: "claude-metered",
    max_tokens: 512,
    tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 3 }],
    messages: [{ role: "user", content: "who won?" }],
  };
  const json = await (await post("/v1/messages", anthropic(key), body)).json();
  assert.deepEqual(json.usage.server_tool_use, { web_search_requests: 1 });
  assert.equal(json.content[0].type, "server_tool_use");
  const streamed = await post("/v1/messages", anthropic(key), { ...body, stream: true });
  assert.match(await streamed.text(), /web_search_tool_result/);
  await eventually(async () => (await usageOf(gateway, key)).requests === 2);
  const usage = await usageOf(gateway, key);
  assert.equal(usage.by_unit.web_search_calls.quantity, 2);
  assert.equal(usage.by_unit.web_search_calls.spent_nanousd, 20_000_000);
  const refused = await post("/v1/messages", anthropic(key), { ...body, model: "claude-test" });
  assert.equal(refused.status, 400);
  const error = await refused.json();
  assert.equal(error.error.type, "invalid_request_error");
  assert.match(error.error.message, /`web_search` is not priced/);
});

Deno.test("long context: every token of a call past the threshold at the long rates; the 1M beta needs them", async () => {
  const { key } = await gateway.createKey("long-context", "--credit", "5");
  const short = await (await post("/v1/messages", anthropic(key), {
    model: "claude-metered",
    max_tokens: 64,
    messages: [{ role: "user", content: "short" }],
  })).json();
  const long = await (await post("/v1/messages", anthropic(key), {
    model: "claude-metered",
    max_tokens: 64,
    messages: [{ role: "user", content: "word ".repeat(80) }],
  })).json();
  assert.ok(short.usage.input_tokens <= 60 && long.usage.input_tokens > 60);
  const usage = await usageOf(gateway, key);
  assert.equal(usage.by_unit["input_tokens.long_context"].quantity, long.usage.input_tokens);
  assert.equal(
    usage.by_unit["output_tokens.long_context"].spent_nanousd,
    long.usage.output_tokens * 22500,
  );
  assert.equal(usage.by_unit.input_tokens.quantity, short.usage.input_tokens);
  const beta = await post(
    "/v1/messages",
    anthropic(key, { "anthropic-beta": "context-1m-2025-08-07" }),
    { model: "claude-test", max_tokens: 64, messages: [{ role: "user", content: "x" }] },
  );
  assert.equal(beta.status, 400);
  assert.match((await beta.json()).error.message, /context-1m/);
});

Deno.test("Gemini grounding is billed per search query, or per grounded prompt", async () => {
  const { key } = await gateway.createKey("grounding", "--credit", "5");
  const ask = (model: string, stream: boolean) =>
    post(
      `/v1beta/models/${model}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
      goog(key),
      {
        contents: [{ role: "user", parts: [{ text: "weather today" }] }],
        tools: [{ googleSearch: {} }],
      },
    );
  const json = await (await ask("gemini-grounded", false)).json();
  assert.deepEqual(json.candidates[0].groundingMetadata.webSearchQueries, ["weather today"]);
  await (await ask("gemini-grounded", true)).text();
  await (await ask("gemini-grounded-per-prompt", false)).text();
  await eventually(async () => (await usageOf(gateway, key)).requests === 3);
  const usage = await usageOf(gateway, key);
  assert.equal(usage.by_unit.web_search_calls.spent_nanousd, 2 * 14_000_000);
  assert.equal(usage.by_unit.grounded_prompt_calls.spent_nanousd, 35_000_000 + 0);
  const refused = await ask("gemini-test", false);
  assert.equal(refused.status, 400);
  const error = (await refused.json()).error;
  assert.equal(error.status, "INVALID_ARGUMENT");
  assert.match(error.message, /tools\[0\]\.googleSearch/);
});

Deno.test("a message_delta whose input counts are null keeps the input of message_start", async () => {
  const { key } = await gateway.createKey("null-delta", "--credit", "5");
  const res = await post("/v1/messages", anthropic(key), {
    model: "claude-test",
    max_tokens: 256,
    stream: true,
    messages: [{ role: "user", content: `${"input ".repeat(100)} [[emulate null_usage=1]]` }],
  });
  const text = await res.text();
  assert.match(text, /"input_tokens":null/);
  const start = JSON.parse(/event: message_start\ndata: (.*)/.exec(text)![1]).message.usage;
  await eventually(async () => (await usageOf(gateway, key)).requests === 1);
  const usage = await usageOf(gateway, key);
  assert.equal(usage.by_unit.input_tokens.quantity, start.input_tokens);
  assert.ok(start.input_tokens > 100);
});

Deno.test("count_tokens relays the upstream's error (unknown model), redacted, instead of guessing", async () => {
  const { key } = await gateway.createKey("count-error", "--credit", "5");
  const res = await post("/v1/messages/count_tokens", anthropic(key), {
    model: "claude-missing",
    messages: [{ role: "user", content: "hello" }],
  });
  assert.equal(res.status, 404);
  const body = await res.json();
  assert.equal(body.type, "error");
  assert.equal(body.error.type, "not_found_error");
  assert.equal(body.error.message, "model: claude-missing");
  assert.equal(res.headers.get("x-switchyard-token-count"), null);
  assert.equal((await usageOf(gateway, key)).requests, 0);
});

Deno.test("tool-call limits are whole numbers, and the limit held is sent when none was set", async () => {
  const { key } = await gateway.createKey("tool-limits", "--credit", "5");
  const bad: [string, Record<string, string>, unknown, string][] = [
    ["/v1/responses", bearer(key), {
      model: "metered-test",
      input: "x",
      tools: [{ type: "web_search" }],
      max_tool_calls: 0.333,
    }, "max_tool_calls"],
    ["/v1/messages", anthropic(key), {
      model: "claude-metered",
      max_tokens: 64,
      tools: [{ type: "web_search_20250305", name: "web_search", max_uses: -1 }],
      messages: [{ role: "user", content: "x" }],
    }, "max_uses"],
    ["/v1/chat/completions", bearer(key), {
      model: "gpt-test",
      messages: [{ role: "user", content: "x" }],
      search_parameters: { mode: "on", max_search_results: -100000 },
    }, "max_search_results"],
  ];
  for (const [path, headers, body, field] of bad) {
    const res = await post(path, headers, body);
    assert.equal(res.status, 400, `${path}: ${await res.clone().text()}`);
    assert.match(await res.text(), new RegExp(field));
  }
  await (await post("/v1/responses", bearer(key), {
    model: "metered-test",
    input: "news",
    tools: [{ type: "web_search" }],
  })).text();
  assert.equal(
    ((await stack.upstreamRequests()).at(-1)!.body as Record<string, unknown>).max_tool_calls,
    10,
  );
  await (await post("/v1/messages", anthropic(key), {
    model: "claude-metered",
    max_tokens: 64,
    tools: [{ type: "web_search_20250305", name: "web_search" }],
    messages: [{ role: "user", content: "news" }],
  })).text();
  const sent = (await stack.upstreamRequests()).at(-1)!.body as { tools: { max_uses: number }[] };
  assert.equal(sent.tools[0].max_uses, 10);
  assert.equal((await usageOf(gateway, key)).held_nanousd, 0);
});

Deno.test("what the hold cannot see is held anyway: token ids, candidates, a cut conversation", async () => {
  // Token ids count as a token each: 10,000 of them (20 KB of JSON, which the upstream bills as
  // 200,000 nanoUSD) cannot be held on 150,000.
  const { key: tiny } = await gateway.createKey("hold-ids", "--credit", "0.00015");
  const ids = await post("/v1/embeddings", bearer(tiny), {
    model: "embed-test",
    input: Array.from({ length: 10_000 }, () => 1),
  });
  assert.equal(ids.status, 402);
  await ids.body?.cancel();
  assert.equal((await usageOf(gateway, tiny)).balance_nanousd, 150_000);
  // Four candidates hold four answers: the cap sent fits the balance for all four.
  const { key: poor } = await gateway.createKey("hold-candidates", "--credit", "0.2");
  const four = await post("/v1beta/models/gemini-test:generateContent", goog(poor), {
    contents: [{ role: "user", parts: [{ text: "x" }] }],
    generationConfig: { candidateCount: 4 },
  });
  assert.equal(four.status, 200);
  await four.body?.cancel();
  const cap = Number(four.headers.get("x-switchyard-max-output-tokens"));
  assert.ok(cap > 3000 && cap < 3400, `cap ${cap} for 4 × $15/M within $0.20`);
  // A stream cut before its usage leaves its conversation's size on record for the next hold.
  const { key } = await gateway.createKey("hold-cut", "--credit", "5");
  const cut = await (await post("/v1/responses", bearer(key), {
    model: "gpt-test",
    input: "long " + "context ".repeat(2000) + "[[emulate cut=8]]",
    stream: true,
  })).text();
  const id = JSON.parse(/event: response\.created\ndata: (.*)/.exec(cut)![1]).response.id;
  await eventually(async () => (await usageOf(gateway, key)).requests === 1);
  const object = await withStore(gateway, (store) => store.upstreamObject(id));
  assert.ok(object!.contextTokens > 2000, `recorded ${object!.contextTokens} tokens`);
});

Deno.test("a body repeating a member the bill depends on reaches the upstream as the gateway read it", async () => {
  const { key } = await gateway.createKey("duplicates", "--credit", "5");
  // Gemini bodies go upstream as the client sent them — unless a decisive member repeats.
  const contents = '{"contents":[{"parts":[{"text":"x"}]}],';
  // Repeated as it is, or with a name written with escapes (`JSON.parse` reads both the same).
  for (
    const config of [
      '"generationConfig":{"maxOutputTokens":16,"maxOutputTokens":4000}}',
      '"generationConfig":{"maxOutputTokens":16,"maxOutput\\u0054okens":4000}}',
    ]
  ) {
    const text = contents + config;
    const res = await post("/v1beta/models/gemini-test:generateContent", goog(key), text);
    assert.equal(res.status, 200);
    await res.body?.cancel();
    const seen = (await stack.upstreamRequests()).at(-1)!;
    const canonical = JSON.stringify(JSON.parse(text));
    assert.equal(seen.size, new TextEncoder().encode(canonical).length, `one in ${config}`);
    assert.deepEqual(seen.body, JSON.parse(text));
  }
});

Deno.test("after everything: every account's balance is its credits less its settled charges", async () => {
  // Every call this file made is settled: nothing held in any account.
  const accounts = () => withStore(gateway, (store) => store.listAccounts());
  await eventually(async () => (await accounts()).every((a) => Number(a.held) === 0), {
    what: "every hold settled",
  });
  const names = (await accounts()).map((a) => a.name);
  assert.ok(names.length >= 10);
  for (const name of names) {
    const books = await booksOf(gateway, name);
    assert.equal(books.balance, books.credited - books.charged, `account ${name}`);
    assert.equal(books.spent, books.charged, `account ${name}`);
    assert.equal(books.held, 0, `account ${name}`);
    assert.equal(books.open, 0, `account ${name}`);
    assert.ok(books.balance >= 0, `account ${name} is not overdrawn`);
  }
});
