/**
 * A client that hangs up late in a long answer pays for what it received, in every chat protocol:
 * Responses, Messages, chat completions and generateContent (SSE and the JSON array), native and
 * translated. Each case first streams the whole answer to learn its price, then streams it again,
 * hangs up after ≥ 90% of the output, and checks that the second call — billed on an estimate, as
 * the ledger shows — costs at least 90% of the first.
 */
import assert from "node:assert/strict";
import { eventually, startStack, usageOf } from "./helpers/setup.ts";
import { ledgerOf } from "./helpers/store.ts";

const stack = await startStack();
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

interface Case {
  name: string;
  path: string;
  headers: (key: string) => Record<string, string>;
  body: (prompt: string, extra: Record<string, unknown>) => unknown;
  /** Conversation state held upstream that the answer continues (its fields for the body). */
  history?: (key: string) => Promise<Record<string, unknown>>;
  /** Counts output deltas in the bytes received so far. */
  marker: RegExp;
}

const PROMPT = "long answer [[emulate words=600";

const CASES: Case[] = [
  {
    name: "Responses SSE, continuing a long conversation held upstream",
    path: "/v1/responses",
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    body: (prompt, extra) => ({ model: "gpt-test", input: prompt, stream: true, ...extra }),
    marker: /event: response\.output_text\.delta/g,
    // 8,000 words of history: most of the answer's price is input the request does not carry.
    history: async (key) => {
      const res = await fetch(`${gateway.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "gpt-test",
          input: "remember this: " + "history ".repeat(8000),
          max_output_tokens: 16,
        }),
      });
      return { previous_response_id: (await res.json()).id };
    },
  },
  {
    name: "Messages SSE",
    path: "/v1/messages",
    headers: (key) => ({ "x-api-key": key, "anthropic-version": "2023-06-01" }),
    body: (prompt) => ({
      model: "claude-test",
      max_tokens: 4096,
      stream: true,
      messages: [{ role: "user", content: prompt }],
    }),
    marker: /"type":"text_delta"/g,
  },
  {
    name: "Messages SSE translated to a Responses upstream",
    path: "/v1/messages",
    headers: (key) => ({ "x-api-key": key, "anthropic-version": "2023-06-01" }),
    body: (prompt) => ({
      model: "gpt-test",
      max_tokens: 4096,
      stream: true,
      messages: [{ role: "user", content: prompt }],
    }),
    marker: /"type":"text_delta"/g,
  },
  {
    name: "generateContent SSE translated to a chat upstream",
    path: "/v1beta/models/local-test:streamGenerateContent?alt=sse",
    headers: (key) => ({ "x-goog-api-key": key }),
    body: (prompt) => ({ contents: [{ role: "user", parts: [{ text: prompt }] }] }),
    marker: /"text":"/g,
  },
  {
    name: "chat completions SSE",
    path: "/v1/chat/completions",
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    body: (prompt) => ({
      model: "gpt-test",
      stream: true,
      messages: [{ role: "user", content: prompt }],
    }),
    marker: /"delta":\{"content":"[^"]/g,
  },
  {
    name: "generateContent SSE",
    path: "/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
    headers: (key) => ({ "x-goog-api-key": key }),
    body: (prompt) => ({ contents: [{ role: "user", parts: [{ text: prompt }] }] }),
    marker: /"text":"/g,
  },
  {
    name: "generateContent JSON array",
    path: "/v1beta/models/gemini-test:streamGenerateContent",
    headers: (key) => ({ "x-goog-api-key": key }),
    body: (prompt) => ({ contents: [{ role: "user", parts: [{ text: prompt }] }] }),
    marker: /"text":"/g,
  },
];

/** The account's settled charges, oldest first. */
async function ledger(account: string): Promise<{ amount: number; estimated: boolean }[]> {
  return (await ledgerOf(gateway, { account }))
    .filter((e) => e.kind === "charge" && e.status === "settled")
    .reverse()
    .map((e) => ({ amount: Number(e.amount), estimated: e.estimated }));
}

for (const c of CASES) {
  Deno.test(`${c.name}: hanging up after 90% of a long answer costs at least 90% of it`, async () => {
    const account = `hangup-${c.name.replace(/\W+/g, "-")}`.slice(0, 64);
    const { key } = await gateway.createKey(account, "--credit", "5");
    const extra = c.history ? await c.history(key) : {};
    const charges = c.history ? 1 : 0;
    const post = (prompt: string, signal?: AbortSignal) =>
      fetch(`${gateway.url}${c.path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...c.headers(key) },
        body: JSON.stringify(c.body(prompt, extra)),
        signal,
      });

    // The whole answer, for its price and its number of deltas.
    const full = await (await post(`${PROMPT}]]`)).text();
    const deltas = full.match(c.marker)?.length ?? 0;
    assert.ok(deltas > 100, `${c.name}: the full answer has ${deltas} deltas`);
    await eventually(async () => (await ledger(account)).length === charges + 1);
    const complete = (await ledger(account))[charges];
    assert.equal(complete.estimated, false, "the whole answer is billed on the upstream's usage");

    // The same answer again, slowly, and the client hangs up after 90% of its deltas.
    const abort = new AbortController();
    const res = await post(`${PROMPT} delay=2]]`, abort.signal);
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let received = "";
    while ((received.match(c.marker)?.length ?? 0) < Math.ceil(deltas * 0.9)) {
      const { done, value } = await reader.read();
      assert.ok(!done, `${c.name}: the stream ended before 90%`);
      received += decoder.decode(value, { stream: true });
    }
    abort.abort();
    await eventually(async () => (await ledger(account)).length === charges + 2);
    const hungUp = (await ledger(account))[charges + 1];
    assert.equal(hungUp.estimated, true, "billed on the relayed estimate");
    assert.ok(
      hungUp.amount >= 0.9 * complete.amount,
      `${c.name}: ${hungUp.amount} nanoUSD after hanging up ≥ 90% of ${complete.amount}`,
    );
    const usage = await usageOf(gateway, key);
    assert.equal(usage.held_nanousd, 0);
    const before = (await ledger(account)).slice(0, charges).reduce((n, row) => n + row.amount, 0);
    assert.equal(usage.spent_nanousd, before + complete.amount + hungUp.amount);
  });
}
