/**
 * The call lifecycle is structurally safe: a fault at any step after the hold is taken — thrown
 * inside the gateway by its test-only fault points (`SWITCHYARD_TEST_HOOKS=1`, the
 * `x-switchyard-test-fault` header naming the step) — leaves no hold held and no upstream stream
 * open, on JSON and streamed calls, passed through and translated. And a client value that
 * reaches a stricter grammar than JSON (a model id copied into a response header, a metric label,
 * an upstream URL) is refused at the edge with a 400 in the route's envelope, before any hold.
 */
import assert from "node:assert/strict";
import { eventually, startStack, usageOf } from "./helpers/setup.ts";

const stack = await startStack({
  env: { SWITCHYARD_TEST_HOOKS: "1" },
  models: {
    // An open pattern: the client's id is passed upstream as it is.
    "local-*": { provider: "local", price: { input: 2.5, output: 15 }, maxOutputTokens: 8192 },
  },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

const POINTS = ["held", "answered", "relay", "settle", "respond"] as const;

const CALLS = [
  { name: "Responses JSON, pass-through", model: "gpt-test", stream: false },
  { name: "Responses SSE, pass-through", model: "gpt-test", stream: true },
  { name: "Responses JSON, translated", model: "claude-test", stream: false },
  { name: "Responses SSE, translated", model: "claude-test", stream: true },
];

/** Upstream streams the emulator started that are still open. */
async function openUpstreamStreams(): Promise<number> {
  const stats = await stack.emulatorStats();
  return stats.streamsStarted - stats.streamsCompleted - stats.streamsCancelled;
}

Deno.test("a fault at any step after the hold leaves nothing held and no upstream stream open", async () => {
  const { key } = await gateway.createKey("lifecycle", "--credit", "10", "--rpm", "0");
  for (const call of CALLS) {
    for (const point of POINTS) {
      const label = `${call.name}, fault at ${point}`;
      const res = await fetch(`${gateway.url}/v1/responses`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
          "x-switchyard-test-fault": point,
        },
        body: JSON.stringify({
          model: call.model,
          input: "Tell me a story [[emulate words=40]]",
          stream: call.stream,
        }),
      });
      const text = await res.text();
      // A stream's settlement fails after its answer reached the client: the client got it all.
      if (point === "settle" && call.stream) {
        assert.equal(res.status, 200, `${label}: ${text.slice(0, 200)}`);
      } else {
        assert.equal(res.status, 500, `${label}: ${text.slice(0, 200)}`);
        assert.equal(JSON.parse(text).error.type, "server_error", label);
      }
      await eventually(async () => (await usageOf(gateway, key)).held_nanousd === 0)
        .catch(() => assert.fail(`${label}: a hold outlived its call`));
      await eventually(async () => (await openUpstreamStreams()) === 0)
        .catch(() => assert.fail(`${label}: an upstream stream stayed open`));
    }
  }
  // The failed calls cost nothing; only the streams whose answer was relayed whole are charged
  // (on the estimate recorded with their hold, as a crash would be).
  const usage = await usageOf(gateway, key);
  assert.equal(usage.requests, CALLS.filter((c) => c.stream).length);
  assert.equal(usage.held_nanousd, 0);
});

/** `id` percent-encoded for a path (a lone surrogate as the bytes a broken client would send). */
function segment(id: string): string {
  try {
    return encodeURIComponent(id);
  } catch {
    return encodeURIComponent(id.replace(/[\ud800-\udfff]/g, "")) + "%ED%A0%80";
  }
}

Deno.test("model ids outside the grammar are 400s in every protocol, before any hold or upstream call", async () => {
  const { key } = await gateway.createKey("model-grammar", "--credit", "10", "--rpm", "0");
  const ids = [
    "local-é",
    "local-模型",
    "local-a b",
    "local-\r\nx-injected: 1",
    "local-\u0000",
    "local-\ud800",
    "",
  ];
  const before = await stack.emulatorStats();
  for (const id of ids) {
    const label = JSON.stringify(id);
    const responses = await fetch(`${gateway.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: id, input: "hi", stream: true }),
    });
    const body = await responses.json();
    assert.equal(responses.status, 400, label);
    assert.equal(body.error.param, "model", label);
    const messages = await fetch(`${gateway.url}/v1/messages`, {
      method: "POST",
      headers: {
        "x-api-key": key,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
      },
      body: JSON.stringify({
        model: id,
        max_tokens: 16,
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    assert.equal(messages.status, 400, label);
    assert.equal((await messages.json()).error.type, "invalid_request_error", label);
    const gemini = await fetch(
      `${gateway.url}/v1beta/models/${segment(id)}:generateContent`,
      {
        method: "POST",
        headers: { "x-goog-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ parts: [{ text: "hi" }] }] }),
      },
    );
    assert.ok([400, 404, 405].includes(gemini.status), `${label}: ${gemini.status}`);
    assert.equal((await gemini.json()).error.code, gemini.status, label);
  }
  // An id of the grammar still reaches the open pattern, and its header carries it.
  const ok = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "local-Qwen/Qwen3:8b@q4",
      messages: [{ role: "user", content: "hi" }],
    }),
  });
  assert.equal(ok.status, 200, await ok.clone().text());
  assert.equal(ok.headers.get("x-switchyard-model"), "local-Qwen/Qwen3:8b@q4");
  await ok.body?.cancel();
  const usage = await usageOf(gateway, key);
  assert.equal(usage.requests, 1);
  assert.equal(usage.held_nanousd, 0);
  const after = await stack.emulatorStats();
  assert.equal(after.requests, before.requests + 1, "no refused id reached the upstream");
});
