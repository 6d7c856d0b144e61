/**
 * Responses clients on models whose provider speaks another protocol, through the real gateway to
 * the emulator: tools the client runs that are not functions (Codex's `tool_search` with
 * `execution: "client"`) are offered upstream as functions and come back as their own call items;
 * items of a translated answer can be referred to by id (`item_reference`, as the Vercel AI SDK
 * sends them with `store: true`) by the account they were issued to, and by no other — as can
 * the items of a stored answer passed through, which the upstream holds; and a call continuing a
 * kept conversation echoes its `previous_response_id`.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { OpenAI } from "./deps.ts";
import { bearer, postJson, sseEvents } from "./helpers/http.ts";
import { MAX_OUT, startStack, TEST_PRICE } from "./helpers/setup.ts";
import { WEATHER } from "./helpers/wire_clients.ts";

const stack = await startStack({
  // A GPT-5 id served by Claude, as an operator routes Codex's model elsewhere.
  models: {
    "gpt-5.5": {
      provider: "anthropic",
      upstream: "claude-sonnet-4-5",
      price: TEST_PRICE,
      ...MAX_OUT,
    },
  },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

const respond = (key: string, body: Record<string, unknown>) =>
  postJson(gateway.url, "/v1/responses", bearer(key), body);
const lastUpstream = async () => (await stack.upstreamRequests()).at(-1)!;

/** The models of the three foreign families, and how each names the tools it was offered. */
const FOREIGN: { model: string; toolNames(body: any): string[] }[] = [
  { model: "gpt-5.5", toolNames: (b) => b.tools.map((t: any) => t.name) },
  {
    model: "gemini-test",
    toolNames: (b) => b.tools.flatMap((t: any) => t.functionDeclarations.map((f: any) => f.name)),
  },
  { model: "local-test", toolNames: (b) => b.tools.map((t: any) => t.function.name) },
];

/** Codex's client-run tool search, as it declares it beside its functions. */
const TOOL_SEARCH = {
  type: "tool_search",
  execution: "client",
  description: "Search the tools of the connected apps.",
  parameters: {
    type: "object",
    properties: { query: { type: "string" }, limit: { type: "integer" } },
    required: ["query"],
    additionalProperties: false,
  },
};
const EXEC = {
  type: "function",
  name: "exec_command",
  description: "Run a command.",
  parameters: { type: "object", properties: { cmd: { type: "string" } }, required: ["cmd"] },
};
/** What the client's search found: a namespace of functions, loaded from then on. */
const LOADED = [{
  type: "namespace",
  name: "calendar",
  description: "The calendar app.",
  tools: [{ ...WEATHER, type: "function", name: "create_event" }],
}];

Deno.test("a client-run tool_search is a function upstream and comes back as a tool_search_call item", async () => {
  const { key } = await gateway.createKey("items-tool-search", "--credit", "5");
  for (const { model, toolNames } of FOREIGN) {
    const prompt = "[[emulate tool=tool_search]] Add a meeting to my calendar.";
    const first = await respond(key, { model, input: prompt, tools: [EXEC, TOOL_SEARCH] });
    assert.equal(first.status, 200, `${model}: ${first.text}`);
    assert.deepEqual(toolNames((await lastUpstream()).body).sort(), [
      "exec_command",
      "tool_search",
    ]);
    const call = first.json.output.find((i: any) => i.type === "tool_search_call");
    assert.ok(call, `${model}: ${JSON.stringify(first.json.output)}`);
    assert.equal(call.execution, "client");
    assert.equal(call.status, "completed");
    assert.equal(typeof call.call_id, "string");
    assert.equal(typeof call.arguments.query, "string", "arguments are an object");
    assert.ok(!first.json.output.some((i: any) => i.type === "function_call"));

    // The client's search result goes up as the call's result, and what it loaded is callable.
    const second = await respond(key, {
      model,
      tools: [EXEC, TOOL_SEARCH],
      input: [
        { role: "user", content: prompt },
        call,
        { type: "tool_search_output", call_id: call.call_id, execution: "client", tools: LOADED },
      ],
    });
    assert.equal(second.status, 200, `${model}: ${second.text}`);
    const sent = (await lastUpstream()).body as any;
    assert.ok(toolNames(sent).includes("calendar__create_event"), JSON.stringify(sent));
    assert.match(JSON.stringify(sent), /create_event/, "the result names what was loaded");
    assert.match(second.json.output_text ?? JSON.stringify(second.json.output), /tool returned/);

    // A call of a loaded function comes back under its namespace (the chat emulator makes no
    // call once a tool result is in the history).
    if (model === "local-test") continue;
    const third = await respond(key, {
      model,
      tools: [EXEC, TOOL_SEARCH],
      input: [
        { role: "user", content: prompt },
        call,
        { type: "tool_search_output", call_id: call.call_id, execution: "client", tools: LOADED },
        { role: "assistant", content: "The calendar tools are loaded." },
        { role: "user", content: "[[emulate tool=calendar__create_event]] Now add it." },
      ],
    });
    assert.equal(third.status, 200, `${model}: ${third.text}`);
    const loaded = third.json.output.find((i: any) => i.type === "function_call");
    assert.deepEqual([loaded?.namespace, loaded?.name], ["calendar", "create_event"]);
  }
});

Deno.test("a client-run tool_search call streams as a tool_search_call item (openai SDK)", async () => {
  const { key } = await gateway.createKey("items-tool-search-stream", "--credit", "5");
  const openai = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  const stream = openai.responses.stream({
    model: "gpt-5.5",
    input: "[[emulate tool=tool_search]] Find the calendar tools.",
    tools: [EXEC as OpenAI.Responses.Tool, TOOL_SEARCH as OpenAI.Responses.Tool],
  });
  const added: string[] = [];
  for await (const event of stream) {
    if (event.type === "response.output_item.added") added.push(event.item.type);
  }
  const final = await stream.finalResponse();
  assert.deepEqual(added, ["tool_search_call"]);
  const call = final.output.find((i) => i.type === "tool_search_call");
  assert.ok(call && call.type === "tool_search_call", JSON.stringify(final.output));
  assert.equal(call.execution, "client");
  assert.equal(typeof (call.arguments as any).query, "string");
});

Deno.test("a tool run by the provider is still refused on a foreign family", async () => {
  const { key } = await gateway.createKey("items-hosted", "--credit", "5");
  for (const { model } of FOREIGN) {
    const served = await respond(key, {
      model,
      input: "hi",
      tools: [EXEC, { type: "tool_search" }],
    });
    assert.equal(served.status, 400, `${model}: ${served.text}`);
    assert.equal(served.json.error.param, "tools[1]");
  }
});

/** A first call that answers with reasoning (Claude's, signed) and a call; its output items. */
async function reasonedCall(key: string, model: string): Promise<any[]> {
  const first = await respond(key, {
    model,
    input: [{ role: "user", content: "Weather in Paris?" }],
    tools: [{ type: "function", ...WEATHER }],
    reasoning: { effort: "low", summary: "auto" },
    max_output_tokens: 4096,
  });
  assert.equal(first.status, 200, first.text);
  assert.equal(first.json.store, true);
  return first.json.output;
}

Deno.test("items of a translated answer are referred to by id in the next call's input", async () => {
  const { key } = await gateway.createKey("items-reference", "--credit", "5");
  for (const model of ["claude-test", "gemini-test", "local-test"]) {
    const output = await reasonedCall(key, model);
    const call = output.find((i: any) => i.type === "function_call");
    const second = await respond(key, {
      model,
      input: [
        { role: "user", content: "Weather in Paris?" },
        ...output.map((item: any) => ({ type: "item_reference", id: item.id })),
        { type: "function_call_output", call_id: call.call_id, output: "sunny" },
      ],
      tools: [{ type: "function", ...WEATHER }],
      reasoning: { effort: "low", summary: "auto" },
      max_output_tokens: 4096,
    });
    // The emulator, as each provider, refuses a result without its call (and Claude a thinking
    // block it did not sign): the items went up as the provider gave them.
    assert.equal(second.status, 200, `${model}: ${second.text}`);
    assert.match(second.json.output_text ?? JSON.stringify(second.json.output), /sunny/);
    const sent = JSON.stringify((await lastUpstream()).body);
    assert.match(sent, /get_weather/, `${model}: the call went up`);
    if (model === "claude-test") {
      const messages = ((await lastUpstream()).body as any).messages;
      assert.equal(messages[1].content[0].type, "thinking");
      assert.ok(!messages[1].content[0].signature.startsWith("swy1."));
    }

    // A message item, streamed, is referred to as well.
    const text = second.json.output.find((i: any) => i.type === "message");
    const third = await respond(key, {
      model,
      stream: true,
      input: [{ role: "user", content: "Say hi." }, { type: "item_reference", id: text.id }, {
        role: "user",
        content: "Again.",
      }],
    });
    assert.equal(third.status, 200, `${model}: ${third.text}`);
    const upstream = JSON.stringify((await lastUpstream()).body);
    assert.ok(upstream.includes(text.content[0].text), `${model}: the message went up`);
    const completed = sseEvents(third.text).at(-1)!.data as any;
    const streamed = completed.response.output.find((i: any) => i.type === "message");
    const fourth = await respond(key, {
      model,
      input: [{ role: "user", content: "Say hi." }, { type: "item_reference", id: streamed.id }, {
        role: "user",
        content: "Once more.",
      }],
    });
    assert.equal(fourth.status, 200, `${model}: ${fourth.text}`);
    const last = JSON.stringify((await lastUpstream()).body);
    assert.ok(last.includes(streamed.content[0].text), `${model}: the streamed message went up`);
  }
});

Deno.test("item references: another account's, unknown and foreign ids are a 400, nothing sent", async () => {
  const { key } = await gateway.createKey("items-owner", "--credit", "5");
  const { key: other } = await gateway.createKey("items-other", "--credit", "5");
  const output = await reasonedCall(key, "claude-test");
  // The same form, issued in an answer that never was.
  const unknown = output[0].id.replace(/_(.)/, (_: string, c: string) => c === "0" ? "_1" : "_0");
  for (
    const [who, id] of [[other, output[0].id], [key, unknown], [key, "rs_68af2b0c9e1"]] as const
  ) {
    const before = await stack.upstreamCount();
    const refused = await respond(who, {
      model: "claude-test",
      input: [{ role: "user", content: "Go on." }, { type: "item_reference", id }],
    });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.json.error.type, "invalid_request_error");
    assert.equal(refused.json.error.param, "input[1]");
    assert.ok(!refused.text.includes("Paris"), "nothing of the item is told");
    assert.equal(await stack.upstreamCount(), before);
  }
  // The same message for another account's item as for one that never was.
  const [theirs, never] = await Promise.all([
    respond(other, {
      model: "claude-test",
      input: [{ type: "item_reference", id: output[0].id }],
    }),
    respond(other, { model: "claude-test", input: [{ type: "item_reference", id: unknown }] }),
  ]);
  assert.equal(
    theirs.json.error.message.replace(output[0].id, "ID"),
    never.json.error.message.replace(unknown, "ID"),
  );
});

Deno.test("an item of a translated answer referred to on an OpenAI model: the call is translated", async () => {
  const { key } = await gateway.createKey("items-to-openai", "--credit", "5");
  const output = await reasonedCall(key, "claude-test");
  const call = output.find((i: any) => i.type === "function_call");
  const next = await respond(key, {
    model: "gpt-test",
    input: [
      { role: "user", content: "Weather in Paris?" },
      { type: "item_reference", id: call.id },
      { type: "function_call_output", call_id: call.call_id, output: "sunny" },
    ],
    tools: [{ type: "function", ...WEATHER }],
  });
  assert.equal(next.status, 200, next.text);
  const sent = (await lastUpstream()).body as any;
  assert.equal(sent.input[1].type, "function_call");
  assert.equal(sent.input[1].call_id, call.call_id);
  assert.ok(!sent.input.some((i: any) => i.type === "item_reference"));
  // Claude's reasoning is not OpenAI's: it is dropped, never sent across.
  assert.ok(!sent.input.some((i: any) => i.type === "reasoning"));
});

Deno.test("openai SDK: responses.create with item_reference input on a Claude model", async () => {
  const { key } = await gateway.createKey("items-sdk", "--credit", "5");
  const openai = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  const tools: OpenAI.Responses.Tool[] = [{ type: "function", ...WEATHER, strict: true }];
  const first = await openai.responses.create({
    model: "claude-test",
    input: "Weather in Paris?",
    tools,
  });
  const call = first.output.find((i) => i.type === "function_call");
  assert.ok(call && call.type === "function_call");
  const second = await openai.responses.create({
    model: "claude-test",
    input: [
      { role: "user", content: "Weather in Paris?" },
      ...first.output.map((item) => ({ type: "item_reference" as const, id: item.id! })),
      { type: "function_call_output", call_id: call.call_id, output: "18C" },
    ],
    tools,
  });
  assert.match(second.output_text, /18C/);
  await assert.rejects(
    openai.responses.create({
      model: "claude-test",
      input: [{ type: "item_reference", id: "msg_unknown" }],
    }),
    (error: unknown) => error instanceof OpenAI.BadRequestError && error.param === "input[0]",
  );
});

Deno.test("a call continuing a kept conversation echoes previous_response_id, JSON and stream", async () => {
  const { key } = await gateway.createKey("items-previous", "--credit", "5");
  for (const { model } of FOREIGN) {
    const first = await respond(key, { model, input: "Remember: blue." });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.previous_response_id, null);
    const second = await respond(key, { model, previous_response_id: first.json.id, input: "?" });
    assert.equal(second.status, 200, second.text);
    assert.equal(second.json.previous_response_id, first.json.id);
    const streamed = await respond(key, {
      model,
      previous_response_id: second.json.id,
      input: "And?",
      stream: true,
    });
    assert.equal(streamed.status, 200, streamed.text);
    const carrying = sseEvents(streamed.text).filter((e) => (e.data as any).response);
    assert.deepEqual(carrying.map((e) => e.event), [
      "response.created",
      "response.in_progress",
      "response.completed",
    ]);
    for (const { data } of carrying) {
      assert.equal((data as any).response.previous_response_id, second.json.id);
    }
  }
  // The SDK reads it back as OpenAI gives it.
  const openai = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  const first = await openai.responses.create({ model: "claude-test", input: "One." });
  const next = await openai.responses.create({
    model: "claude-test",
    previous_response_id: first.id,
    input: "Two.",
  });
  assert.equal(next.previous_response_id, first.id);
});

Deno.test("items of a stored answer passed through are referred to by id by its account only", async () => {
  const { key } = await gateway.createKey("items-native", "--credit", "5");
  const { key: other } = await gateway.createKey("items-native-other", "--credit", "5");
  const tools = [{ type: "function", ...WEATHER }];
  const reasoning = { effort: "low", summary: "auto" };
  const question = { role: "user", content: "[[emulate tool=get_weather]] Weather in Paris?" };
  for (const stream of [false, true]) {
    const first = await respond(key, {
      model: "gpt-test",
      input: [question],
      tools,
      reasoning,
      stream,
    });
    assert.equal(first.status, 200, first.text);
    const output = stream
      ? (sseEvents(first.text).at(-1)!.data as any).response.output
      : first.json.output;
    const [thought, call] = output;
    assert.deepEqual([thought.type, call.type], ["reasoning", "function_call"]);
    // As the Vercel AI SDK sends them with `store: true`: reasoning by id, the call whole.
    const input = (id: string) => [
      question,
      { type: "item_reference", id },
      call,
      { type: "function_call_output", call_id: call.call_id, output: "sunny" },
    ];
    const next = await respond(key, {
      model: "gpt-test",
      input: input(thought.id),
      tools,
      reasoning,
    });
    assert.equal(next.status, 200, next.text);
    assert.match(JSON.stringify(next.json.output), /the tool returned sunny/);
    // Sent on as it came: the upstream holds the item (the emulator refuses one it does not).
    assert.deepEqual(((await lastUpstream()).body as any).input[1], {
      type: "item_reference",
      id: thought.id,
    });

    // Another account's reference is refused as an unknown id is, and nothing goes upstream.
    const before = await stack.upstreamCount();
    const refused = await respond(other, { model: "gpt-test", input: input(thought.id), tools });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.json.error.param, "input[1]");
    const unknown = await respond(other, { model: "gpt-test", input: input("rs_0123"), tools });
    assert.equal(
      refused.json.error.message.replace(thought.id, "ID"),
      unknown.json.error.message.replace("rs_0123", "ID"),
    );
    assert.equal(await stack.upstreamCount(), before);
  }
  // An answer stored nowhere has no items to refer to.
  const unstored = await respond(key, {
    model: "gpt-test",
    input: [question],
    tools,
    reasoning,
    store: false,
  });
  const before = await stack.upstreamCount();
  const refused = await respond(key, {
    model: "gpt-test",
    input: [question, { type: "item_reference", id: unstored.json.output[0].id }],
  });
  assert.equal(refused.status, 400, refused.text);
  assert.equal(await stack.upstreamCount(), before);
});
