/**
 * Every client route × every upstream family, through the real gateway to the emulator: JSON and
 * stream, a tool round trip each (the call comes back in the client's protocol, its result goes
 * up in the upstream's), the answer's usage in the client's shape, and the ledger exact to the
 * nanoUSD for each call. Native pairs run too: the route behaves the same whichever plan it took.
 */
import assert from "node:assert/strict";
import { anthropic, type Json, post, sseEvents } from "./helpers/http.ts";
import { eventually, startStack, usageOf } from "./helpers/setup.ts";
import { type Answer, WIRE_CLIENTS, type WireClient } from "./helpers/wire_clients.ts";

const stack = await startStack();
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

/** nanoUSD per token at the test prices. */
const RATE = { input: 2500, cached: 250, write: 3125, output: 15000 };

/** The upstream families, by test model, and the path each is reached on. */
const UPSTREAMS: { model: string; family: string; path: RegExp }[] = [
  // OpenAI speaks chat completions too: a chat client passes through to it.
  { model: "gpt-test", family: "openai", path: /^\/openai\/v1\/(responses|chat\/completions)$/ },
  { model: "claude-test", family: "anthropic", path: /^\/anthropic\/v1\/messages$/ },
  {
    model: "gemini-test",
    family: "gemini",
    path: /^\/gemini\/v1beta\/models\/gemini-2\.5-flash:(stream)?[gG]enerateContent/,
  },
  { model: "local-test", family: "openai-compatible", path: /^\/local\/v1\/chat\/completions$/ },
];

function cost(answer: Answer): number {
  const { input, cacheRead, cacheWrite, output } = answer.usage;
  return (input - cacheRead - cacheWrite) * RATE.input + cacheRead * RATE.cached +
    cacheWrite * RATE.write + output * RATE.output;
}

async function call(
  client: WireClient,
  key: string,
  model: string,
  body: unknown,
  stream: boolean,
): Promise<Answer> {
  const res = await fetch(`${gateway.url}${client.path(model, stream)}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...client.headers(key) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return client.read(text, stream);
}

async function spent(key: string, before: number, requests: number): Promise<number> {
  let usage: Record<string, number> = {};
  await eventually(async () => {
    usage = await usageOf(gateway, key);
    return usage.requests === requests;
  });
  return usage.spent_nanousd - before;
}

for (const client of WIRE_CLIENTS) {
  for (const upstream of UPSTREAMS) {
    for (const stream of [false, true]) {
      const name = `${client.name} client → ${upstream.family} upstream, ${
        stream ? "stream" : "JSON"
      }: a tool round trip, billed exactly`;
      Deno.test(name, async () => {
        const account = `tr-${client.name}-${upstream.family}-${stream ? "s" : "j"}`;
        const { key } = await gateway.createKey(account, "--credit", "5");
        const prompt = "What is the weather in Paris?";
        const seenBefore = await stack.upstreamCount();

        const first = await call(
          client,
          key,
          upstream.model,
          client.first(upstream.model, prompt, stream),
          stream,
        );
        assert.equal(first.calls.length, 1, JSON.stringify(first));
        assert.equal(first.calls[0].name, "get_weather");
        assert.deepEqual(first.calls[0].args, { city: "Paris" });
        assert.equal(first.finish, "tool-calls");
        assert.ok(first.usage.input > 0 && first.usage.output > 0, JSON.stringify(first.usage));
        if (client.name !== "generate-sse" && client.name !== "generate-array") {
          assert.ok(first.calls[0].id, "the call has an id");
        }
        const firstCost = await spent(key, 0, 1);
        assert.equal(firstCost, cost(first), "the first call is billed as the client saw it");

        const second = await call(
          client,
          key,
          upstream.model,
          client.second(upstream.model, prompt, stream, first, "sunny, 21 C"),
          stream,
        );
        assert.equal(second.calls.length, 0, JSON.stringify(second));
        assert.match(second.text, /sunny, 21 C/);
        assert.equal(second.finish, "stop");
        assert.equal(await spent(key, firstCost, 2), cost(second));

        // Both calls reached the model's own upstream, in its own protocol.
        const seen = await stack.upstreamSince(seenBefore);
        const mine = seen.filter((r) => upstream.path.test(r.path));
        assert.ok(mine.length >= 2, `upstream paths: ${seen.map((r) => r.path).join(", ")}`);
      });
    }
  }
}

/** A Messages stream's usage at `message_start` and at `message_delta`, read raw. */
async function messagesStreamUsage(
  key: string,
  model: string,
  prompt: string,
): Promise<{ start: Json; delta: Json }> {
  const res = await post(gateway.url, "/v1/messages", anthropic(key), {
    model,
    max_tokens: 256,
    stream: true,
    messages: [{ role: "user", content: prompt }],
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  const events = sseEvents(text);
  assert.equal(events[0].event, "message_start", text);
  const delta = events.find((e) => e.event === "message_delta");
  assert.ok(delta, text);
  return { start: (events[0].data as Json).message.usage, delta: (delta.data as Json).usage };
}

/** nanoUSD of a Messages usage at the test prices. */
const messagesCost = (u: Json) =>
  u.input_tokens * RATE.input + (u.cache_read_input_tokens ?? 0) * RATE.cached +
  (u.cache_creation_input_tokens ?? 0) * RATE.write + u.output_tokens * RATE.output;

for (const upstream of UPSTREAMS.filter((u) => u.family !== "anthropic")) {
  Deno.test(`a Messages stream on the ${upstream.family} upstream shows its input at message_start, the upstream's count in message_delta, billed`, async () => {
    const { key } = await gateway.createKey(`start-usage-${upstream.family}`, "--credit", "5");
    const prompt = "Tell me about the weather in Paris, in a few words.";
    const { start, delta } = await messagesStreamUsage(key, upstream.model, prompt);
    // LangChain reads input tokens only here: never 0 when the gateway knows better.
    assert.ok(start.input_tokens > 0, JSON.stringify(start));
    assert.ok(delta.input_tokens > 0, JSON.stringify(delta));
    // Gemini counts the prompt on its first fragment: message_start shows that count (the
    // emulator's first count is its last). Responses and chat count it only at the end:
    // message_start shows the gateway's estimate, message_delta the upstream's count.
    if (upstream.family === "gemini") assert.equal(start.input_tokens, delta.input_tokens);
    // Billed on the upstream's figures, as message_delta shows them.
    assert.equal(await spent(key, 0, 1), messagesCost(delta));

    // An upstream that reports no usage at all: charged the hold's input estimate, shown in
    // message_delta — the same figure message_start showed.
    const none = await messagesStreamUsage(key, upstream.model, `${prompt} [[emulate usage=none]]`);
    assert.ok(none.start.input_tokens > 0, JSON.stringify(none.start));
    assert.equal(none.start.input_tokens, none.delta.input_tokens);
    const before = messagesCost(delta);
    assert.equal(await spent(key, before, 2), messagesCost(none.delta));
  });
}
