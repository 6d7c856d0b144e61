/**
 * Anthropic message threads (`anthropic-beta: message-threads-2026-08-12`, the request's `thread`):
 * created with the whole conversation, continued with only the new messages. Passed through to
 * Anthropic the upstream holds the thread (the emulator holds it as Anthropic does); translated
 * to Gemini, Responses and chat upstreams the gateway holds it, per account, and a continuation
 * reaches the model with the whole conversation — a tool loop across a continue works, each turn
 * billed once for what the upstream reports. What cannot be honoured is refused in the form the
 * SDK recovers from; another account's id is a 404 that reaches no upstream and charges nothing.
 * And the official SDK's tool runner, which threads by default, runs through the gateway; its
 * thread helpers recover from the gateway's refusals as from Anthropic's (a replay under a new
 * thread after `thread_not_found`, no thread after `thread_unsupported_request`).
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { Anthropic } from "./deps.ts";
import { eventually, startStack, UPSTREAM_KEY } from "./helpers/setup.ts";
import { WEATHER } from "./helpers/wire_clients.ts";
import { answerOf, anthropic, post, sseEvents } from "./helpers/http.ts";
import { ledgerOf } from "./helpers/store.ts";
import { requestLogged } from "./helpers/gateway.ts";

const MAX_BYTES = 16_384;
const stack = await startStack({ conversations: { retentionHours: 24, maxBytes: MAX_BYTES } });
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

const BETA = "message-threads-2026-08-12";
const TOOLS = [{
  name: WEATHER.name,
  description: WEATHER.description,
  input_schema: WEATHER.parameters,
}];

async function keyFor(account: string): Promise<string> {
  return (await gateway.createKey(account, "--credit", "5")).key;
}

/** A Messages answer, JSON or streamed (then put together from its events), with its request id. */
async function send(key: string, body: Record<string, unknown>) {
  const res = await post(gateway.url, "/v1/messages", anthropic(key, { "anthropic-beta": BETA }), {
    max_tokens: 512,
    ...body,
  });
  const answer = await answerOf(res);
  const requestId = res.headers.get("request-id")!;
  if (body.stream !== true || answer.status !== 200) return { ...answer, requestId };
  const events = sseEvents(answer.text);
  const start = events.find((e) => e.event === "message_start")!.data as any;
  const content: any[] = [];
  for (const { event, data } of events as { event: string; data: any }[]) {
    if (event === "content_block_start") content[data.index] = { ...data.content_block };
    if (event === "content_block_delta" && data.delta.type === "text_delta") {
      content[data.index].text += data.delta.text;
    }
    if (event === "content_block_delta" && data.delta.type === "input_json_delta") {
      content[data.index].json = (content[data.index].json ?? "") + data.delta.partial_json;
    }
  }
  for (const block of content) {
    if (block.json !== undefined) block.input = JSON.parse(block.json);
  }
  const delta = events.findLast((e) => e.event === "message_delta")!.data as any;
  return {
    ...answer,
    requestId,
    json: {
      ...start.message,
      content,
      stop_reason: delta.delta.stop_reason,
      usage: { ...start.message.usage, ...delta.usage },
    },
  };
}

const lastUpstream = async () => (await stack.upstreamRequests()).at(-1)!;

/** The account's settled charges, once `count` are settled. */
async function charges(account: string, count: number) {
  const where = { dir: gateway.dir };
  await eventually(async () =>
    (await ledgerOf(where, { account })).filter((e) =>
      e.kind === "charge" && e.status === "settled"
    )
      .length === count
  );
  return (await ledgerOf(where, { account })).filter((e) => e.kind === "charge");
}

const units = (entry: { units: { unit: string; quantity: number }[] }, unit: string) =>
  entry.units.find((u) => u.unit === unit)?.quantity ?? 0;

for (const stream of [false, true]) {
  Deno.test(
    `a tool loop across a continue on Gemini, Responses, chat and Anthropic-compatible upstreams${
      stream ? " (streamed)" : ""
    }: the gateway holds the thread, the upstream sees it whole, each turn billed once`,
    async () => {
      // DeepSeek's Anthropic-compatible API speaks Messages but holds no threads.
      for (const model of ["gemini-test", "gpt-test", "local-test", "deepseek-test"]) {
        const account = `thread-loop-${model}-${stream}`;
        const key = await keyFor(account);
        const first = await send(key, {
          model,
          stream,
          system: "Answer briefly.",
          tools: TOOLS,
          messages: [{ role: "user", content: "Weather in Paris?" }],
          thread: { type: "create" },
        });
        assert.equal(first.status, 200, `${model}: ${first.text}`);
        assert.equal(first.json.stop_reason, "tool_use");
        const use = first.json.content.find((b: any) => b.type === "tool_use");
        assert.deepEqual(use.input, { city: "Paris" });
        const upstreamFirst = JSON.stringify((await lastUpstream()).body);
        assert.ok(!upstreamFirst.includes("thread"), `${model}: no thread field goes upstream`);

        // Only the tool's result: the upstream must see the call it answers.
        const second = await send(key, {
          model,
          stream,
          messages: [{
            role: "user",
            content: [{ type: "tool_result", tool_use_id: use.id, content: "18C and sunny" }],
          }],
          thread: { type: "continue", previous_message_id: first.json.id },
        });
        assert.equal(second.status, 200, `${model}: ${second.text}`);
        const text = second.json.content.find((b: any) => b.type === "text");
        assert.match(text.text, /the tool returned 18C and sunny/);
        assert.notEqual(second.json.id, first.json.id);
        const sent = JSON.stringify((await lastUpstream()).body);
        for (
          const part of ["Answer briefly.", "Weather in Paris?", WEATHER.name, "18C and sunny"]
        ) {
          assert.ok(sent.includes(part), `${model}: the continuation carried ${part}: ${sent}`);
        }

        const third = await send(key, {
          model,
          stream,
          messages: [{ role: "user", content: "And tomorrow? [[emulate tool=none]]" }],
          thread: { type: "continue", previous_message_id: second.json.id },
        });
        assert.equal(third.status, 200, `${model}: ${third.text}`);
        const whole = JSON.stringify((await lastUpstream()).body);
        for (const part of ["Weather in Paris?", "18C and sunny", text.text, "And tomorrow?"]) {
          assert.ok(whole.includes(part), `${model}: the third turn carried ${part}`);
        }

        // One charge per turn, for the input the upstream counted: the whole conversation.
        const entries = await charges(account, 3);
        const turns = [first, second, third];
        const inputs = turns.map((turn) => {
          const entry = entries.find((e) => e.requestId === turn.requestId)!;
          assert.equal(entry.estimated, false);
          assert.equal(units(entry, "input_tokens"), turn.json.usage.input_tokens, model);
          assert.equal(units(entry, "output_tokens"), turn.json.usage.output_tokens, model);
          return turn.json.usage.input_tokens;
        });
        assert.ok(inputs[1] > inputs[0] && inputs[2] > inputs[1], `${model}: ${inputs}`);
      }
    },
  );
}

Deno.test("on Anthropic the thread passes through as it is and the upstream holds it", async () => {
  const account = "thread-native";
  const key = await keyFor(account);
  const first = await send(key, {
    model: "claude-test",
    system: "Answer briefly.",
    tools: TOOLS,
    messages: [{ role: "user", content: "Weather in Paris?" }],
    thread: { type: "create" },
  });
  assert.equal(first.status, 200, first.text);
  const created = await lastUpstream();
  assert.deepEqual((created.body as any).thread, { type: "create" });
  assert.equal(created.headers["anthropic-beta"], BETA);
  const use = first.json.content.find((b: any) => b.type === "tool_use");
  const continued = {
    model: "claude-test",
    stream: true,
    messages: [{
      role: "user",
      content: [{ type: "tool_result", tool_use_id: use.id, content: "18C and sunny" }],
    }],
    thread: { type: "continue", previous_message_id: first.json.id },
  };
  const second = await send(key, continued);
  assert.equal(second.status, 200, second.text);
  assert.match(second.json.content[0].text, /the tool returned 18C and sunny/);
  const sent = (await lastUpstream()).body as any;
  assert.equal(sent.messages.length, 1, "only the new messages went: the upstream holds the rest");
  assert.deepEqual(sent.thread, continued.thread);
  assert.equal(sent.system, undefined);
  // Anthropic's own refusal reaches the client as it came, its error code included.
  const again = await send(key, continued);
  assert.equal(again.status, 400);
  assert.equal(again.json.error.details.error_code, "thread_already_continued");
  // Each answer was billed once, the continuation for the whole conversation the upstream counted.
  const entries = await charges(account, 2);
  const entry = entries.find((e) => e.requestId === second.requestId)!;
  assert.equal(units(entry, "input_tokens"), second.json.usage.input_tokens);
  assert.ok(second.json.usage.input_tokens > first.json.usage.input_tokens);
});

Deno.test("another account's thread, an unknown id and an expired turn are Anthropic's 404 thread_not_found: no upstream call, nothing charged", async () => {
  const owner = await keyFor("thread-owner");
  const other = "thread-other";
  const otherKey = await keyFor(other);
  const created: Record<string, string> = {};
  for (const model of ["gemini-test", "claude-test"]) {
    const first = await send(owner, {
      model,
      messages: [{ role: "user", content: "Remember: blue. [[emulate tool=none]]" }],
      thread: { type: "create" },
    });
    assert.equal(first.status, 200, first.text);
    created[model] = first.json.id;
  }
  const before = await stack.upstreamCount();
  const refused = async (key: string, model: string, id: string) => {
    const res = await send(key, {
      model,
      messages: [{ role: "user", content: "Colour?" }],
      thread: { type: "continue", previous_message_id: id },
    });
    assert.equal(res.status, 404, res.text);
    assert.equal(res.json.type, "error");
    assert.equal(res.json.error.type, "not_found_error");
    assert.equal(res.json.error.details.error_code, "thread_not_found");
    await requestLogged(gateway, res.requestId);
  };
  for (const [model, id] of Object.entries(created)) await refused(otherKey, model, id);
  await refused(otherKey, "gemini-test", "msg_unknown");
  assert.equal(await stack.upstreamCount(), before, "no upstream was called");
  const books = await ledgerOf({ dir: gateway.dir }, { account: other });
  assert.ok(books.every((e) => e.kind === "credit"), "nothing was charged");

  // The owner continues; past the retention the same id is gone.
  const mine = await send(owner, {
    model: "gemini-test",
    messages: [{ role: "user", content: "Colour?" }],
    thread: { type: "continue", previous_message_id: created["gemini-test"] },
  });
  assert.equal(mine.status, 200, mine.text);
  assert.match(JSON.stringify((await lastUpstream()).body), /Remember: blue/);
  const db = new DatabaseSync(`${gateway.dir}/data/switchyard.db`);
  db.prepare("UPDATE thread_turns SET created_at = ? WHERE id = ?").run(
    Date.now() - 25 * 3600 * 1000,
    created["gemini-test"],
  );
  db.close();
  const count = await stack.upstreamCount();
  await refused(owner, "gemini-test", mine.json.id);
  assert.equal(await stack.upstreamCount(), count);
});

Deno.test("a thread held on one side is continued across: the gateway's on Anthropic, Anthropic's refused elsewhere", async () => {
  const key = await keyFor("thread-across");
  // Created on Gemini, continued on Claude: the gateway sends Anthropic the whole conversation.
  const onGemini = await send(key, {
    model: "gemini-test",
    system: "Answer briefly.",
    tools: TOOLS,
    messages: [{ role: "user", content: "Weather in Paris?" }],
    thread: { type: "create" },
  });
  assert.equal(onGemini.status, 200, onGemini.text);
  const use = onGemini.json.content.find((b: any) => b.type === "tool_use");
  const onClaude = await send(key, {
    model: "claude-test",
    messages: [{
      role: "user",
      content: [{ type: "tool_result", tool_use_id: use.id, content: "18C" }],
    }],
    thread: { type: "continue", previous_message_id: onGemini.json.id },
  });
  assert.equal(onClaude.status, 200, onClaude.text);
  const sent = (await lastUpstream()).body as any;
  assert.equal(sent.thread, undefined);
  assert.equal(sent.system, "Answer briefly.");
  assert.equal(sent.messages.length, 3);
  assert.equal(sent.tools[0].name, WEATHER.name);
  // Created on Anthropic (which holds it), continued on a model whose provider cannot.
  const native = await send(key, {
    model: "claude-test",
    messages: [{ role: "user", content: "Remember: blue." }],
    thread: { type: "create" },
  });
  assert.equal(native.status, 200, native.text);
  const before = await stack.upstreamCount();
  const elsewhere = await send(key, {
    model: "gpt-test",
    messages: [{ role: "user", content: "Colour?" }],
    thread: { type: "continue", previous_message_id: native.json.id },
  });
  assert.equal(elsewhere.status, 404, elsewhere.text);
  assert.equal(elsewhere.json.error.details.error_code, "thread_not_found");
  assert.equal(await stack.upstreamCount(), before);
});

Deno.test("what the gateway cannot hold is refused as thread_unsupported_request, never dropped", async () => {
  const account = "thread-large";
  const key = await keyFor(account);
  const before = await stack.upstreamCount();
  // A conversation larger than conversations.maxBytes: refused before any call.
  const big = await send(key, {
    model: "gemini-test",
    messages: [{ role: "user", content: "word ".repeat(MAX_BYTES / 4) }],
    thread: { type: "create" },
  });
  assert.equal(big.status, 400, big.text);
  assert.equal(big.json.error.type, "invalid_request_error");
  assert.equal(big.json.error.details.error_code, "thread_unsupported_request");
  assert.equal(await stack.upstreamCount(), before);
  // Without the thread it is served.
  const plain = await send(key, {
    model: "gemini-test",
    messages: [{ role: "user", content: "word ".repeat(MAX_BYTES / 4) }],
  });
  assert.equal(plain.status, 200, plain.text);
  // An answer that makes the turn too large to keep: answered, and its continuation refused.
  const long = await send(key, {
    model: "gemini-test",
    max_tokens: 8000,
    messages: [{ role: "user", content: "Tell me more. [[emulate words=4000]]" }],
    thread: { type: "create" },
  });
  assert.equal(long.status, 200, long.text);
  const next = await send(key, {
    model: "gemini-test",
    messages: [{ role: "user", content: "And?" }],
    thread: { type: "continue", previous_message_id: long.json.id },
  });
  assert.equal(next.status, 400, next.text);
  assert.equal(next.json.error.details.error_code, "thread_unsupported_request");
  // A continuation may not change what the thread keeps.
  const small = await send(key, {
    model: "gemini-test",
    messages: [{ role: "user", content: "Hi." }],
    thread: { type: "create" },
  });
  const system = await send(key, {
    model: "gemini-test",
    system: "Another prompt.",
    messages: [{ role: "user", content: "Hi again." }],
    thread: { type: "continue", previous_message_id: small.json.id },
  });
  assert.equal(system.status, 400, system.text);
  assert.match(system.json.error.message, /^system: /);
  const malformed = await send(key, {
    model: "gemini-test",
    messages: [{ role: "user", content: "Hi." }],
    thread: { type: "continue" },
  });
  assert.equal(malformed.status, 400, malformed.text);
  assert.match(malformed.json.error.message, /thread/);
  assert.equal((await charges(account, 3)).length, 3, "the answered calls only");
});

/**
 * The official SDK's tool runner (which threads by default) asked `prompt` with the weather tool on
 * `model`: the final message, the tool's runs, and each request as the SDK sent it.
 */
async function runWeather(key: string, model: string, stream: boolean, prompt: string) {
  const sent: { beta: string | null; body: any }[] = [];
  const client = new Anthropic({
    apiKey: key,
    baseURL: gateway.url,
    maxRetries: 0,
    fetch: (url: string | URL | Request, init?: RequestInit) => {
      sent.push({
        beta: new Headers(init?.headers).get("anthropic-beta"),
        body: JSON.parse(String(init?.body)),
      });
      return fetch(url, init);
    },
  });
  const ran: unknown[] = [];
  const weather = {
    type: "custom" as const,
    name: WEATHER.name,
    description: WEATHER.description,
    input_schema: WEATHER.parameters as any,
    parse: (input: unknown) => input as { city: string },
    run: (input: { city: string }) => {
      ran.push(input);
      return `18C in ${input.city}`;
    },
  };
  const runner = client.beta.messages.toolRunner({
    model,
    max_tokens: 512,
    system: "Answer briefly.",
    messages: [{ role: "user", content: prompt }],
    tools: [weather],
    stream,
  } as any);
  const final = await runner.runUntilDone();
  const text = final.content.find((b: any) => b.type === "text") as any;
  return { text: text?.text as string, ran, sent };
}

Deno.test("the SDK's tool runner threads through the gateway on a translated route", async () => {
  for (const [model, stream] of [["gemini-test", false], ["gpt-test", true]] as const) {
    const account = `thread-sdk-${model}`;
    const key = await keyFor(account);
    const since = await stack.upstreamCount();
    const { text, ran, sent } = await runWeather(key, model, stream, "Weather in Paris?");
    assert.deepEqual(ran, [{ city: "Paris" }]);
    assert.match(text, /the tool returned 18C in Paris/);
    // Two turns, each one call upstream, the second with the whole conversation.
    const upstream = await stack.upstreamSince(since);
    assert.equal(upstream.length, 2, JSON.stringify(upstream.map((r) => r.path)));
    assert.match(JSON.stringify(upstream[1].body), /Weather in Paris\?/);
    // The runner created a thread, then continued it with the tool's result alone.
    assert.equal(sent.length, 2);
    assert.ok(sent.every((s) => s.beta?.includes(BETA)), JSON.stringify(sent.map((s) => s.beta)));
    assert.deepEqual(sent[0].body.thread, { type: "create" });
    assert.equal(sent[1].body.thread.type, "continue");
    assert.equal(sent[1].body.system, undefined);
    assert.equal(sent[1].body.tools, undefined);
    assert.deepEqual(sent[1].body.messages.map((m: any) => m.content[0].type), ["tool_result"]);
    assert.equal((await charges(account, 2)).length, 2);
  }
});

Deno.test("a conversation too large for the gateway to hold: the SDK's tool runner goes on without a thread", async () => {
  const account = "thread-sdk-large";
  const key = await keyFor(account);
  const prompt = `${"word ".repeat(MAX_BYTES / 4)} Weather in Paris?`;
  const { text, ran, sent } = await runWeather(key, "gemini-test", false, prompt);
  assert.deepEqual(ran, [{ city: "Paris" }]);
  assert.match(text, /the tool returned 18C in Paris/);
  // Refused as thread_unsupported_request, the runner sent the whole conversation, unthreaded.
  assert.deepEqual(sent.map((s) => s.body.thread?.type ?? null), ["create", null, null]);
  assert.equal(sent[2].body.messages.length, 3);
  assert.equal((await charges(account, 2)).length, 2, "the refused request charged nothing");
});

Deno.test("the emulator holds threads as Anthropic documents them", async () => {
  const call = (body: Record<string, unknown>, beta = BETA) =>
    post(stack.emulatorUrl, "/anthropic/v1/messages", {
      "x-api-key": UPSTREAM_KEY,
      "anthropic-version": "2023-06-01",
      ...(beta ? { "anthropic-beta": `interleaved-thinking-2025-05-14, ${beta}` } : {}),
    }, { model: "claude-sonnet-4-5", max_tokens: 256, ...body });
  const code = async (res: Response) => {
    const answer = await answerOf(res);
    return [answer.status, answer.json?.error?.details?.error_code ?? answer.json?.error?.type];
  };
  const hello = [{ role: "user", content: "Hello." }];
  assert.deepEqual(
    await code(await call({ messages: hello, thread: { type: "create" } }, "")),
    [400, "invalid_request_error"],
    "without the beta `thread` is an unknown field",
  );
  const created = await answerOf(
    await call({ system: "Be brief.", messages: hello, thread: { type: "create" } }),
  );
  assert.equal(created.status, 200, created.text);
  const next = (id: string, content: string, extra: Record<string, unknown> = {}) =>
    call({
      messages: [{ role: "user", content }],
      thread: { type: "continue", previous_message_id: id },
      ...extra,
    });
  const id = created.json.id;
  assert.deepEqual(await code(await next("msg_nope", "Hi.")), [404, "thread_not_found"]);
  assert.deepEqual(await code(await next(id, "Hi.", { system: "Other." })), [
    400,
    "invalid_request_error",
  ]);
  assert.deepEqual(await code(await next(id, "Hi.", { model: "claude-opus-4-5" })), [
    400,
    "thread_fingerprint_mismatch",
  ]);
  // A continuation in flight holds the answer; one cut short or cancelled lets it go again.
  const cut = await next(id, "Hi. [[emulate cut=3]]", { stream: true });
  assert.equal(cut.status, 200);
  await assert.rejects(cut.text(), "the stream was cut");
  const slow = await next(id, "Hi. [[emulate delay=1000]]", { stream: true });
  const reader = slow.body!.getReader();
  await reader.read();
  assert.deepEqual(await code(await next(id, "Hi.")), [400, "thread_continue_in_flight"]);
  await reader.cancel();
  let answered: any;
  await eventually(async () => {
    answered = await answerOf(await next(id, "Who are you?"));
    return answered.status === 200;
  });
  assert.equal(answered.json.usage.input_tokens > created.json.usage.input_tokens, true);
  assert.deepEqual(await code(await next(id, "Again?")), [400, "thread_already_continued"]);
  assert.equal((await answerOf(await next(answered.json.id, "And?"))).status, 200);
});

Deno.test("a thread the gateway no longer holds: the SDK's thread helper replays it under a new one", async () => {
  const key = await keyFor("thread-sdk-replay");
  const sent: any[] = [];
  const client = new Anthropic({
    apiKey: key,
    baseURL: gateway.url,
    maxRetries: 0,
    fetch: (url: string | URL | Request, init?: RequestInit) => {
      sent.push(JSON.parse(String(init?.body)));
      return fetch(url, init);
    },
  });
  const thread = client.beta.messages.thread({ model: "gemini-test", max_tokens: 256 });
  const first = await thread.send({ role: "user", content: "Remember: blue." });
  const db = new DatabaseSync(`${gateway.dir}/data/switchyard.db`);
  db.prepare("UPDATE thread_turns SET created_at = ? WHERE id = ?").run(
    Date.now() - 25 * 3600 * 1000,
    first.id,
  );
  db.close();
  const second = await thread.send({ role: "user", content: "Colour?" });
  assert.match((second.content[0] as any).text, /Colour\?/);
  // The continuation was refused (404 thread_not_found); the replay sent everything, anew.
  assert.deepEqual(sent.map((b) => b.thread.type), ["create", "continue", "create"]);
  assert.equal(sent[2].messages.length, 3);
  assert.equal(thread.previousMessageId, second.id);
});
