/**
 * Each protocol's conversation extractor: Claude Code's session in its header and both forms of
 * `metadata.user_id`, `prompt_cache_key`, `previous_response_id`, the prefix hash (cache
 * breakpoints left out) and extended retention.
 */
import assert from "node:assert/strict";
import { PROTOCOLS } from "../../../src/protocols/index.ts";
import { claudeCodeSession } from "../../../src/protocols/messages/conversation.ts";
import type { CallInput, ConversationId } from "../../../src/protocols/wire.ts";
import { prefixHash } from "../../../src/protocols/conversation.ts";

/** A request's `CallInput` with these headers (the extractors read nothing else of it). */
function input(headers: Record<string, string> = {}): CallInput {
  return {
    url: new URL("http://localhost/"),
    headers: new Headers(headers),
    params: {},
    own: () => ({ contextTokens: 0 }),
    owned: () => undefined,
  };
}

/** The conversation a request names, as the protocol sees it. */
function named(
  protocol: keyof typeof PROTOCOLS,
  value: Record<string, unknown>,
  headers: Record<string, string> = {},
): ConversationId | undefined {
  const text = JSON.stringify(value);
  return PROTOCOLS[protocol].conversation!(input(headers), { text, value });
}

/** The same without its prefix's parts (see the last test). */
function conversation(
  protocol: keyof typeof PROTOCOLS,
  value: Record<string, unknown>,
  headers: Record<string, string> = {},
): Omit<ConversationId, "parts" | "prefixHash"> | undefined {
  const found = named(protocol, value, headers);
  if (!found) return undefined;
  const { parts: _parts, prefixHash: _hash, ...rest } = found;
  return rest;
}

Deno.test("Messages: Claude Code's session from its header, or either form of metadata.user_id", () => {
  const session = "54c1eb09-bc4c-4d2f-98eb-6d2ab2d5e2fe";
  const json = JSON.stringify({ device_id: "d", account_uuid: "", session_id: session });
  assert.equal(claudeCodeSession(json), session);
  assert.equal(claudeCodeSession(`user_abc123_account__session_${session}`), session);
  assert.equal(claudeCodeSession("end-user-42"), undefined, "an application's own user id");
  assert.equal(claudeCodeSession("{not json"), undefined);
  const body = { model: "m", max_tokens: 8, messages: [{ role: "user", content: "hi" }] };
  assert.equal(
    conversation("messages", { ...body, metadata: { user_id: json } })?.id,
    `session:${session}`,
  );
  assert.equal(
    conversation("messages", body, { "x-claude-code-session-id": "from-header" })?.id,
    "session:from-header",
  );
  // Without a session: the prefix, the same for every turn of the conversation.
  const first = conversation("messages", { ...body, system: "You are terse." })!;
  const later = conversation("messages", {
    ...body,
    system: "You are terse.",
    messages: [...body.messages, { role: "assistant", content: "hello" }, {
      role: "user",
      content: "more",
    }],
  })!;
  assert.match(first.id, /^prefix:/);
  assert.equal(later.id, first.id);
  assert.notEqual(conversation("messages", { ...body, system: "You are verbose." })!.id, first.id);
  assert.equal(first.extended, false);
  const hour = {
    ...body,
    system: [{ type: "text", text: "s", cache_control: { type: "ephemeral", ttl: "1h" } }],
  };
  assert.equal(conversation("messages", hour)!.extended, true);
  // A thread: continued by its last answer's id, which each of its answers then names.
  assert.deepEqual(
    conversation("messages", {
      ...body,
      thread: { type: "continue", previous_message_id: "msg_01abc" },
    }),
    { id: "answer:msg_01abc", extended: false, chained: true },
  );
  assert.equal(
    conversation("messages", { ...body, thread: { type: "create" } })!.chained,
    true,
  );
});

Deno.test("Responses: prompt_cache_key, then previous_response_id (chained), then the prefix", () => {
  const body = { model: "m", instructions: "Be brief.", input: "hello" };
  assert.deepEqual(conversation("responses", { ...body, prompt_cache_key: "conv-7" }), {
    id: "cache-key:conv-7",
    extended: false,
  });
  assert.deepEqual(conversation("responses", { ...body, previous_response_id: "resp_1" }), {
    id: "answer:resp_1",
    extended: false,
    chained: true,
  });
  const prefix = conversation("responses", body)!;
  assert.match(prefix.id, /^prefix:/);
  assert.equal(prefix.chained, true);
  assert.equal(conversation("responses", { ...body, store: false })!.chained, undefined);
  // Items after the first user message do not change it.
  const items = [{ role: "user", content: "hello" }];
  const one = conversation("responses", { ...body, input: items })!;
  const two = conversation("responses", {
    ...body,
    input: [...items, { role: "assistant", content: "hi" }, { role: "user", content: "again" }],
  })!;
  assert.equal(two.id, one.id);
  assert.equal(
    conversation("responses", { ...body, prompt_cache_retention: "24h" })!.extended,
    true,
  );
});

Deno.test("chat and generateContent: prompt_cache_key, else the prefix up to the first user turn", () => {
  const messages = [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }];
  assert.equal(
    conversation("chat", { model: "m", messages, prompt_cache_key: "k" })!.id,
    "cache-key:k",
  );
  const first = conversation("chat", { model: "m", messages })!;
  const later = conversation("chat", {
    model: "m",
    messages: [...messages, { role: "assistant", content: "yo" }, { role: "user", content: "?" }],
  })!;
  assert.equal(later.id, first.id);
  const contents = [{ role: "user", parts: [{ text: "hi" }] }];
  const gemini = conversation("generate", { contents })!;
  assert.equal(
    conversation("generate", {
      contents: [...contents, { role: "model", parts: [{ text: "yo" }] }],
    })!.id,
    gemini.id,
  );
  assert.notEqual(
    conversation("generate", { contents, systemInstruction: { parts: [{ text: "x" }] } })!.id,
    gemini.id,
  );
});

Deno.test("the prefix leaves out cache breakpoints, wherever a client puts them", () => {
  const text = (at: "first" | "last" | "none") => ({
    model: "m",
    max_tokens: 8,
    messages: [{
      role: "user",
      content: [
        at === "first"
          ? { cache_control: { type: "ephemeral" }, type: "text", text: "hi" }
          : at === "last"
          ? { type: "text", text: "hi", cache_control: { type: "ephemeral", ttl: "5m" } }
          : { type: "text", text: "hi" },
      ],
    }],
  });
  const ids = (["first", "last", "none"] as const).map((at) =>
    conversation("messages", text(at))!.id
  );
  assert.equal(new Set(ids).size, 1, ids.join(" "));
  // A breakpoint's words inside a text are the text's.
  const quoted = conversation("messages", {
    ...text("none"),
    system: 'say "cache_control":{"type":"ephemeral"} twice',
  })!;
  assert.notEqual(
    quoted.id,
    conversation("messages", { ...text("none"), system: "say  twice" })!.id,
  );
});

Deno.test("a named conversation carries its client prefix too: its hash tells whether two calls began alike", () => {
  const system = "You read files.";
  const tools = [{ name: "read", input_schema: { type: "object" } }];
  const turn = (extra: unknown[]) => ({
    model: "m",
    max_tokens: 8,
    system,
    tools,
    messages: [{ role: "user", content: "hi" }, ...extra],
    metadata: { user_id: "user_abc_account__session_0123456789ab" },
  });
  const first = named("messages", turn([]))!;
  const later = named("messages", turn([{ role: "assistant", content: "yo" }]))!;
  assert.equal(first.id, "session:0123456789ab");
  assert.deepEqual(first.parts, [system, tools, { role: "user", content: "hi" }]);
  assert.equal(prefixHash(later.parts), prefixHash(first.parts), "later turns begin alike");
  assert.notEqual(prefixHash(first.parts), 0);
  const changed = named("messages", { ...turn([]), system: "You write files." })!;
  assert.equal(changed.id, first.id, "the same session");
  assert.notEqual(prefixHash(changed.parts), prefixHash(first.parts), "a prefix of its own");
  const marked = named("messages", {
    ...turn([]),
    system: [{ type: "text", text: system, cache_control: { type: "ephemeral" } }],
  })!;
  const plain = named("messages", { ...turn([]), system: [{ type: "text", text: system }] })!;
  assert.equal(prefixHash(marked.parts), prefixHash(plain.parts), "breakpoints left out");
  // A long prefix (hashed natively): the same again, and not the same with one character changed.
  const long = (end: string) =>
    prefixHash(
      named("responses", { instructions: "x".repeat(10_000) + end, prompt_cache_key: "k" })!.parts,
    );
  assert.equal(long("a"), long("a"));
  // A conversation named by its prefix carries the hash it was named with: the same one.
  for (const instructions of ["short", "x".repeat(10_000)]) {
    const byPrefix = named("responses", { instructions, input: "hi" })!;
    assert.match(byPrefix.id, /^prefix:/);
    assert.equal(byPrefix.prefixHash, prefixHash(byPrefix.parts));
  }
  assert.notEqual(long("a"), long("b"));
  assert.notEqual(long("a"), 0);
});
