/**
 * A call does not keep its request's body longer than it must. Agents send a conversation of
 * hundreds of kilobytes with every call and stream the answer for a minute: a stream that held its
 * body (the text and what it parsed to) would hold it twice over until it ended, and a call that
 * held the parsed conversation while it waits for its upstream would have young collections copy
 * its many small objects again and again. The gateway reports its live JavaScript heap
 * (`SWITCHYARD_MEMORY_REPORT_MS`, collected first with `--expose-gc`); with slow streams of large
 * bodies open, the heap has not grown by anything like their bodies, and with calls of long
 * conversations waiting for their upstream, by not much more than their text.
 */
import assert from "node:assert/strict";
import { startStack } from "./helpers/setup.ts";
import { logEntries } from "./helpers/gateway.ts";
import { waitFor } from "./helpers/poll.ts";

const REPORT_MS = 200;
/** Each request's body, about. */
const BODY_BYTES = 2 * 1024 * 1024;

const stack = await startStack({
  server: { maxBodyBytes: 4 * BODY_BYTES },
  env: { SWITCHYARD_MEMORY_REPORT_MS: String(REPORT_MS), DENO_V8_FLAGS: "--expose-gc" },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

/** The live heap of the first `memory` report logged after `since` (ms since the epoch). */
async function heapAfter(since: number): Promise<number> {
  const entry = await waitFor(
    () =>
      logEntries(gateway).find((e) => e.msg === "memory" && Date.parse(e.time) > since) ?? false,
    { what: "a memory report" },
  );
  return entry.heap_used as number;
}

/** A POST of `body` (JSON, or its text) to the gateway's `path`. */
function post(
  call: { path: string; headers: Record<string, string> },
  body: unknown,
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${gateway.url}${call.path}`, {
    method: "POST",
    headers: { ...call.headers, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    signal,
  });
}

/** One short call of each kind answered (what it runs compiled), then the heap to compare with. */
async function warmHeap(
  calls: { name: string; path: string; headers: Record<string, string>; body: unknown }[],
): Promise<number> {
  for (const call of calls) {
    const res = await post(call, call.body);
    const text = await res.text();
    assert.equal(res.status, 200, `${call.name}: ${text}`);
  }
  return await heapAfter(Date.now());
}

/** A slow answer's prompt (an event a second) padded to `BODY_BYTES` with words unique to `tag`. */
function prompt(tag: string): string {
  const word = `${tag}-${crypto.randomUUID()} `;
  return "[[emulate delay=1000 words=120]] " + word.repeat(Math.ceil(BODY_BYTES / word.length));
}

interface Case {
  name: string;
  path: string;
  headers: Record<string, string>;
  body: (text: string) => unknown;
}

/** A streamed Messages request to `model` whose one user message is the text. */
const messagesBody = (model: string) => (text: string) => ({
  model,
  max_tokens: 1024,
  stream: true,
  messages: [{ role: "user", content: text }],
});

const cases = (key: string): Case[] => [
  {
    name: "Messages, passed through",
    path: "/v1/messages",
    headers: { "x-api-key": key, "anthropic-version": "2023-06-01" },
    body: messagesBody("claude-test"),
  },
  {
    name: "Responses, passed through",
    path: "/v1/responses",
    headers: { authorization: `Bearer ${key}` },
    body: (text) => ({ model: "gpt-test", input: text, stream: true }),
  },
  {
    name: "Messages on a chat completions upstream, translated",
    path: "/v1/messages",
    headers: { "x-api-key": key, "anthropic-version": "2023-06-01" },
    body: messagesBody("local-test"),
  },
];

Deno.test({
  name:
    "slow streams of 2 MB requests (Messages and Responses passed through, Messages translated) do not keep their bodies while they stream",
  async fn() {
    const { key } = await gateway.createKey("open-streams", "--credit", "100", "--rpm", "0");
    // Once warmed up (one short stream of each kind), the heap to compare with.
    const before = await warmHeap(cases(key).map((c) => ({ ...c, body: c.body("Hello.") })));

    const abort = new AbortController();
    const open: ReadableStreamDefaultReader<Uint8Array>[] = [];
    try {
      for (const c of cases(key)) {
        for (let i = 0; i < 2; i++) {
          const res = await post(c, c.body(prompt(`${c.name}-${i}`)), abort.signal);
          assert.equal(res.status, 200, c.name);
          const reader = res.body!.getReader();
          // Its first event: the answer is being relayed, the request long sent.
          const first = await reader.read();
          assert.ok(!first.done && first.value.length > 0, c.name);
          open.push(reader);
        }
      }
      const during = await heapAfter(Date.now());
      const bodies = open.length * BODY_BYTES;
      // A stream that kept its body would add two of them (its text and its parsed value).
      assert.ok(
        during - before < bodies / 8,
        `${open.length} open streams of ${BODY_BYTES} B requests grew the live heap by ` +
          `${during - before} B (${bodies} B of bodies)`,
      );
    } finally {
      abort.abort();
      await Promise.all(open.map((reader) => reader.cancel().catch(() => {})));
    }
  },
});

/** A conversation of `turns` short turns, each a small object, ending in `last`. */
function conversation(turns: number, tag: string, last: string): string[] {
  const texts = Array.from({ length: turns }, (_, i) => `${tag} turn ${i} ${i * 7919}`);
  return [...texts, last];
}

/** The role of the `i`th of `n` turns: they alternate, ending with the user's. */
const roleOf = (i: number, n: number) => (n - 1 - i) % 2 === 0 ? "user" : "assistant";

/** Turns as OpenAI's messages (chat) and input items (Responses) write them. */
const openaiTurns = (turns: string[]) =>
  turns.map((t, i) => ({ role: roleOf(i, turns.length), content: t }));

/** A text route's call with a conversation as its protocol writes one. */
interface Waiting {
  name: string;
  path: string;
  headers: Record<string, string>;
  body: (turns: string[]) => unknown;
  /** The model's id changes on its way upstream (so the text sent is another string). */
  swapped: boolean;
}

/** Each text route, passed through. */
const waiting = (key: string): Waiting[] => [
  {
    name: "Messages",
    swapped: true,
    path: "/v1/messages",
    headers: { "x-api-key": key, "anthropic-version": "2023-06-01" },
    body: (turns) => ({
      model: "claude-test",
      max_tokens: 1024,
      messages: turns.map((t, i) => ({
        role: roleOf(i, turns.length),
        content: [{ type: "text", text: t }],
      })),
    }),
  },
  {
    name: "Responses",
    swapped: true,
    path: "/v1/responses",
    headers: { authorization: `Bearer ${key}` },
    body: (turns) => ({ model: "gpt-test", input: openaiTurns(turns) }),
  },
  {
    name: "chat completions",
    swapped: true,
    path: "/v1/chat/completions",
    headers: { authorization: `Bearer ${key}` },
    body: (turns) => ({ model: "gpt-test", messages: openaiTurns(turns) }),
  },
  {
    name: "generateContent",
    swapped: false,
    path: "/v1beta/models/gemini-test:generateContent",
    headers: { "x-goog-api-key": key },
    body: (turns) => ({
      contents: turns.map((t, i) => ({
        role: roleOf(i, turns.length) === "user" ? "user" : "model",
        parts: [{ text: t }],
      })),
    }),
  },
];

Deno.test({
  name:
    "calls of long conversations waiting for their upstream (each text route, passed through) keep their bodies as text only",
  async fn() {
    const { key } = await gateway.createKey("waiting-calls", "--credit", "100", "--rpm", "0");
    const before = await warmHeap(
      waiting(key).map((c) => ({ ...c, body: c.body(conversation(2, "warm", "Hello.")) })),
    );

    const count = await stack.upstreamCount();
    let sent = 0;
    /** The text that stays: the client's, and the text sent upstream where it is another. */
    let kept = 0;
    const answers: Promise<Response>[] = [];
    for (const c of waiting(key)) {
      for (let i = 0; i < 2; i++) {
        const turns = conversation(20_000, `${c.name}-${i}`, "[[emulate wait=6000]] Go on.");
        const body = JSON.stringify(c.body(turns));
        sent += body.length;
        kept += c.swapped ? 2 * body.length : body.length;
        answers.push(post(c, body));
      }
    }
    // Every call made (its hold taken, its request sent), none answered yet.
    await waitFor(async () => (await stack.upstreamCount()) >= count + answers.length, {
      what: "every call at its upstream",
    });
    const during = await heapAfter(Date.now());
    for (const res of await Promise.all(answers)) {
      const text = await res.text();
      assert.equal(res.status, 200, text);
    }
    // Each went upstream as its own client sent it (encoded into a buffer the calls share).
    const tags = (await stack.upstreamSince(count)).map((r) =>
      /"([^"]+-\d) turn 0 /.exec(JSON.stringify(r.body))?.[1]
    );
    assert.deepEqual(
      tags.sort(),
      waiting(key).flatMap((c) => [`${c.name}-0`, `${c.name}-1`]).sort(),
    );
    // The client's text stays (another deployment may be tried with it), and so does the text
    // sent upstream where it is another; what the text parsed to — twice its size in small
    // objects here, half of that for one route — does not.
    assert.ok(
      during - before < kept + sent / 4,
      `${answers.length} waiting calls grew the live heap by ${during - before} B: ` +
        `${sent} B of bodies, ${kept} B of text kept`,
    );
  },
});
