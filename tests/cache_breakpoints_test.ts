/**
 * Translated calls cache like native ones, through the real gateway to the emulator: a Responses,
 * chat or generateContent client — whose protocol caches by itself — on a Claude model gets the
 * breakpoints Anthropic caches at, placed by the gateway on the last tool, the system prompt and
 * the end of the previous turn (for an hour when it asks OpenAI's extended retention), and each
 * turn of its conversation repeats the previous turn's upstream prompt up to that turn's last
 * breakpoint, byte for byte — whole histories sent again and a `previous_response_id` chain the
 * gateway keeps alike — so on the emulator's Anthropic cache each turn reads what the turn before
 * wrote. A model with `cacheBreakpoints: false` gets none; a Messages client's
 * breakpoints go to no upstream that caches by itself, and in a Messages thread the gateway holds
 * only the latest turn's go up. None of it is an adaptation.
 */
import assert from "node:assert/strict";
import { anthropic, bearer, goog, type Json, postJson } from "./helpers/http.ts";
import { prefixDifference, segmentsOf } from "./helpers/prompt.ts";
import { eventually, MAX_OUT, startStack, TEST_PRICE, usageOf } from "./helpers/setup.ts";

const stack = await startStack({
  models: {
    "claude-plain": {
      provider: "anthropic",
      upstream: "claude-sonnet-4-5",
      price: TEST_PRICE,
      ...MAX_OUT,
      cacheBreakpoints: false,
    },
  },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

const ADAPTED = "x-switchyard-adapted";
const SYSTEM = "You read files for the user and answer in one line.";
const READ = {
  name: "read_file",
  description: "Reads a file.",
  parameters: {
    type: "object",
    properties: { path: { type: "string", description: "The file." } },
    required: ["path"],
  },
};

/** Where an upstream Messages body has breakpoints (in Anthropic's reading order), with TTLs. */
function breakpoints(body: Json): string[] {
  const found: string[] = [];
  const at = (where: string, block: Json) => {
    const control = block?.cache_control;
    if (control) found.push(`${where}${control.ttl ? `:${control.ttl}` : ""}`);
  };
  (body.tools ?? []).forEach((t: Json, i: number) => at(`tools[${i}]`, t));
  if (Array.isArray(body.system)) {
    body.system.forEach((b: Json, i: number) => at(`system[${i}]`, b));
  }
  (body.messages ?? []).forEach((m: Json, i: number) => {
    if (Array.isArray(m.content)) {
      m.content.forEach((b: Json, j: number) => at(`messages[${i}][${j}]`, b));
    }
  });
  return found;
}

/** The one upstream request `send` makes, its body; the client's answer beside it. */
async function sent(
  send: () => Promise<{ status: number; text: string; json: Json; headers: Headers }>,
) {
  const seen = await stack.upstreamCount();
  const answer = await send();
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.headers.get(ADAPTED), null, "nothing adapted");
  const requests = await stack.upstreamSince(seen);
  assert.equal(requests.length, 1);
  assert.match(requests[0].path, /^\/anthropic\/v1\/messages$/);
  return { answer: answer.json, upstream: requests[0].body as Json };
}

/** Asserts each upstream prompt repeats the one before it up to that one's last breakpoint. */
function assertPrefixes(bodies: Json[]): void {
  for (let turn = 1; turn < bodies.length; turn++) {
    const difference = prefixDifference(
      segmentsOf("messages", bodies[turn - 1]),
      segmentsOf("messages", bodies[turn]),
    );
    assert.equal(difference, undefined, `turn ${turn + 1} repeats turn ${turn}'s cached prefix`);
  }
}

Deno.test("a Responses client on Claude: breakpoints on the tool, the system prompt and the previous turn; each turn repeats the cached prefix", async () => {
  const { key } = await gateway.createKey("bp-responses", "--credit", "5");
  const base = {
    model: "claude-test",
    instructions: SYSTEM,
    tools: [{ type: "function", ...READ }],
    store: false,
    prompt_cache_key: "session-1",
  };
  const call = (input: Json[]) =>
    sent(() => postJson(gateway.url, "/v1/responses", bearer(key), { ...base, input }));
  const input: Json[] = [{ role: "user", content: "What is in a.txt?" }];
  const first = await call(input);
  const calls = first.answer.output.filter((item: Json) => item.type === "function_call");
  assert.equal(calls.length, 1, "the model calls the tool");
  input.push(...first.answer.output, {
    type: "function_call_output",
    call_id: calls[0].call_id,
    output: "The file says hello.",
  });
  const second = await call(input);
  input.push(...second.answer.output, { role: "user", content: "And b.txt?" });
  const third = await call(input);

  assert.deepEqual(breakpoints(first.upstream), ["tools[0]", "system[0]"]);
  // The previous turn: the assistant's call, before the final user turn (its result).
  assert.deepEqual(breakpoints(second.upstream), ["tools[0]", "system[0]", "messages[1][0]"]);
  assert.equal(second.upstream.messages[1].content[0].type, "tool_use");
  // The previous turn: the answer after the result.
  assert.deepEqual(breakpoints(third.upstream), ["tools[0]", "system[0]", "messages[3][0]"]);
  assert.deepEqual(second.upstream.system, [
    { type: "text", text: SYSTEM, cache_control: { type: "ephemeral" } },
  ]);
  assert.ok(!("prompt_cache_key" in first.upstream), "OpenAI's key has no place on Messages");
  assertPrefixes([first.upstream, second.upstream, third.upstream]);
});

Deno.test("a chat client on Claude, streamed and not: the same breakpoints and prefixes", async () => {
  const { key } = await gateway.createKey("bp-chat", "--credit", "5");
  const base = {
    model: "claude-test",
    tools: [{ type: "function", function: READ }],
    max_tokens: 200,
  };
  const messages: Json[] = [
    { role: "system", content: SYSTEM },
    { role: "user", content: "What is in a.txt?" },
  ];
  const call = (stream: boolean) =>
    sent(() =>
      postJson(gateway.url, "/v1/chat/completions", bearer(key), {
        ...base,
        messages,
        ...(stream ? { stream: true } : {}),
      })
    );
  const first = await call(false);
  const message = first.answer.choices[0].message;
  assert.equal(message.tool_calls.length, 1, "the model calls the tool");
  messages.push(message, {
    role: "tool",
    tool_call_id: message.tool_calls[0].id,
    content: "The file says hello.",
  });
  const second = await call(false);
  messages.push(second.answer.choices[0].message, { role: "user", content: "And b.txt?" });
  const third = await call(true);

  assert.deepEqual(breakpoints(first.upstream), ["tools[0]", "system[0]"]);
  assert.deepEqual(breakpoints(second.upstream), ["tools[0]", "system[0]", "messages[1][0]"]);
  assert.deepEqual(breakpoints(third.upstream), ["tools[0]", "system[0]", "messages[3][0]"]);
  assertPrefixes([first.upstream, second.upstream, third.upstream]);
});

Deno.test("a previous_response_id chain the gateway keeps: the restored history repeats the prefix, for an hour on extended retention (billed so)", async () => {
  const { key } = await gateway.createKey("bp-chain", "--credit", "5");
  const base = {
    model: "claude-test",
    instructions: SYSTEM,
    tools: [{ type: "function", ...READ }],
    prompt_cache_retention: "24h",
  };
  const call = (body: Json) =>
    sent(() => postJson(gateway.url, "/v1/responses", bearer(key), { ...base, ...body }));
  // The emulator writes 30 tokens a call, for the lifetime the system prompt's breakpoint says.
  const first = await call({ input: "[[emulate cache_write=30]] What is in a.txt?" });
  const callItem = first.answer.output.find((item: Json) => item.type === "function_call");
  const second = await call({
    previous_response_id: first.answer.id,
    input: [{ type: "function_call_output", call_id: callItem.call_id, output: "hello" }],
  });
  const third = await call({ previous_response_id: second.answer.id, input: "And b.txt?" });
  assert.deepEqual(breakpoints(first.upstream), ["tools[0]:1h", "system[0]:1h"]);
  assert.deepEqual(breakpoints(second.upstream), [
    "tools[0]:1h",
    "system[0]:1h",
    "messages[1][0]:1h",
  ]);
  assert.deepEqual(breakpoints(third.upstream), [
    "tools[0]:1h",
    "system[0]:1h",
    "messages[3][0]:1h",
  ]);
  assertPrefixes([first.upstream, second.upstream, third.upstream]);
  // Written for an hour, and charged as such.
  await eventually(async () => (await usageOf(gateway, key)).requests === 3);
  const usage = await usageOf(gateway, key);
  assert.equal(usage.by_unit.cache_write_1h_tokens.quantity, 3 * 30);
  assert.equal(usage.by_unit.cache_write_tokens, undefined, "no 5-minute writes");
});

Deno.test("a generateContent client on Claude gets them too; a model with cacheBreakpoints off, none", async () => {
  const { key } = await gateway.createKey("bp-generate", "--credit", "5");
  const body = {
    systemInstruction: { parts: [{ text: SYSTEM }] },
    tools: [{ functionDeclarations: [READ] }],
    contents: [{ role: "user", parts: [{ text: "What is in a.txt?" }] }],
  };
  const gemini = await sent(() =>
    postJson(gateway.url, "/v1beta/models/claude-test:generateContent", goog(key), body)
  );
  assert.deepEqual(breakpoints(gemini.upstream), ["tools[0]", "system[0]"]);

  const plain = await sent(() =>
    postJson(gateway.url, "/v1/responses", bearer(key), {
      model: "claude-plain",
      instructions: SYSTEM,
      tools: [{ type: "function", ...READ }],
      input: "What is in a.txt?",
    })
  );
  assert.deepEqual(breakpoints(plain.upstream), []);
  assert.equal(plain.upstream.system, SYSTEM, "the system prompt as one string, as before");
});

Deno.test("a Messages client's breakpoints go to no upstream that caches by itself, silently", async () => {
  const { key } = await gateway.createKey("bp-messages", "--credit", "5");
  const seen = await stack.upstreamCount();
  const res = await postJson(gateway.url, "/v1/messages", anthropic(key), {
    model: "gpt-test",
    max_tokens: 200,
    system: [{ type: "text", text: SYSTEM, cache_control: { type: "ephemeral", ttl: "1h" } }],
    messages: [{
      role: "user",
      content: [{ type: "text", text: "Hi.", cache_control: { type: "ephemeral" } }],
    }],
  });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers.get(ADAPTED), null);
  const [request] = await stack.upstreamSince(seen);
  assert.match(request.path, /^\/openai\/v1\/responses$/);
  assert.ok(!JSON.stringify(request.body).includes("cache"), JSON.stringify(request.body));
});

Deno.test("a Messages thread the gateway holds: each turn's breakpoints go up, earlier turns' do not", async () => {
  const { key } = await gateway.createKey("bp-thread", "--credit", "5");
  const headers = anthropic(key, { "anthropic-beta": "message-threads-2026-08-12" });
  const mark = { type: "ephemeral" };
  /** A user turn as Claude Code writes it: its last block marked. */
  const turn = (text: string) => ({
    role: "user",
    content: [{ type: "text", text, cache_control: mark }],
  });
  const bodies: Json[] = [];
  let previous: string | undefined;
  for (const text of ["Hi. [[emulate tool=none]]", "And then?", "And after?"]) {
    const seen = await stack.upstreamCount();
    const res = await postJson(gateway.url, "/v1/messages", headers, {
      model: "deepseek-test",
      max_tokens: 200,
      messages: [turn(text)],
      ...(previous ? { thread: { type: "continue", previous_message_id: previous } } : {
        thread: { type: "create" },
        system: [{ type: "text", text: SYSTEM, cache_control: mark }],
        tools: [{ name: READ.name, input_schema: READ.parameters, cache_control: mark }],
      }),
    });
    assert.equal(res.status, 200, res.text);
    previous = res.json.id;
    const [request] = await stack.upstreamSince(seen);
    assert.match(request.path, /^\/deepseek\/v1\/messages$/);
    bodies.push(request.body as Json);
  }
  // The thread's tools and system prompt keep theirs; of the messages, only the latest turn's.
  assert.deepEqual(breakpoints(bodies[0]), ["tools[0]", "system[0]", "messages[0][0]"]);
  assert.deepEqual(breakpoints(bodies[1]), ["tools[0]", "system[0]", "messages[2][0]"]);
  assert.deepEqual(breakpoints(bodies[2]), ["tools[0]", "system[0]", "messages[4][0]"]);
  assertPrefixes(bodies);
});

Deno.test("on the emulator's Anthropic cache: each turn reads what the one before wrote; without the gateway's breakpoints, nothing", async () => {
  const { key } = await gateway.createKey("bp-reads", "--credit", "5");
  /** A system prompt over Claude's 1,024-token minimum, unique to `tag` (caches are shared). */
  const long = (tag: string) => Array.from({ length: 1500 }, (_, i) => `${tag}${i % 7}`).join(" ");
  const conversation = async (model: string) => {
    const base = {
      model,
      instructions: long(model),
      tools: [{ type: "function", ...READ }],
      store: false,
    };
    const input: Json[] = [{ role: "user", content: "What is in a.txt?" }];
    const usages: Json[] = [];
    for (const next of ["The file says hello.", "And b.txt?"]) {
      const { answer } = await sent(() =>
        postJson(gateway.url, "/v1/responses", bearer(key), { ...base, input })
      );
      usages.push(answer.usage);
      const call = answer.output.find((item: Json) => item.type === "function_call");
      input.push(
        ...answer.output,
        call
          ? { type: "function_call_output", call_id: call.call_id, output: next }
          : { role: "user", content: next },
      );
    }
    const { answer } = await sent(() =>
      postJson(gateway.url, "/v1/responses", bearer(key), { ...base, input })
    );
    return [...usages, answer.usage].map((u) => u.input_tokens_details.cached_tokens as number);
  };
  const [first, second, third] = await conversation("claude-test");
  assert.equal(first, 0, "nothing cached yet");
  assert.ok(second > 1500, `the tools and system prompt read on the second turn (${second})`);
  assert.ok(third > second, `the previous turn read too on the third (${third} > ${second})`);
  assert.deepEqual(await conversation("claude-plain"), [0, 0, 0], "no breakpoint, no cache");
});
