/**
 * The emulator's prompt caches, over HTTP: Anthropic's at `cache_control` breakpoints (prefix up
 * to a breakpoint, the 20-block lookback, 5-minute and 1-hour writes, the model's minimum, TTLs
 * refreshed by a hit), OpenAI's automatic caching on Responses and chat (from 1,024 tokens in
 * 128-token steps, `prompt_cache_key`, a `previous_response_id` chain), Gemini's implicit caching
 * — each per upstream key and model, on the emulator's clock (`POST /_emulator/clock`).
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { startEmulator } from "../src/emulator/server.ts";
import { anthropic, bearer, goog, postJson, sseEvents } from "./helpers/http.ts";

const KEYS = ["cache-key-one-1111", "cache-key-two-2222"];
const emulator = startEmulator({ keys: KEYS.map((key) => ({ key })) });
const base = `http://127.0.0.1:${emulator.addr.port}`;
Deno.test.afterAll(() => emulator.shutdown());

/** Moves the emulator's clock on by `ms`. */
async function advance(ms: number): Promise<void> {
  const res = await postJson(base, "/_emulator/clock", {}, { advanceMs: ms });
  assert.equal(res.status, 200);
}

/** A text of about `words` tokens, unique to `tag`. */
const long = (tag: string, words: number) =>
  Array.from({ length: words }, (_, i) => `${tag}${i % 7}`).join(" ");

/** A Messages call's usage (JSON, or the stream's `message_start` and `message_delta`). */
async function messages(body: any, key = KEYS[0], stream = false): Promise<any> {
  const res = await postJson(base, "/anthropic/v1/messages", anthropic(key), {
    model: "claude-sonnet-4-5",
    max_tokens: 64,
    ...body,
    ...(stream ? { stream: true } : {}),
  });
  assert.equal(res.status, 200, res.text);
  if (!stream) return res.json.usage;
  const events = sseEvents(res.text).map((e) => e.data as any);
  const start = events.find((e) => e.type === "message_start").message.usage;
  const delta = events.find((e) => e.type === "message_delta").usage;
  assert.equal(delta.cache_read_input_tokens, start.cache_read_input_tokens);
  assert.equal(delta.cache_creation_input_tokens, start.cache_creation_input_tokens);
  return start;
}

const system = (tag: string, ttl?: "1h") => [{
  type: "text",
  text: long(tag, 1500),
  cache_control: { type: "ephemeral", ...(ttl ? { ttl } : {}) },
}];

const total = (u: any) =>
  u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;

Deno.test("Anthropic: a breakpoint's prefix is written, then read by the next turn, whose new breakpoint is written", async () => {
  const first = await messages({
    system: system("alpha"),
    messages: [{ role: "user", content: "first question" }],
  });
  assert.equal(first.cache_read_input_tokens, 0);
  assert.ok(first.cache_creation_input_tokens >= 1500, JSON.stringify(first));
  assert.equal(first.cache_creation.ephemeral_5m_input_tokens, first.cache_creation_input_tokens);
  assert.equal(first.cache_creation.ephemeral_1h_input_tokens, 0);
  // The system prompt's breakpoint, then one on the conversation's last turn (Claude Code's way).
  const turns = [
    { role: "user", content: "first question" },
    { role: "assistant", content: "an answer" },
    {
      role: "user",
      content: [{ type: "text", text: "second question", cache_control: { type: "ephemeral" } }],
    },
  ];
  const second = await messages({ system: system("alpha"), messages: turns }, KEYS[0], true);
  assert.equal(second.cache_read_input_tokens, first.cache_creation_input_tokens);
  assert.ok(second.cache_creation_input_tokens > 0, "the turns after the system prompt");
  assert.equal(second.input_tokens, 0, "all of it is read or written, up to its last block");
  assert.equal(total(second), second.cache_read_input_tokens + second.cache_creation_input_tokens);
  // The same conversation again: all of it up to the last breakpoint is read.
  const third = await messages({ system: system("alpha"), messages: turns });
  assert.equal(third.cache_creation_input_tokens, 0);
  assert.equal(
    third.cache_read_input_tokens,
    second.cache_read_input_tokens + second.cache_creation_input_tokens,
  );
  // A later turn finds the previous breakpoint within 20 blocks before its own.
  const fourth = await messages({
    system: system("alpha"),
    messages: [
      ...turns.slice(0, 2),
      { role: "user", content: [{ type: "text", text: "second question" }] },
      { role: "assistant", content: "another answer" },
      {
        role: "user",
        content: [{ type: "text", text: "third question", cache_control: { type: "ephemeral" } }],
      },
    ],
  });
  assert.equal(fourth.cache_read_input_tokens, third.cache_read_input_tokens);
});

Deno.test("Anthropic: caches are per upstream key and per model, and nothing is cached without a breakpoint or under the minimum", async () => {
  const body = { system: system("beta"), messages: [{ role: "user", content: "hello" }] };
  const written = await messages(body);
  assert.ok(written.cache_creation_input_tokens > 0);
  assert.ok((await messages(body)).cache_read_input_tokens > 0);
  const otherKey = await messages(body, KEYS[1]);
  assert.equal(otherKey.cache_read_input_tokens, 0, "another key's cache holds none of it");
  assert.equal(otherKey.cache_creation_input_tokens, written.cache_creation_input_tokens);
  const otherModel = await messages({ ...body, model: "claude-opus-4-1" });
  assert.equal(otherModel.cache_read_input_tokens, 0, "another model's neither");
  // Opus 4.5 caches from 4,096 tokens: 1,500 are not cached.
  const small = await messages({ ...body, model: "claude-opus-4-5" });
  assert.equal(small.cache_creation_input_tokens + small.cache_read_input_tokens, 0);
  const unmarked = {
    system: long("gamma", 1500),
    messages: [{ role: "user", content: "hello" }],
  };
  await messages(unmarked);
  const again = await messages(unmarked);
  assert.equal(again.cache_creation_input_tokens + again.cache_read_input_tokens, 0);
  // A top-level `cache_control` marks the last block.
  const auto = { ...unmarked, cache_control: { type: "ephemeral" } };
  assert.ok((await messages(auto)).cache_creation_input_tokens > 1500);
  assert.ok((await messages(auto)).cache_read_input_tokens > 1500);
});

Deno.test("Anthropic: 5-minute entries expire 5 minutes after their last use, 1-hour ones after an hour", async () => {
  const short = { system: system("delta"), messages: [{ role: "user", content: "hi" }] };
  const long1h = { system: system("epsilon", "1h"), messages: [{ role: "user", content: "hi" }] };
  const written = await messages(long1h);
  assert.equal(
    written.cache_creation.ephemeral_1h_input_tokens,
    written.cache_creation_input_tokens,
  );
  assert.equal(written.cache_creation.ephemeral_5m_input_tokens, 0);
  await messages(short);
  await advance(4 * 60_000);
  assert.ok((await messages(short)).cache_read_input_tokens > 0, "read: refreshed for 5 minutes");
  await advance(4 * 60_000);
  assert.ok((await messages(short)).cache_read_input_tokens > 0, "4 minutes after the last read");
  await advance(5 * 60_000 + 1000);
  const expired = await messages(short);
  assert.equal(expired.cache_read_input_tokens, 0);
  assert.ok(expired.cache_creation_input_tokens > 0, "written again");
  assert.ok((await messages(long1h)).cache_read_input_tokens > 0, "13 minutes: the hour holds");
  await advance(61 * 60_000);
  assert.equal((await messages(long1h)).cache_read_input_tokens, 0);
});

/** A Responses call's usage. */
async function responses(body: any, key = KEYS[0]): Promise<any> {
  const res = await postJson(base, "/openai/v1/responses", bearer(key), {
    model: "gpt-5.4",
    ...body,
  });
  assert.equal(res.status, 200, res.text);
  return res.json;
}

Deno.test("OpenAI Responses: prompts of 1,024 tokens and more are cached in 128-token steps, per prompt_cache_key", async () => {
  const instructions = long("zeta", 1300);
  const first = await responses({ instructions, input: "one" });
  assert.equal(first.usage.input_tokens_details.cached_tokens, 0);
  const second = await responses({ instructions, input: "two" });
  const cached = second.usage.input_tokens_details.cached_tokens;
  assert.ok(cached >= 1024 && cached <= 1300, String(cached));
  assert.equal((cached - 1024) % 128, 0, "a multiple of 128 past 1,024");
  assert.ok(cached <= second.usage.input_tokens);
  // Another prompt_cache_key is another bucket.
  const keyed = await responses({ instructions, input: "two", prompt_cache_key: "conv-1" });
  assert.equal(keyed.usage.input_tokens_details.cached_tokens, 0);
  const keyedAgain = await responses({ instructions, input: "three", prompt_cache_key: "conv-1" });
  assert.equal(keyedAgain.usage.input_tokens_details.cached_tokens, cached);
  // Short prompts are never cached.
  await responses({ input: "short prompt" });
  const short = await responses({ input: "short prompt" });
  assert.equal(short.usage.input_tokens_details.cached_tokens, 0);
  // Another key's cache holds nothing of it.
  const other = await responses({ instructions, input: "two" }, KEYS[1]);
  assert.equal(other.usage.input_tokens_details.cached_tokens, 0);
});

Deno.test("OpenAI Responses: a previous_response_id turn reads the conversation it continues", async () => {
  const first = await responses({ input: [{ role: "user", content: long("eta", 1400) }] });
  const next = await responses({ previous_response_id: first.id, input: "and then?" });
  const cached = next.usage.input_tokens_details.cached_tokens;
  assert.ok(cached >= 1280, String(cached));
  assert.ok(next.usage.input_tokens > first.usage.input_tokens);
  await advance(5 * 60_000 + 1000);
  const late = await responses({ previous_response_id: next.id, input: "still there?" });
  assert.equal(late.usage.input_tokens_details.cached_tokens, 0, "expired after 5 idle minutes");
});

Deno.test("OpenAI chat completions: the same automatic caching, as prompt_tokens_details.cached_tokens", async () => {
  const messages = [{ role: "system", content: long("theta", 1200) }];
  const chat = async (content: string) => {
    const res = await postJson(base, "/openai/v1/chat/completions", bearer(KEYS[0]), {
      model: "gpt-5.4",
      messages: [...messages, { role: "user", content }],
    });
    assert.equal(res.status, 200, res.text);
    return res.json.usage;
  };
  assert.equal((await chat("a")).prompt_tokens_details.cached_tokens, 0);
  const usage = await chat("b");
  assert.equal(usage.prompt_tokens_details.cached_tokens, 1152);
  assert.ok(usage.prompt_tokens >= 1200);
});

Deno.test("Gemini: implicit caching of a shared prefix, reported as cachedContentTokenCount", async () => {
  const generate = async (text: string, model = "gemini-2.5-flash") => {
    const res = await postJson(
      base,
      `/gemini/v1beta/models/${model}:generateContent`,
      goog(KEYS[0]),
      {
        systemInstruction: { parts: [{ text: long("iota", 2500) }] },
        contents: [{ role: "user", parts: [{ text }] }],
      },
    );
    assert.equal(res.status, 200, res.text);
    return res.json.usageMetadata;
  };
  assert.equal((await generate("first")).cachedContentTokenCount, undefined);
  const usage = await generate("second");
  assert.equal(usage.cachedContentTokenCount, 2500);
  assert.deepEqual(usage.cacheTokensDetails, [{ modality: "TEXT", tokenCount: 2500 }]);
  assert.ok(usage.promptTokenCount > usage.cachedContentTokenCount);
  // Gemini 3 caches from 4,096 tokens.
  await generate("first", "gemini-3-pro-preview");
  assert.equal(
    (await generate("second", "gemini-3-pro-preview")).cachedContentTokenCount,
    undefined,
  );
});
