/**
 * Processes that stop lose no charge: a gateway killed mid-call has its held ledger entry settled
 * at the next start, a process starting on a shared store leaves another's live calls alone, and
 * SIGTERM drains streams (cutting and billing those still open after the drain time).
 */
import assert from "node:assert/strict";
import { startEmulator } from "../src/emulator/server.ts";
import { type Gateway, startGateway } from "./helpers/gateway.ts";
import { booksOf, ledgerOf } from "./helpers/store.ts";

/** A config with one priced model on the emulator, plus `server` settings. */
function configFor(emulator: Deno.HttpServer<Deno.NetAddr>, server: Record<string, unknown> = {}) {
  return {
    server,
    defaultCatalog: false,
    providers: {
      openai: {
        type: "openai",
        baseUrl: `http://127.0.0.1:${emulator.addr.port}/openai/v1`,
        apiKey: "up",
      },
    },
    models: { "gpt-test": { provider: "openai", price: { input: 2.5, output: 15 } } },
  };
}

/** Starts a slow streamed answer and waits for its first chunk (the hold is then committed). */
async function startSlowStream(gateway: Gateway, key: string, delay = 20, words = 300) {
  const res = await fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "gpt-test",
      input: `slow [[emulate words=${words} delay=${delay}]]`,
      stream: true,
    }),
  });
  const reader = res.body!.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  /** Reads the rest of the stream; resolves to all of its text. */
  const rest = async () => {
    let text = first;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return text;
      text += new TextDecoder().decode(value);
    }
  };
  return { reader, rest };
}

/** The charges in the gateway's ledger, each with its account's hold and balance. */
async function charges(gateway: Gateway) {
  const entries = (await ledgerOf(gateway)).filter((e) => e.kind === "charge");
  return await Promise.all(entries.map(async (e) => {
    const books = await booksOf(gateway, e.account);
    return {
      status: e.status,
      estimated: e.estimated,
      amount: Number(e.amount),
      held: books.held,
      balance: books.balance,
    };
  }));
}

Deno.test("kill -9 during a stream: the call is settled once, on its estimate, at restart", async () => {
  const emulator = startEmulator({ requiredKey: "up" });
  const config = configFor(emulator);
  const first = await startGateway({ config });
  try {
    const { key } = await first.createKey("crash-acct", "--credit", "1");
    const { reader } = await startSlowStream(first, key);
    await first.crash();
    await reader.read().catch(() => {});

    const held = (await charges(first)).filter((c) => c.status === "held");
    assert.equal(held.length, 1, "the in-flight call's ledger entry survived the crash as held");

    const second = await startGateway({ config, dir: first.dir });
    try {
      const recovered = second.logs.map((l) => JSON.parse(l)).find((e) =>
        e.msg === "settled calls left open by an earlier crash"
      );
      assert.equal(recovered?.calls, 1);
      const usage = await (await fetch(`${second.url}/v1/usage`, {
        headers: { authorization: `Bearer ${key}` },
      })).json();
      assert.equal(usage.requests, 1);
      const [row] = await charges(second);
      assert.equal(row.status, "settled");
      assert.equal(row.estimated, true);
      assert.ok(row.amount > 0, "the input estimate is charged");
      assert.equal(row.held, 0, "the reservation is released");
      assert.equal(row.balance, 1_000_000_000 - row.amount);
      assert.equal(usage.spent_nanousd, row.amount);
    } finally {
      await second.stop();
    }
  } finally {
    await Deno.remove(first.dir, { recursive: true }).catch(() => {});
    await emulator.shutdown();
  }
});

Deno.test("a process restarting on a shared store leaves another process's live calls alone", async () => {
  const emulator = startEmulator({ requiredKey: "up" });
  const config = configFor(emulator);
  const serving = await startGateway({ config });
  try {
    const { key } = await serving.createKey("shared-acct", "--credit", "1");
    // A stream of about 7.5 s: still live while the processes below start, however slowly.
    const stream = await startSlowStream(serving, key, 5, 1500);
    // Another process on the same store starts, is killed, and starts again (blue/green).
    const other = await startGateway({ config, dir: serving.dir });
    await other.crash();
    const restarted = await startGateway({ config, dir: serving.dir });
    const text = await stream.rest();
    await restarted.crash();
    const usage =
      JSON.parse(/event: response\.completed\ndata: (.*)/.exec(text)![1]).response.usage;
    const expected = usage.input_tokens * 2500 + usage.output_tokens * 15000;
    assert.deepEqual(await charges(serving), [
      { status: "settled", estimated: false, amount: expected, held: 0, balance: 1e9 - expected },
    ], "settled once, on the upstream's usage, by the process that served it");
    for (const logs of [other.logs, restarted.logs]) {
      assert.ok(!logs.some((l) => l.includes("settled calls left open")), logs.join("\n"));
    }
  } finally {
    await serving.stop();
    await emulator.shutdown();
  }
});

Deno.test("SIGTERM drains: a stream still open after drainTimeoutMs is cut, billed for what was relayed", async () => {
  const emulator = startEmulator({ requiredKey: "up" });
  const gateway = await startGateway({ config: configFor(emulator, { drainTimeoutMs: 300 }) });
  try {
    const { key } = await gateway.createKey("drain-acct", "--credit", "1");
    // A stream of about 30 s: cut at the drain's end, not when it would have ended.
    const stream = await startSlowStream(gateway, key, 20, 1500);
    const started = Date.now();
    const exited = gateway.terminate();
    const text = await stream.rest();
    assert.equal((await exited).code, 0);
    assert.ok(Date.now() - started < 15_000, `drained in ${Date.now() - started} ms`);
    assert.match(text, /event: error\ndata: .*ended the stream unexpectedly/);
    assert.doesNotMatch(text, /response\.completed/);
    const [row] = await charges(gateway);
    assert.equal(row.status, "settled");
    assert.equal(row.estimated, true);
    assert.ok(row.amount > 0);
    assert.equal(row.held, 0);
  } finally {
    await Deno.remove(gateway.dir, { recursive: true }).catch(() => {});
    await emulator.shutdown();
  }
});
