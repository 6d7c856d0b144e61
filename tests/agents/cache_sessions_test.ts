/**
 * Ten-turn sessions of the real agents through the gateway, each on a Claude model served by two
 * Anthropic deployments with several upstream keys each, in front of the emulator's prompt caches
 * (per key: prefix match, breakpoints, TTL): Claude Code natively (Messages, its session resumed
 * by `--resume`), Codex (Responses, `exec resume --last`) and Gemini CLI (generateContent,
 * `--resume latest`) translated. Every upstream call of a turn after the first lands on the
 * deployment and the key of the first turn, and each turn's calls read the provider's cache.
 *
 * Run with `deno task test:agents` (the pinned agents are installed by `tests/helpers/agents.ts`).
 */
import assert from "node:assert/strict";
import { type Agent, claudeCode, codex, geminiCli, install } from "../helpers/agents.ts";
import { keyedEmulator } from "../helpers/affinity.ts";
import { requestLogged, startGateway } from "../helpers/gateway.ts";
import { waitFor } from "../helpers/poll.ts";
import { MAX_OUT, TEST_PRICE } from "../helpers/setup.ts";
import { ledgerOf } from "../helpers/store.ts";

/** Turns of each session. */
const TURNS = 10;

const KEYS = {
  a1: "sk-ant-a1-aaaa1111",
  a2: "sk-ant-a2-aaaa2222",
  a3: "sk-ant-a3-aaaa3333",
  b1: "sk-ant-b1-bbbb1111",
  b2: "sk-ant-b2-bbbb2222",
};

await install();
const { emulator, upstream, anthropicWith } = keyedEmulator(Object.values(KEYS));
// Codex always offers its hosted web search: the models price it, as the built-in catalog does.
const SEARCH = { web_search: 0.01, grounded_prompt: 0.035 };
const twoDeployments = {
  deployments: [{ provider: "ant-a" }, { provider: "ant-b" }],
  upstream: "claude-sonnet-4-5",
  price: { ...TEST_PRICE, tools: SEARCH },
  ...MAX_OUT,
};
const gateway = await startGateway({
  workers: 2,
  config: {
    defaultCatalog: false,
    providers: {
      "ant-a": anthropicWith(KEYS.a1, KEYS.a2, KEYS.a3),
      "ant-b": anthropicWith(KEYS.b1, KEYS.b2),
    },
    // Codex asks for its own model id (an operator's alias of a Claude model).
    models: { "claude-two": twoDeployments, "gpt-5.4": twoDeployments },
  },
});

Deno.test.afterAll(async () => {
  await gateway.stop();
  await emulator.shutdown();
});

/** One upstream text call of a turn, as the ledger and the access log saw it. */
interface Call {
  provider: string | null;
  cachedTokens: number;
  cacheWriteTokens: number;
  affinity: string;
}

/**
 * One turn: its upstream calls, the keys they carried, its last call's Messages body, and (for a
 * client whose conversation is named by its prefix) the prefix of the last request it sent.
 */
interface Turn {
  calls: Call[];
  keys: string[];
  body: string;
  prefix?: string;
}

/**
 * What a client sent: a pass-through in front of the gateway keeping the prefix of each
 * generateContent request (system instruction, tools, first content), which names its
 * conversation (Gemini CLI sends no session id), so that a turn on which the client itself
 * rewrote it is known as such.
 */
interface PrefixRecorder {
  url: string;
  prefixes: string[];
  close(): Promise<void>;
}

function prefixRecorder(target: string): PrefixRecorder {
  const prefixes: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.text();
    if (body && /:(stream)?generateContent$/i.test(url.pathname)) {
      const value = JSON.parse(body);
      const first = Array.isArray(value.contents) ? value.contents[0] : undefined;
      prefixes.push(JSON.stringify([value.systemInstruction, value.tools, first]));
    }
    const headers = new Headers(req.headers);
    headers.delete("host");
    headers.delete("accept-encoding");
    const res = await fetch(`${target}${url.pathname}${url.search}`, {
      method: req.method,
      headers,
      body,
    });
    const back = new Headers(res.headers);
    back.delete("content-length");
    back.delete("content-encoding");
    return new Response(res.body, { status: res.status, headers: back });
  });
  const { port } = server.addr as Deno.NetAddr;
  return { url: `http://127.0.0.1:${port}`, prefixes, close: () => server.shutdown() };
}

/** The account's settled charges, oldest first. */
async function charges(account: string) {
  return (await ledgerOf(gateway, { account }))
    .filter((e) => e.kind === "charge" && e.status === "settled")
    .reverse();
}

/** Runs `agent`'s session of `TURNS` turns on `model` and checks what served each turn. */
async function session(agent: Agent, model: string, recorder?: PrefixRecorder): Promise<void> {
  const account = `cache-${agent.name.replace(/\W/g, "")}`;
  const { key } = await gateway.createKey(account, "--credit", "50", "--rpm", "0");
  const cwd = await Deno.makeTempDir({ prefix: "switchyard-agent-" });
  const home = await Deno.makeTempDir({ prefix: "switchyard-agent-home-" });
  const id = crypto.randomUUID();
  const turns: Turn[] = [];
  try {
    const nonce = crypto.randomUUID();
    await Deno.writeTextFile(`${cwd}/nonce.txt`, `${nonce}\n`);
    for (let i = 0; i < TURNS; i++) {
      const before = await upstream.count();
      const billed = (await charges(account)).length;
      // The second turn runs the agent's file-reading tool: a tool round trip in the history.
      const prompt = i === 1
        ? `Read the file nonce.txt. ${agent.readDirective(`${cwd}/nonce.txt`)}`
        : `Question number ${i + 1}: say something. [[emulate tool=none]]`;
      const out = await agent.run(model, prompt, key, cwd, home, { id, resume: i > 0 });
      assert.equal(out.code, 0, `turn ${i + 1}: ${out.out}`);
      if (i === 1) assert.ok(out.out.includes(nonce), `turn 2 read the file:\n${out.out}`);
      const sent = (await upstream.since(before)).filter((r) =>
        r.method === "POST" && r.path.endsWith("/v1/messages")
      );
      const settled = await waitFor(async () => {
        const entries = (await charges(account)).slice(billed);
        return entries.length >= sent.length && entries;
      }, { what: `turn ${i + 1}'s ${sent.length} settled charges` });
      const calls = await Promise.all(settled.map(async (c) => {
        assert.ok(c.requestId, "a charge names its request");
        return {
          provider: c.provider,
          cachedTokens: c.cache?.cachedTokens ?? 0,
          cacheWriteTokens: (c.cache?.cacheWriteTokens ?? 0) + (c.cache?.cacheWrite1hTokens ?? 0),
          affinity: String((await requestLogged(gateway, c.requestId)).affinity),
        };
      }));
      const turn = {
        calls,
        keys: sent.map((r) => r.headers["x-api-key"]),
        body: JSON.stringify(sent.at(-1)?.body ?? null),
        prefix: recorder?.prefixes.at(-1),
      };
      turns.push(turn);
    }
    console.log(
      `${agent.name}: cache reads per turn`,
      JSON.stringify(turns.map((t) => t.calls.map((c) => c.cachedTokens))),
      `on ${turns[0].calls[0]?.provider} with ${turns[0].keys[0]}`,
    );
    assertCached(turns, nonce);
  } finally {
    await Deno.remove(cwd, { recursive: true }).catch(() => {});
    await Deno.remove(home, { recursive: true }).catch(() => {});
  }
}

/**
 * What of the upstream prompt changed from one turn's last call to the next's: a conversation's
 * placement and cache are keyed by its prefix, so a client that rewrote it (its system prompt, its
 * tools, its first turn) starts anew.
 */
function promptChange(before: string, after: string): string {
  const parse = (text: string) => (JSON.parse(text) ?? {}) as Record<string, unknown>;
  const [a, b] = [parse(before), parse(after)];
  const same = (x: unknown, y: unknown) => JSON.stringify(x) === JSON.stringify(y);
  const changed = ["system", "tools"].filter((part) => !same(a[part], b[part]));
  const [ma, mb] = [a.messages, b.messages].map((m) => (Array.isArray(m) ? m : []) as unknown[]);
  let kept = 0;
  while (kept < ma.length && kept < mb.length && same(ma[kept], mb[kept])) kept++;
  return `the upstream prompt since the turn before: ${
    changed.length ? `${changed.join(" and ")} changed` : "system and tools the same"
  }, the first ${kept} of its ${ma.length} messages kept (${mb.length} now)${
    changed.map((part) => `\n${part}: ${firstDifference(a[part], b[part])}`).join("")
  }`;
}

/** Where two texts (or two values' JSON) first differ, with some text on either side of it. */
function firstDifference(a: unknown, b: unknown): string {
  const text = (v: unknown) => typeof v === "string" ? v : JSON.stringify(v) ?? "";
  const [x, y] = [text(a), text(b)];
  let at = 0;
  while (at < x.length && at < y.length && x[at] === y[at]) at++;
  const around = (text: string) => JSON.stringify(text.slice(Math.max(0, at - 120), at + 240));
  return `at ${at} of ${x.length} → ${y.length} characters:\n  before ${around(x)}\n  after  ${
    around(y)
  }`;
}

/**
 * The session went on from turn to turn (each call carries the history: the first question, and
 * from the third turn on the file the second read), every turn after the first on the first
 * turn's deployment and key, its placement kept, and every call of it reading the cache — as much
 * as the call before it read at least, and at last more than the second turn's first: the history
 * is read from the cache, not only the system prompt and tools.
 *
 * A client whose conversation is named by its prefix (`Turn.prefix`) may itself rewrite it: Gemini
 * CLI lists its skills in its system prompt in the order it found them, which varies from run to
 * run. A turn with a prefix not seen before is a new conversation, placed anew (at most two such
 * turns); a turn with one seen before goes on with that conversation: on its placement, reading
 * its cache.
 */
function assertCached(turns: Turn[], nonce: string): void {
  const [first, ...later] = turns;
  assert.ok(first.calls.length > 0 && first.keys.length > 0, "the first turn reached upstream");
  assert.ok(first.calls.some((c) => c.cacheWriteTokens > 0), "the first turn wrote the cache");
  /** Each conversation's placement and the most its calls have read so far. */
  const conversations = new Map([[first.prefix, {
    key: first.keys[0],
    provider: first.calls[0].provider,
    read: 0,
  }]]);
  let rewrites = 0;
  let most = 0;
  for (const [i, turn] of later.entries()) {
    const at = `turn ${i + 2}: ${JSON.stringify({ ...turn, body: undefined, prefix: undefined })}`;
    assert.ok(turn.calls.length > 0 && turn.calls.length === turn.keys.length, at);
    assert.ok(turn.body.includes("Question number 1:"), `${at}: the session was resumed`);
    if (i > 0) assert.ok(turn.body.includes(nonce), `${at}: the tool round trip is in its history`);
    const before = turns[i].prefix;
    if (turn.prefix !== before) {
      console.log(
        `${at}: the client rewrote its conversation's prefix, ${
          firstDifference(before, turn.prefix)
        }`,
      );
    }
    const conversation = conversations.get(turn.prefix);
    if (!conversation) {
      rewrites++;
      assert.equal(turn.calls[0].affinity, "new", `${at}: a prefix not seen before is placed anew`);
      conversations.set(turn.prefix, {
        key: turn.keys[0],
        provider: turn.calls[0].provider,
        read: 0,
      });
      continue;
    }
    const { key, provider } = conversation;
    assert.ok(turn.keys.every((k) => k === key), `${at}: on its conversation's key`);
    assert.ok(turn.calls.every((c) => c.provider === provider), `${at}: on its deployment`);
    const change = promptChange(turns[i].body, turn.body);
    assert.ok(turn.calls.every((c) => c.affinity === "kept"), `${at}: placement kept; ${change}`);
    for (const call of turn.calls) {
      assert.ok(
        call.cachedTokens > 0 && call.cachedTokens >= conversation.read,
        `${at}: read the cache; ${change}`,
      );
      conversation.read = call.cachedTokens;
      most = Math.max(most, call.cachedTokens);
    }
  }
  assert.ok(rewrites <= 2, `the client rewrote its prefix on ${rewrites} turns`);
  assert.ok(most > later[0].calls[0].cachedTokens, "the history was read from the cache");
}

const test = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name, fn, sanitizeResources: false, sanitizeOps: false });

test("Claude Code (native Messages): ten turns, one key, cache reads from the second", async () => {
  await session(claudeCode(gateway.url), "claude-two");
});

test("Codex (Responses → Claude): ten turns, one key, cache reads from the second", async () => {
  await session(codex(gateway.url, "Codex", false), "gpt-5.4");
});

test("Gemini CLI (generateContent → Claude): ten turns, one key, cache reads from the second", async () => {
  const recorder = prefixRecorder(gateway.url);
  try {
    await session(geminiCli(recorder.url), "claude-two", recorder);
  } finally {
    await recorder.close();
  }
});
