/**
 * Lossless or loud, through the real gateway to the emulator: a translated call that is adapted
 * says so — `x-switchyard-adapted` on its JSON and streamed answers, `adapted` in its access-log
 * line, `switchyard_adapted_calls_total{kind}` — and a pass-through call never does; in strict
 * mode (the key's setting, or `x-switchyard-strict: true`) the same call is a 400 in the client's
 * envelope naming its field, made upstream never and charged nothing, while a call with nothing
 * to adapt runs as before.
 */
import assert from "node:assert/strict";
import { requestLogged } from "./helpers/gateway.ts";
import { anthropic, bearer, goog, type Json, post, postJson } from "./helpers/http.ts";
import { booksOf, ledgerOf } from "./helpers/store.ts";
import { MAX_OUT, startStack, TEST_PRICE } from "./helpers/setup.ts";

const ADMIN = "adapted-admin-token-0123456789";
const stack = await startStack({
  admin: { token: ADMIN },
  models: {
    // A chat-only upstream with web search priced: a call may offer it (it is not sent).
    "local-search": {
      provider: "local",
      upstream: "qwen3-coder",
      price: { ...TEST_PRICE, tools: { web_search: 0.01 } },
      ...MAX_OUT,
    },
  },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

const ADAPTED = "x-switchyard-adapted";
const STRICT = "x-switchyard-strict";

/** A Responses request on Claude (Messages upstream, temperature 0–1) with `temperature: 2`. */
const HOT = { model: "claude-test", input: "Say hi.", temperature: 2, max_output_tokens: 64 };
/** A chat request on Claude with a `seed` (Messages has none). */
const SEEDED = {
  model: "claude-test",
  max_tokens: 64,
  seed: 7,
  messages: [{ role: "user", content: "Say hi." }],
};

/** The request id of an answer (every answer has one). */
const idOf = (res: { headers: Headers }) => res.headers.get("x-request-id")!;

/** The upstream requests made since `count`, their bodies. */
async function upstreamBodies(count: number): Promise<Json[]> {
  return (await stack.upstreamSince(count)).map((r) => r.body as Json);
}

/** `switchyard_adapted_calls_total{kind}` now. */
async function adaptedCount(kind: string): Promise<number> {
  const res = await fetch(`${gateway.url}/metrics`, { headers: bearer(ADMIN) });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  const line = text.split("\n").find((l) =>
    l.startsWith(`switchyard_adapted_calls_total{kind="${kind}"} `)
  );
  return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : 0;
}

Deno.test("a Responses client's temperature 2 on a Messages upstream: clamped and said so, JSON and stream", async () => {
  const { key } = await gateway.createKey("adapted-hot", "--credit", "5");
  const metricBefore = await adaptedCount("temperature_clamped");
  const seen = await stack.upstreamCount();
  const json = await postJson(gateway.url, "/v1/responses", bearer(key), HOT);
  assert.equal(json.status, 200, json.text);
  assert.equal(json.headers.get(ADAPTED), "temperature_clamped");
  const [sent] = await upstreamBodies(seen);
  assert.equal(sent.temperature, 1, "sent clamped into Messages' range");
  const entry = await requestLogged(gateway, idOf(json));
  assert.deepEqual(entry.adapted, ["temperature_clamped"]);

  const stream = await post(gateway.url, "/v1/responses", bearer(key), { ...HOT, stream: true });
  assert.equal(stream.status, 200);
  assert.equal(stream.headers.get(ADAPTED), "temperature_clamped", "on a streamed answer too");
  assert.match(await stream.text(), /response\.completed/);
  assert.deepEqual((await requestLogged(gateway, idOf(stream))).adapted, ["temperature_clamped"]);
  assert.equal(await adaptedCount("temperature_clamped"), metricBefore + 2);
});

Deno.test("a chat client's seed on a Messages upstream: not sent, and said so", async () => {
  const { key } = await gateway.createKey("adapted-seed", "--credit", "5");
  const seen = await stack.upstreamCount();
  const json = await postJson(gateway.url, "/v1/chat/completions", bearer(key), {
    ...SEEDED,
    presence_penalty: 0.5,
  });
  assert.equal(json.status, 200, json.text);
  assert.equal(json.headers.get(ADAPTED), "seed_dropped,penalties_dropped");
  const [sent] = await upstreamBodies(seen);
  assert.equal(sent.seed, undefined);
  assert.deepEqual((await requestLogged(gateway, idOf(json))).adapted, [
    "seed_dropped",
    "penalties_dropped",
  ]);
  const stream = await post(gateway.url, "/v1/chat/completions", bearer(key), {
    ...SEEDED,
    stream: true,
  });
  assert.equal(stream.headers.get(ADAPTED), "seed_dropped");
  assert.match(await stream.text(), /\[DONE\]/);
});

Deno.test("pass-through and calls with nothing to adapt carry no header and no log field", async () => {
  const { key } = await gateway.createKey("adapted-none", "--credit", "5");
  // The same fields on upstreams of the client's own protocol: passed through as they are.
  const calls = [
    postJson(gateway.url, "/v1/responses", bearer(key), { ...HOT, model: "gpt-test" }),
    postJson(gateway.url, "/v1/chat/completions", bearer(key), { ...SEEDED, model: "local-test" }),
    // Translated, with nothing the target cannot say.
    postJson(gateway.url, "/v1/responses", bearer(key), { ...HOT, temperature: 0.5 }),
  ];
  for (const answer of await Promise.all(calls)) {
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.headers.get(ADAPTED), null);
    const entry = await requestLogged(gateway, idOf(answer));
    assert.equal(entry.adapted, undefined);
  }
});

/** Asserts a strict refusal: a 400 naming `field`, no upstream call, nothing charged. */
async function refused(
  account: string,
  answer: { status: number; json: Json; headers: Headers; text: string },
  seen: number,
): Promise<void> {
  assert.equal(answer.status, 400, answer.text);
  assert.equal(answer.headers.get(ADAPTED), null);
  await requestLogged(gateway, idOf(answer));
  assert.equal(await stack.upstreamCount(), seen, "nothing was sent upstream");
  const books = await booksOf(gateway, account);
  assert.deepEqual([books.charged, books.held, books.open], [0, 0, 0]);
  assert.deepEqual(await ledgerOf(gateway, { requestId: idOf(answer) }), []);
}

Deno.test("x-switchyard-strict: true refuses the adaptation in the client's envelope, charging nothing", async () => {
  const account = "adapted-strict-header";
  const { key } = await gateway.createKey(account, "--credit", "5");
  const strict = { [STRICT]: "true" };

  let seen = await stack.upstreamCount();
  const responses = await postJson(gateway.url, "/v1/responses", {
    ...bearer(key),
    ...strict,
  }, HOT);
  await refused(account, responses, seen);
  assert.equal(responses.json.error.param, "temperature");
  assert.equal(responses.json.error.code, "unsupported_parameter");
  assert.match(responses.json.error.message, /temperature_clamped/);

  seen = await stack.upstreamCount();
  const messages = await postJson(gateway.url, "/v1/messages", anthropic(key, strict), {
    model: "gemini-test",
    max_tokens: 64,
    messages: [
      { role: "user", content: "Say hi." },
      { role: "assistant", content: "Hi." },
      { role: "system", content: "Answer in French." },
      { role: "user", content: "Again." },
    ],
  });
  await refused(account, messages, seen);
  assert.equal(messages.json.type, "error");
  assert.equal(messages.json.error.type, "invalid_request_error");
  assert.match(messages.json.error.message, /'messages'.*system_hoisted/);

  seen = await stack.upstreamCount();
  const gemini = await postJson(
    gateway.url,
    "/v1beta/models/claude-test:generateContent",
    { ...goog(key), ...strict },
    {
      contents: [{ role: "user", parts: [{ text: "Say hi." }] }],
      generationConfig: { seed: 3, maxOutputTokens: 64 },
    },
  );
  await refused(account, gemini, seen);
  assert.equal(gemini.json.error.status, "INVALID_ARGUMENT");
  assert.match(gemini.json.error.message, /'generationConfig\.seed'.*seed_dropped/);

  // Nothing to adapt: strict changes nothing (translated, and passed through).
  for (const body of [{ ...HOT, temperature: 0.5 }, { ...HOT, model: "gpt-test" }]) {
    const ok = await postJson(gateway.url, "/v1/responses", { ...bearer(key), ...strict }, body);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.headers.get(ADAPTED), null);
  }
  const books = await booksOf(gateway, account);
  assert.equal(books.settled, 2, "the two calls that ran are charged");
});

Deno.test("a strict key refuses adaptations; the header cannot lift it; a bad header value is a 400", async () => {
  const account = "adapted-strict-key";
  const { key, id } = await gateway.createKey(account, "--credit", "5");
  // Not strict yet: adapted.
  const before = await postJson(gateway.url, "/v1/chat/completions", bearer(key), SEEDED);
  assert.equal(before.headers.get(ADAPTED), "seed_dropped");
  const charged = (await booksOf(gateway, account)).charged;

  const update = await gateway.cli("keys", "update", id, "--strict", "on", "--json");
  assert.equal(update.code, 0, update.stderr);
  assert.equal(JSON.parse(update.stdout).strict, true);
  for (const headers of [bearer(key), { ...bearer(key), [STRICT]: "false" }]) {
    const seen = await stack.upstreamCount();
    const answer = await postJson(gateway.url, "/v1/chat/completions", headers, SEEDED);
    assert.equal(answer.status, 400, answer.text);
    assert.equal(answer.json.error.param, "seed");
    assert.match(answer.json.error.message, /seed_dropped/);
    assert.equal(await stack.upstreamCount(), seen);
    assert.deepEqual(await ledgerOf(gateway, { requestId: idOf(answer) }), []);
  }
  assert.equal((await booksOf(gateway, account)).charged, charged, "the refusals charged nothing");

  // Nothing to adapt, or passed through: the strict key's calls run as any other's.
  const plain = await postJson(gateway.url, "/v1/chat/completions", bearer(key), {
    ...SEEDED,
    seed: undefined,
  });
  assert.equal(plain.status, 200, plain.text);
  assert.equal(plain.headers.get(ADAPTED), null);
  const native = await postJson(gateway.url, "/v1/chat/completions", bearer(key), {
    ...SEEDED,
    model: "local-test",
  });
  assert.equal(native.status, 200, native.text);

  const bad = await postJson(gateway.url, "/v1/chat/completions", {
    ...bearer(key),
    [STRICT]: "maybe",
  }, SEEDED);
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, STRICT);

  // Off again: adapted again.
  const off = await gateway.cli("keys", "update", id, "--strict", "off");
  assert.equal(off.code, 0, off.stderr);
  const after = await postJson(gateway.url, "/v1/chat/completions", bearer(key), SEEDED);
  assert.equal(after.status, 200, after.text);
  assert.equal(after.headers.get(ADAPTED), "seed_dropped");
});

Deno.test("keys are made strict by the CLI and the admin API, and listed with it", async () => {
  const made = await gateway.createKey("adapted-made-strict", "--credit", "5", "--strict", "on");
  const refusedCall = await postJson(gateway.url, "/v1/responses", bearer(made.key), HOT);
  assert.equal(refusedCall.status, 400, refusedCall.text);
  assert.equal(refusedCall.json.error.param, "temperature");
  const listed = await gateway.cli("keys", "list", "--json");
  const row = JSON.parse(listed.stdout).find((k: Json) => k.id === made.id);
  assert.equal(row.strict, true);
  const bad = await gateway.cli("keys", "create", "--account", "adapted-bad", "--strict", "maybe");
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--strict must be on or off/);

  const admin = { ...bearer(ADMIN), "content-type": "application/json" };
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${gateway.url}/admin/api${path}`, {
      method,
      headers: admin,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  };
  const created = await api("POST", "/keys", {
    account: "adapted-admin",
    credit_usd: "5",
    strict: true,
  });
  assert.equal(created.status, 201);
  assert.equal((await api("GET", `/keys/${created.json.id}`)).json.strict, true);
  const strictCall = await postJson(gateway.url, "/v1/responses", bearer(created.json.key), HOT);
  assert.equal(strictCall.status, 400);
  const patched = await api("PATCH", `/keys/${created.json.id}`, { strict: false });
  assert.equal(patched.json.strict, false);
  const lax = await postJson(gateway.url, "/v1/responses", bearer(created.json.key), HOT);
  assert.equal(lax.status, 200, JSON.stringify(lax.json));
  assert.equal(lax.headers.get(ADAPTED), "temperature_clamped");
  const wrong = await api("PATCH", `/keys/${created.json.id}`, { strict: "yes" });
  assert.equal(wrong.status, 400);
  assert.equal(wrong.json.error.param, "strict");
});

Deno.test("web search offered to a chat-only upstream: answered without it and said so; strict refuses", async () => {
  // What Codex does on every turn: its function tools and a hosted web search.
  const body = {
    model: "local-search",
    input: "Say hi.",
    max_output_tokens: 64,
    tools: [
      { type: "function", name: "f", parameters: { type: "object", properties: {} } },
      { type: "web_search" },
    ],
  };
  const { key } = await gateway.createKey("adapted-search", "--credit", "5");
  const seen = await stack.upstreamCount();
  const json = await postJson(gateway.url, "/v1/responses", bearer(key), body);
  assert.equal(json.status, 200, json.text);
  assert.equal(json.headers.get(ADAPTED), "web_search_dropped");
  const [sent] = await upstreamBodies(seen);
  assert.deepEqual((sent.tools as Json[]).map((t) => (t.function as Json).name), ["f"]);
  assert.equal(sent.web_search_options, undefined);
  // Billed for what ran: no search call.
  const [entry] = await ledgerOf(gateway, { requestId: idOf(json) });
  assert.ok(!entry.units.some((u: { unit: string }) => u.unit.includes("search")));

  const strict = await postJson(gateway.url, "/v1/responses", {
    ...bearer(key),
    [STRICT]: "true",
  }, body);
  assert.equal(strict.status, 400, strict.text);
  assert.equal(strict.json.error.param, "tools[1]");
  assert.match(strict.json.error.message, /web_search_dropped|web search/);
});
