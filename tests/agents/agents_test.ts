/**
 * The real agents, headless, through the gateway to the emulator: Claude Code (Messages), Codex
 * (Responses) and Gemini CLI (generateContent), each on its native upstream and on every foreign
 * one, with a plain prompt and a tool round trip (the agent runs its own file-reading tool on a
 * file holding a nonce, and the answer after the tool result carries it). Every call the agent
 * made is in the ledger, billed from reported usage (none estimated), with no hold left.
 *
 * Run with `deno task test:agents`; the pinned agents are installed from npm on first use into
 * `$SWITCHYARD_AGENTS_DIR` (default `~/.cache/switchyard-agents`).
 */
import assert from "node:assert/strict";
import { eventually, MAX_OUT, startStack, TEST_PRICE } from "../helpers/setup.ts";
import { ledgerOf } from "../helpers/store.ts";
import { type Agent, claudeCode, codex, geminiCli, install } from "../helpers/agents.ts";

await install();
// Codex always offers its hosted web search: the models price it, as the built-in catalog does.
const SEARCH = { web_search: 0.01, grounded_prompt: 0.035 };
const stack = await startStack({
  // WebSockets on: Codex tries the Responses API over a WebSocket first (its WebSocket variant
  // below); the plain variant gets HTTP.
  server: { maxBodyBytes: 65536, webSockets: true },
  models: Object.fromEntries(
    [
      ["gpt-test", "openai", "gpt-5.4"],
      ["claude-test", "anthropic", "claude-sonnet-4-5"],
      ["gemini-test", "gemini", "gemini-2.5-flash"],
      // Codex's own model ids, each served by a foreign family (an alias an operator sets up so
      // Codex runs on another vendor's model): Codex then offers what it offers a GPT-5.x model.
      ["gpt-5.4", "anthropic", "claude-sonnet-4-5"],
      ["gpt-5.4-mini", "gemini", "gemini-2.5-flash"],
      ["gpt-5.2", "local", "qwen3-coder"],
    ].map(([id, provider, upstream]) => [id, {
      provider,
      upstream,
      maxOutputTokens: MAX_OUT.maxOutputTokens,
      price: { ...TEST_PRICE, tools: SEARCH },
    }]),
  ),
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

const AGENT_LIST: Agent[] = [
  claudeCode(gateway.url),
  codex(gateway.url, "Codex", false),
  codex(gateway.url, "Codex over WebSocket", true),
  geminiCli(gateway.url),
];

const MODELS = ["gpt-test", "claude-test", "gemini-test", "local-test"];
/** Codex's own GPT-5.x ids served by the Anthropic, Gemini and chat families. */
const CODEX_IDS = ["gpt-5.4", "gpt-5.4-mini", "gpt-5.2"];

/** The account's charges, oldest first. */
async function ledger(account: string): Promise<{ status: string; estimated: boolean }[]> {
  return (await ledgerOf(gateway, { account }))
    .filter((e) => e.kind === "charge")
    .reverse()
    .map((e) => ({ status: e.status, estimated: e.estimated }));
}

/** Text calls the emulator received since `from` (counting calls are free, not billed). */
async function upstreamCalls(from: number): Promise<number> {
  const seen = await stack.upstreamSince(from);
  // Not counting calls, nor the upgrade of an upstream WebSocket (its turns are the calls).
  return seen.filter((r) =>
    r.method !== "GET" && !/count_?tokens|countTokens|input_tokens/i.test(r.path)
  ).length;
}

for (const agent of AGENT_LIST) {
  for (const model of agent.native === "gpt-test" ? [...MODELS, ...CODEX_IDS] : MODELS) {
    const where = model === agent.native ? "native" : "translated";
    Deno.test(`${agent.name} on ${model} (${where}): a plain prompt and a tool round trip`, async () => {
      const account = `agent-${agent.name.replace(/\W/g, "")}-${model}`;
      const { key } = await gateway.createKey(account, "--credit", "20");
      const cwd = await Deno.makeTempDir({ prefix: "switchyard-agent-" });
      const home = await Deno.makeTempDir({ prefix: "switchyard-agent-home-" });
      try {
        const before = await stack.upstreamCount();
        const plain = await agent.run(model, "Say hello. [[emulate tool=none]]", key, cwd, home);
        assert.equal(plain.code, 0, plain.out);
        assert.match(plain.out, /You said/, plain.out);

        const nonce = crypto.randomUUID();
        await Deno.writeTextFile(`${cwd}/nonce.txt`, `${nonce}\n`);
        const tool = await agent.run(
          model,
          `Read the file nonce.txt and tell me what it says. ${
            agent.readDirective(`${cwd}/nonce.txt`)
          }`,
          key,
          cwd,
          home,
        );
        assert.equal(tool.code, 0, tool.out);
        assert.ok(
          tool.out.includes(`the tool returned`) && tool.out.includes(nonce),
          `the answer after the tool result carries the file's nonce:\n${tool.out}`,
        );

        // Every call the agent made is billed, from reported usage, and nothing is left held.
        const calls = await upstreamCalls(before);
        await eventually(async () => (await ledger(account)).length === calls).catch(
          () => {},
        );
        const charges = await ledger(account);
        assert.equal(charges.length, calls, "one ledger entry per upstream call");
        // Over a WebSocket every turn was one: its request id is the upgrade's and a number.
        const turns = (await ledgerOf(gateway, { account }))
          .filter((e) => e.kind === "charge" && /\.\d+$/.test(e.requestId ?? ""));
        assert.equal(turns.length, agent.webSocket ? calls : 0, "turns over a WebSocket");
        assert.ok(
          charges.every((c) => c.status === "settled" && !c.estimated),
          JSON.stringify(charges),
        );
      } finally {
        await Deno.remove(cwd, { recursive: true }).catch(() => {});
        await Deno.remove(home, { recursive: true }).catch(() => {});
      }
    });
  }
}
