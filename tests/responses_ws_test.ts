/**
 * The Responses API over WebSocket (`GET /v1/responses` upgraded), driven by the official `openai`
 * SDK's Responses socket and by raw sockets: passed through to OpenAI and xAI over the upstream's
 * own WebSocket, translated to Anthropic and Gemini, the connection-local `previous_response_id`
 * chain, every turn authenticated, counted, held and settled as one call (one ledger entry each),
 * a socket closed mid-turn billed for what was relayed, a client that stops reading holding its
 * turn's upstream back (and closed when it does not read again), the clients that stop reading
 * held to the thread's budget together, errors as the protocol's `error` event, and the 426 a
 * gateway that does not serve it answers.
 */
import assert from "node:assert/strict";
import { OpenAI } from "./deps.ts";
import { eventually, startStack, UPSTREAM_KEY, usageOf } from "./helpers/setup.ts";
import { type Gateway, logEntries, startGateway } from "./helpers/gateway.ts";
import { sleep, waitFor } from "./helpers/poll.ts";
import { bearer, type Json, post } from "./helpers/http.ts";
import { ledgerOf } from "./helpers/store.ts";
import {
  deltas,
  RawSocket,
  rawUpgrade,
  ResponsesSocket,
  socketUrl,
  TcpSocket,
} from "./helpers/responses_ws.ts";

const stack = await startStack({
  server: { maxBodyBytes: 65536, webSockets: true },
  // An OpenAI deployment whose upstream refuses the gateway's key (the emulator wants another).
  providers: { "openai-refused": { type: "openai", baseUrl: "/openai/v1", apiKey: "sk-refused" } },
  models: {
    "gpt-refused": {
      provider: "openai-refused",
      upstream: "gpt-5.4",
      price: { input: 1, output: 1 },
    },
  },
});
const { gateway } = stack;
const url = socketUrl(gateway.url);
Deno.test.afterAll(() => stack.stop());

/** nanoUSD at the test prices: $2.50 / $0.25 / $15 per million → 2500 / 250 / 15000 per token. */
function expectedCost(u: Json): number {
  const cached = u.input_tokens_details?.cached_tokens ?? 0;
  return (u.input_tokens - cached) * 2500 + cached * 250 + u.output_tokens * 15000;
}

/** A key with `credit` USD on a fresh account (more `extra` CLI flags: `--rpm 2`). */
async function keyFor(account: string, ...extra: string[]): Promise<{ key: string; id: string }> {
  return await gateway.createKey(account, "--credit", "5", ...extra);
}

/** The account's settled charges, oldest first. */
async function charges(account: string) {
  return (await ledgerOf(gateway, { account }))
    .filter((e) => e.kind === "charge" && e.status === "settled")
    .reverse();
}

/** The turns' request ids of the upgrade logged last for `key`: `req_….1`, `….2`… */
function upgradeId(keyId: string): string {
  const entries = gateway.logs.flatMap((line) => {
    try {
      return [JSON.parse(line)];
    } catch {
      return [];
    }
  });
  const upgrade = entries.findLast((e) =>
    e.msg === "request" && e.method === "GET" && e.path === "/v1/responses" && e.key_id === keyId
  );
  assert.ok(upgrade, "the upgrade is logged");
  assert.equal(upgrade.status, 101);
  return upgrade.request_id;
}

Deno.test("the SDK's socket: a turn on an OpenAI model goes over the upstream's WebSocket, billed exactly", async () => {
  const { key, id } = await keyFor("ws-sdk");
  const client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  const socket = new ResponsesSocket(client);
  const since = await stack.upstreamCount();
  const events: Json[] = [];
  try {
    socket.send({ type: "response.create", model: "gpt-test", input: "Name three primes" });
    for await (const message of socket.stream()) {
      if (message.type === "error") throw message.error;
      if (message.type !== "message") continue;
      events.push(message.message);
      if (message.message.type === "response.completed") break;
    }
  } finally {
    socket.close();
  }
  assert.equal(events[0].type, "response.created");
  assert.equal(deltas(events), "You said: Name three primes");
  const completed = events.at(-1)!;
  assert.equal(completed.response.status, "completed");
  // Upstream: the WebSocket's handshake and one turn on it, with the operator's key and the
  // upstream model id — no HTTP POST.
  const upstream = await stack.upstreamSince(since);
  assert.deepEqual(upstream.map((r) => r.method), ["GET", "WS"]);
  assert.equal(upstream[0].headers.authorization, `Bearer ${UPSTREAM_KEY}`);
  assert.equal(upstream[1].path, "/openai/v1/responses");
  assert.equal((upstream[1].body as Json).model, "gpt-5.4");
  assert.equal((upstream[1].body as Json).input, "Name three primes");
  // One ledger entry, for the turn, at the upstream's usage.
  await eventually(async () => (await charges("ws-sdk")).length === 1);
  const [charge] = await charges("ws-sdk");
  assert.equal(charge.requestId, `${upgradeId(id)}.1`);
  assert.equal(Number(charge.amount), expectedCost(completed.response.usage));
  assert.equal(charge.estimated, false);
  assert.equal(charge.provider, "openai");
  const usage = await usageOf(gateway, key);
  assert.equal(usage.requests, 1);
  assert.equal(usage.held_nanousd, 0);
});

Deno.test("an xAI model's turns go over xAI's WebSocket too", async () => {
  const { key } = await keyFor("ws-xai");
  const socket = await RawSocket.open(url, bearer(key));
  const since = await stack.upstreamCount();
  try {
    const events = await socket.create({ model: "grok-test", input: "hello grok" });
    assert.equal(events.at(-1)!.type, "response.completed");
    assert.equal(deltas(events), "You said: hello grok");
  } finally {
    socket.close();
  }
  const upstream = await stack.upstreamSince(since);
  assert.deepEqual(upstream.map((r) => `${r.method} ${r.path}`), [
    "GET /xai/v1/responses",
    "WS /xai/v1/responses",
  ]);
  await eventually(async () => (await charges("ws-xai")).length === 1);
});

Deno.test("store: false chains on one socket (the upstream's connection-local cache), not beyond it", async () => {
  const { key } = await keyFor("ws-chain");
  const socket = await RawSocket.open(url, bearer(key));
  let first: Json;
  let second: Json;
  try {
    first = (await socket.create({ model: "gpt-test", input: "remember 42", store: false }))
      .at(-1)!.response;
    const turn = await socket.create({
      model: "gpt-test",
      input: [{ role: "user", content: "what was it?" }],
      previous_response_id: first.id,
      store: false,
    });
    second = turn.at(-1)!.response;
    assert.equal(turn.at(-1)!.type, "response.completed");
    assert.equal(second.previous_response_id, first.id);
    // The upstream counted the history: the first turn's tokens are in the second's input.
    assert.ok(
      second.usage.input_tokens >= first.usage.input_tokens + first.usage.output_tokens,
      `${second.usage.input_tokens} input tokens include the ${
        first.usage.input_tokens + first.usage.output_tokens
      } of the first turn`,
    );
  } finally {
    socket.close();
  }
  // Beyond the socket, a response stored nowhere cannot be continued: over HTTP…
  const http = await post(gateway.url, "/v1/responses", bearer(key), {
    model: "gpt-test",
    input: "again",
    previous_response_id: second.id,
  });
  assert.equal(http.status, 404);
  await http.body?.cancel();
  // …nor on another socket, which says so in the words clients act on.
  const other = await RawSocket.open(url, bearer(key));
  try {
    const [error] = await other.create({
      model: "gpt-test",
      input: "again",
      previous_response_id: second.id,
    });
    assert.equal(error.type, "error");
    assert.equal(error.status, 404);
    assert.equal(error.error.code, "previous_response_not_found");
    assert.equal(error.error.param, "previous_response_id");
  } finally {
    other.close();
  }
  // Two calls billed (the refusals cost nothing), each at its upstream usage.
  await eventually(async () => (await charges("ws-chain")).length === 2);
  const billed = await charges("ws-chain");
  assert.deepEqual(billed.map((c) => Number(c.amount)), [
    expectedCost(first.usage),
    expectedCost(second.usage),
  ]);
});

for (
  const [model, provider, path] of [
    ["claude-test", "anthropic", "/anthropic/v1/messages"],
    ["gemini-test", "gemini", "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent"],
  ]
) {
  Deno.test(`${model}: turns are translated, chained on the socket, one ledger entry each`, async () => {
    const account = `ws-${provider}`;
    const { key, id } = await keyFor(account);
    const socket = await RawSocket.open(url, bearer(key));
    const since = await stack.upstreamCount();
    let first: Json[];
    let second: Json[];
    try {
      first = await socket.create({ model, input: "the code word is teal", store: false });
      second = await socket.create({
        model,
        input: "which word?",
        previous_response_id: first.at(-1)!.response.id,
        store: false,
      });
    } finally {
      socket.close();
    }
    for (const turn of [first, second]) {
      assert.equal(turn[0].type, "response.created", JSON.stringify(turn[0]));
      assert.equal(turn.at(-1)!.type, "response.completed");
    }
    assert.equal(deltas(first), "You said: the code word is teal");
    assert.equal(second.at(-1)!.response.previous_response_id, first.at(-1)!.response.id);
    // The second turn went upstream with the first in front: the connection kept it (store: false
    // keeps nothing in the store).
    const upstream = (await stack.upstreamSince(since)).filter((r) => r.path.startsWith(path));
    assert.equal(upstream.length, 2);
    const sent = JSON.stringify(upstream[1].body);
    assert.ok(sent.includes("the code word is teal") && sent.includes("which word?"), sent);
    await eventually(async () => (await charges(account)).length === 2);
    const billed = await charges(account);
    const turns = upgradeId(id);
    assert.deepEqual(billed.map((c) => c.requestId), [`${turns}.1`, `${turns}.2`]);
    assert.deepEqual(billed.map((c) => c.provider), [provider, provider]);
    assert.deepEqual(
      billed.map((c) => Number(c.amount)),
      [first, second].map((turn) => expectedCost(turn.at(-1)!.response.usage)),
    );
  });
}

Deno.test("the items of the socket's last translated answer can be referred to, store: false or not", async () => {
  const { key } = await keyFor("ws-items");
  const socket = await RawSocket.open(url, bearer(key));
  const since = await stack.upstreamCount();
  try {
    const first = await socket.create({
      model: "claude-test",
      input: "the colour is mauve",
      store: false,
    });
    const [message] = first.at(-1)!.response.output;
    const second = await socket.create({
      model: "claude-test",
      input: [
        { role: "user", content: "the colour is mauve" },
        { type: "item_reference", id: message.id },
        { role: "user", content: "which colour?" },
      ],
      store: false,
    });
    assert.equal(second.at(-1)!.type, "response.completed", JSON.stringify(second[0]));
  } finally {
    socket.close();
  }
  // The referred answer went upstream as the assistant's turn.
  const [, sent] = (await stack.upstreamSince(since)).filter((r) =>
    r.path === "/anthropic/v1/messages"
  );
  const messages = (sent.body as Json).messages as Json[];
  assert.deepEqual(messages.map((m) => m.role), ["user", "assistant", "user"]);
  assert.ok(JSON.stringify(messages[1]).includes("You said: the colour is mauve"));
});

Deno.test("a socket closed mid-turn is billed for what was relayed, and the upstream stops", async () => {
  const { key, id } = await keyFor("ws-hangup");
  const before = await stack.emulatorStats();
  const socket = await RawSocket.open(url, bearer(key));
  socket.send({
    type: "response.create",
    model: "gpt-test",
    input: "talk [[emulate words=400 delay=5]]",
  });
  let received = 0;
  while (received < 10) {
    if ((await socket.next()).type === "response.output_text.delta") received++;
  }
  socket.close();
  await eventually(async () =>
    (await stack.emulatorStats()).streamsCancelled === before.streamsCancelled + 1
  );
  await eventually(async () => (await charges("ws-hangup")).length === 1);
  const [charge] = await charges("ws-hangup");
  assert.equal(charge.requestId, `${upgradeId(id)}.1`);
  assert.equal(charge.estimated, true, "billed on what was relayed");
  const output = charge.units.find((u) => u.unit === "output_tokens")!.quantity;
  assert.ok(output >= 10 && output < 400, `${output} output tokens count the deltas relayed`);
  const usage = await usageOf(gateway, key);
  assert.equal(usage.held_nanousd, 0);
  assert.equal(usage.requests, 1);
});

/** The settled charges of `account` on `gateway`, oldest first. */
async function settledOn(gateway: Gateway, account: string) {
  return (await ledgerOf(gateway, { account }))
    .filter((e) => e.kind === "charge" && e.status === "settled")
    .reverse();
}

/** A turn's terminal event, read from the beginning of its message. */
const TERMINAL_TEXT = /^\{"type":"(response\.(completed|failed|incomplete)|error)"/;

/**
 * Words of the long answers: tens of MB of events — far more than the gateway's mark and the
 * kernel's buffers on loopback hold — for clients that send a turn and do not read.
 */
const LONG_WORDS = 400_000;

/**
 * A gateway with WebSockets on, `server`'s limits, and `claude-long`, whose answers (the
 * emulator's Messages, translated) are as long as the prompt asks, up to twice `LONG_WORDS`.
 */
function longAnswers(server: Record<string, unknown>): Promise<Gateway> {
  return startGateway({
    config: {
      defaultCatalog: false,
      admin: { token: ADMIN_TOKEN },
      server: { webSockets: true, ...server },
      routing: { maxAttempts: 1 },
      providers: {
        emulated: {
          type: "anthropic",
          baseUrl: `${stack.emulatorUrl}/anthropic`,
          apiKey: "env:EMULATED_UPSTREAM_KEY",
        },
        "emulated-openai": {
          type: "openai",
          baseUrl: `${stack.emulatorUrl}/openai/v1`,
          apiKey: "env:EMULATED_UPSTREAM_KEY",
        },
      },
      models: {
        "claude-long": {
          provider: "emulated",
          upstream: "claude-sonnet-4-5",
          price: { input: 1, output: 1 },
          maxOutputTokens: 2 * LONG_WORDS,
        },
        // Its turns go over the emulator's own WebSocket (OpenAI's WebSocket mode).
        "gpt-long": {
          provider: "emulated-openai",
          upstream: "gpt-5.4",
          price: { input: 1, output: 1 },
          maxOutputTokens: 2 * LONG_WORDS,
        },
      },
    },
    env: { EMULATED_UPSTREAM_KEY: UPSTREAM_KEY },
  });
}

/** The admin token of the `longAnswers` gateways (their `/metrics`). */
const ADMIN_TOKEN = "responses-ws-admin-token-0123456789";

/** What `gateway` says it holds for its WebSocket clients (`/metrics`, one thread). */
async function queuedBytes(gateway: Gateway): Promise<number> {
  const res = await fetch(`${gateway.url}/metrics`, { headers: bearer(ADMIN_TOKEN) });
  const line = (await res.text()).split("\n")
    .find((l) => l.startsWith("switchyard_websocket_queued_bytes "));
  assert.ok(line, "the gauge is reported");
  return Number(line.split(" ")[1]);
}

/** Sends `socket` a turn on `model` asking for an answer of `words` words. */
function sendLong(socket: TcpSocket, model: string, words: number): Promise<void> {
  return socket.send({
    type: "response.create",
    model,
    input: `talk [[emulate words=${words}]]`,
  });
}

/** The output tokens a charge counts. */
function outputOf(charge: { units: { unit: string; quantity: number }[] }): number {
  return charge.units.find((u) => u.unit === "output_tokens")!.quantity;
}

Deno.test("a client that stops reading holds its turn's upstream back: reading again it gets the whole answer, not reading it is closed after the idle limit", async () => {
  const words = LONG_WORDS;
  const idleMs = 1000;
  const slow = await longAnswers({ streamIdleTimeoutMs: idleMs });
  const sockets: TcpSocket[] = [];
  const open = async (account: string) => {
    const { key } = await slow.createKey(account, "--credit", "5");
    const socket = await TcpSocket.open(socketUrl(slow.url), bearer(key));
    sockets.push(socket);
    return socket;
  };
  try {
    // A pause shorter than the idle limit: the turn waits for the client, its upstream held back,
    // and the client that reads again gets the whole answer.
    const resumed = await open("ws-resumed");
    let before = await stack.emulatorStats();
    await sendLong(resumed, "claude-long", words / 4);
    await sleep(idleMs / 2);
    assert.equal((await stack.emulatorStats()).streamsCompleted, before.streamsCompleted);
    const whole = await resumed.read((text) => TERMINAL_TEXT.test(text));
    assert.equal(JSON.parse(whole.last!).type, "response.completed", whole.last!.slice(0, 200));
    assert.ok(whole.messages > words / 4, `${whole.messages} messages`);
    await eventually(async () => (await settledOn(slow, "ws-resumed")).length === 1);
    const [paid] = await settledOn(slow, "ws-resumed");
    assert.equal(paid.estimated, false, "billed at the upstream's usage");

    // No reading at all: once the socket's queue has not moved for the idle limit the connection
    // is closed, and the turn settled as a hang-up is — for what was relayed.
    const stalled = await open("ws-stalled");
    before = await stack.emulatorStats();
    const sent = performance.now();
    await sendLong(stalled, "claude-long", words);
    await eventually(async () => (await settledOn(slow, "ws-stalled")).length === 1);
    const [charge] = await settledOn(slow, "ws-stalled");
    assert.equal(charge.estimated, true, "billed on what was relayed");
    const output = outputOf(charge);
    assert.ok(output > 0 && output < words / 4, `${output} of ${words} output tokens relayed`);
    // The upstream did not get to send its whole answer: its stream was stopped.
    await eventually(async () =>
      (await stack.emulatorStats()).streamsCancelled === before.streamsCancelled + 1
    );
    assert.equal((await stack.emulatorStats()).streamsCompleted, before.streamsCompleted);
    // Read now, the socket holds what was queued (a small part of the answer), then the close.
    const queued = await stalled.read();
    assert.deepEqual(queued.close, { code: 1008, reason: "client not reading" });
    assert.ok(queued.messages < words / 4, `${queued.messages} messages (${queued.bytes} bytes)`);
    assert.ok(performance.now() - sent >= idleMs, `closed after ${performance.now() - sent} ms`);
  } finally {
    for (const socket of sockets) socket.close();
    await slow.stop();
  }
});

/**
 * A client of a `longAnswers(server)` gateway that sends a long turn on `gpt-long` (over the
 * emulator's own WebSocket) and reads nothing until the turn is settled: the turn's charge, what the
 * client reads then, and the log lines of upstream-socket turns ended for a slow client. `then`
 * runs before the gateway stops.
 */
async function unreadUpstreamTurn(
  server: Record<string, unknown>,
  account: string,
  then?: (gateway: Gateway) => Promise<unknown>,
) {
  const gateway = await longAnswers(server);
  let socket: TcpSocket | undefined;
  try {
    const { key } = await gateway.createKey(account, "--credit", "5");
    socket = await TcpSocket.open(socketUrl(gateway.url), bearer(key));
    await sendLong(socket, "gpt-long", LONG_WORDS);
    // The upstream's socket is read as it writes: past a bound of unread answer the turn ends,
    // before the client has read anything.
    await eventually(async () => (await settledOn(gateway, account)).length === 1);
    const [charge] = await settledOn(gateway, account);
    const read = await socket.read((text) => TERMINAL_TEXT.test(text));
    // The line is written before the turn ends, but reaches the test's copy of the log whenever
    // the gateway's output does: waited for, not read once.
    const endedLines = () =>
      logEntries(gateway).filter((e) => String(e.msg).startsWith("an upstream socket's"));
    await eventually(() => endedLines().length > 0).catch(() => {});
    const ended = endedLines();
    await then?.(gateway);
    return { charge, read, ended };
  } finally {
    socket?.close();
    await gateway.stop();
  }
}

Deno.test("over the upstream's WebSocket, an answer its client leaves unread past the bound ends there, billed for what was relayed", async () => {
  // The idle limit is far off: what ends the turn is the unread answer, not the client's silence.
  const { charge, read, ended } = await unreadUpstreamTurn(
    { streamIdleTimeoutMs: 60_000 },
    "ws-unread",
  );
  assert.equal(charge.estimated, true, "billed on what was relayed");
  const output = outputOf(charge);
  assert.ok(output > 0 && output < LONG_WORDS / 4, `${output} of ${LONG_WORDS} tokens relayed`);
  // Read then: what the client's socket had queued, then the protocol's error, not the answer.
  assert.equal(JSON.parse(read.last!).type, "error", read.last!.slice(0, 200));
  assert.ok(read.messages < LONG_WORDS / 4, `${read.messages} messages (${read.bytes} bytes)`);
  assert.equal(ended.length, 1, JSON.stringify(ended));
  assert.equal(ended[0].bound, "turn");
  assert.ok((ended[0].unread_bytes as number) > 8 << 20, JSON.stringify(ended[0]));
});

Deno.test("a socket closed for not reading counts against maxConnections until it has really closed", async () => {
  const idleMs = 500;
  const capped = await longAnswers({ streamIdleTimeoutMs: idleMs, maxConnections: 1 });
  const sockets: TcpSocket[] = [];
  try {
    const { key } = await capped.createKey("ws-closing", "--credit", "5");
    const stalled = await TcpSocket.open(socketUrl(capped.url), bearer(key));
    sockets.push(stalled);
    await sendLong(stalled, "claude-long", LONG_WORDS);
    // Closed for not reading, its queue still waits for the client: it still takes the one place.
    await waitFor(
      () => logEntries(capped).some((e) => e.msg === "websocket closed" && e.in_flight),
      { ms: 10_000, what: "the stalled connection closed" },
    );
    await assert.rejects(
      TcpSocket.open(socketUrl(capped.url), bearer(key)),
      /answered 503/,
      "a closing socket still counts",
    );
    // Its queue is still held for it, and still counted, though Deno reports none once closed.
    assert.ok(await queuedBytes(capped) > 0, "a closing socket's queue is counted");
    // Once the client has read its queue and gone, the place is free again.
    const queued = await stalled.read();
    assert.equal(queued.close?.code, 1008);
    stalled.close();
    await eventually(async () => {
      try {
        sockets.push(await TcpSocket.open(socketUrl(capped.url), bearer(key)));
        return true;
      } catch {
        return false;
      }
    });
    assert.equal(await queuedBytes(capped), 0);
  } finally {
    for (const socket of sockets) socket.close();
    await capped.stop();
  }
});

Deno.test("without an idle limit, a client still behind when its connection reaches streamMaxMs is closed then", async () => {
  // Long enough for the turn's answer to fill the socket's queue past its mark on a loaded
  // machine (the kernel's buffers take several MB first): a turn whose queue never got there is
  // cut by its own stream's limit instead.
  const maxMs = 6000;
  const limited = await longAnswers({ streamIdleTimeoutMs: 0, streamMaxMs: maxMs });
  let socket: TcpSocket | undefined;
  try {
    const { key } = await limited.createKey("ws-aged", "--credit", "5");
    socket = await TcpSocket.open(socketUrl(limited.url), bearer(key));
    const opened = performance.now();
    // The turn is sent a while after the connection opened, so that it is still waiting for its
    // client when the connection reaches its limit (the turn's own stream is cut later).
    await sleep(maxMs / 3);
    await sendLong(socket, "claude-long", LONG_WORDS);
    await eventually(async () => (await settledOn(limited, "ws-aged")).length === 1);
    const [charge] = await settledOn(limited, "ws-aged");
    assert.equal(charge.estimated, true, "billed on what was relayed");
    assert.ok(outputOf(charge) < LONG_WORDS / 4, `${outputOf(charge)} output tokens relayed`);
    // The connection was closed at its limit, before the client read anything (the turn's own
    // stream, cut at its limit a little later, would be settled but leave the connection open).
    const closed = () => logEntries(limited).filter((e) => e.msg === "websocket closed");
    await waitFor(() => closed().some((e) => e.in_flight), { ms: 5000 }).catch(() => {});
    assert.ok(
      closed().some((e) => e.in_flight),
      `the connection closed with its turn in flight: ${JSON.stringify(closed())}`,
    );
    const queued = await socket.read();
    assert.deepEqual(queued.close, { code: 1008, reason: "connection limit reached" });
    assert.ok(performance.now() - opened >= maxMs, `closed after ${performance.now() - opened} ms`);
  } finally {
    socket?.close();
    await limited.stop();
  }
});

Deno.test("every turn is authenticated and counted: a revoked key's next turn, a key's RPM", async () => {
  const { key, id } = await keyFor("ws-auth", "--rpm", "2");
  const socket = await RawSocket.open(url, bearer(key));
  try {
    // The upgrade is not counted: two turns fit in 2 requests a minute, the third does not.
    for (const n of [1, 2]) {
      const turn = await socket.create({ model: "gpt-test", input: `turn ${n}` });
      assert.equal(turn.at(-1)!.type, "response.completed");
    }
    const [limited] = await socket.create({ model: "gpt-test", input: "turn 3" });
    assert.equal(limited.type, "error");
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.error.headers["retry-after"]) > 0);
    const revoked = await gateway.cli("keys", "revoke", id);
    assert.equal(revoked.code, 0, revoked.stderr);
    await eventually(async () => {
      const [refused] = await socket.create({ model: "gpt-test", input: "turn 4" });
      return refused.type === "error" && refused.status === 401;
    });
  } finally {
    socket.close();
  }
  await eventually(async () => (await charges("ws-auth")).length === 2);
});

Deno.test("an upstream that refuses the upgrade is sent the turn over HTTP, answered as HTTP answers it", async () => {
  const { key } = await keyFor("ws-fallback");
  const socket = await RawSocket.open(url, bearer(key));
  const since = await stack.upstreamCount();
  try {
    const [refused] = await socket.create({ model: "gpt-refused", input: "hi" });
    assert.equal(refused.type, "error");
    assert.equal(refused.status, 502);
    assert.equal(refused.error.code, "upstream_auth_failed");
  } finally {
    socket.close();
  }
  // The handshake refused (401), then the same turn as a POST, refused too (the key is taken
  // out: 502): two requests, neither accepted (the emulator records accepted ones only).
  assert.equal(await stack.upstreamCount(), since + 2);
  assert.deepEqual(await stack.upstreamSince(since), []);
  assert.deepEqual(await charges("ws-fallback"), []);
});

Deno.test("the upgrade is authenticated: a wrong key is refused before it", async () => {
  const refused = await rawUpgrade(url, { authorization: "Bearer sk-wrong" });
  assert.equal(refused.status, 401);
  assert.equal(JSON.parse(refused.body).error.type, "invalid_request_error");
  await assert.rejects(RawSocket.open(url, bearer("sk-wrong")), /closed before opening/);
  const missing = await rawUpgrade(url, {});
  assert.equal(missing.status, 401);
});

Deno.test("refusals are the protocol's error event; the socket stays open for the next turn", async () => {
  const { key } = await keyFor("ws-errors");
  const socket = await RawSocket.open(url, bearer(key));
  const since = await stack.upstreamCount();
  try {
    const [unknown] = await socket.create({ model: "no-such-model", input: "hi" });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.error.code, "model_not_found");
    const [background] = await socket.create({ model: "gpt-test", input: "hi", background: true });
    assert.equal(background.status, 400);
    assert.equal(background.error.param, "background");
    socket.send({ type: "response.steer", input: "faster" });
    const steer = await socket.next();
    assert.equal(steer.type, "error");
    assert.equal(steer.error.param, "type");
    socket.send("not json");
    assert.equal((await socket.next()).error.code, "invalid_json");
    const [warm] = await socket.create({ model: "claude-test", input: "hi", generate: false });
    assert.equal(warm.error.param, "generate");
    // An upstream's own refusal (here a rate limit at the start of the turn) is relayed as one.
    const [limited] = await socket.create({ model: "gpt-test", input: "[[emulate status=429]]" });
    assert.equal(limited.type, "error");
    assert.equal(limited.status, 429);
    assert.equal(limited.error.code, "rate_limit_exceeded");
    // The lane a turn names is echoed on its events.
    const laned = await socket.create({ model: "gpt-test", input: "on a lane", stream_id: "a" });
    assert.ok(laned.every((e) => e.stream_id === "a"));
  } finally {
    socket.close();
  }
  // Only the upstream's rate limit and the last turn reached the upstream (after its handshake).
  const upstream = await stack.upstreamSince(since);
  assert.deepEqual(upstream.map((r) => r.method), ["GET", "WS", "WS"]);
  await eventually(async () => (await charges("ws-errors")).length === 1);
});

Deno.test("GET /v1/responses without an upgrade is 426; so is an upgrade where WebSockets are off", async () => {
  const { key } = await keyFor("ws-plain");
  const plain = await fetch(`${gateway.url}/v1/responses`, { headers: bearer(key) });
  assert.equal(plain.status, 426);
  assert.equal(plain.headers.get("upgrade"), "websocket");
  assert.equal((await plain.json()).error.code, "upgrade_required");
  const off = await startGateway({ config: { defaultCatalog: false } });
  try {
    const { key: offKey } = await off.createKey("ws-off", "--credit", "1");
    const refused = await rawUpgrade(socketUrl(off.url), bearer(offKey));
    assert.equal(refused.status, 426);
    assert.equal(JSON.parse(refused.body).error.code, "websocket_unsupported");
  } finally {
    await off.stop();
  }
});

Deno.test("the emulator's WebSocket mode keeps the last response per connection, as OpenAI's does", async () => {
  const emulated = `${stack.emulatorUrl.replace(/^http/, "ws")}/openai/v1/responses`;
  const headers = bearer(UPSTREAM_KEY);
  const one = await RawSocket.open(emulated, headers);
  const two = await RawSocket.open(emulated, headers);
  try {
    const warm = await one.create({ model: "gpt-5.4", input: "tools ready", generate: false });
    assert.equal(warm.at(-1)!.type, "response.completed");
    assert.deepEqual(warm.at(-1)!.response.output, []);
    const next = await one.create({
      model: "gpt-5.4",
      input: "go",
      store: false,
      previous_response_id: warm.at(-1)!.response.id,
    });
    assert.equal(next.at(-1)!.type, "response.completed");
    const [elsewhere] = await two.create({
      model: "gpt-5.4",
      input: "go",
      previous_response_id: next.at(-1)!.response.id,
    });
    assert.equal(elsewhere.type, "error");
    assert.equal(elsewhere.status, 400);
    assert.equal(elsewhere.error.code, "previous_response_not_found");
    const [background] = await one.create({ model: "gpt-5.4", input: "x", background: true });
    assert.equal(background.error.param, "background");
  } finally {
    one.close();
    two.close();
  }
});

Deno.test("a connection closes after the idle limit without a turn, and at its total limit", async () => {
  for (
    const [server, reason] of [
      [{ streamIdleTimeoutMs: 300 }, "idle timeout"],
      [{ streamIdleTimeoutMs: 0, streamMaxMs: 300 }, "connection limit reached"],
    ] as const
  ) {
    const limited = await startGateway({
      config: { defaultCatalog: false, server: { webSockets: true, ...server } },
    });
    try {
      const { key } = await limited.createKey("ws-limits", "--credit", "1");
      const opened = performance.now();
      const socket = await RawSocket.open(socketUrl(limited.url), bearer(key));
      const closed = await socket.closed;
      assert.equal(closed.code, 1000);
      assert.equal(closed.reason, reason);
      // Time is the behaviour here: not before the limit (bounded above only by the test's guard).
      assert.ok(performance.now() - opened >= 300, `closed after ${performance.now() - opened} ms`);
    } finally {
      await limited.stop();
    }
  }
});

Deno.test("a stopping server closes its sockets, a turn in flight billed for what was relayed", async () => {
  const replica = await stack.replica();
  const { key } = await replica.createKey("ws-stop", "--credit", "5");
  const socket = await RawSocket.open(socketUrl(replica.url), bearer(key));
  socket.send({
    type: "response.create",
    model: "gpt-test",
    input: "talk [[emulate words=400 delay=20]]",
  });
  let received = 0;
  while (received < 5) {
    if ((await socket.next()).type === "response.output_text.delta") received++;
  }
  const stopped = replica.terminate();
  const closed = await socket.closed;
  assert.equal(closed.code, 1001);
  assert.equal((await stopped).code, 0);
  const billed = (await ledgerOf(replica, { account: "ws-stop" })).filter((e) =>
    e.kind === "charge"
  );
  assert.equal(billed.length, 1);
  assert.equal(billed[0].status, "settled");
  assert.equal(billed[0].estimated, true, "billed on what was relayed");
  assert.ok(Number(billed[0].amount) > 0);
});

Deno.test("sockets are held to server.maxConnections: the upgrade past it gets 503", async () => {
  const capped = await startGateway({
    config: { defaultCatalog: false, server: { webSockets: true, maxConnections: 1 } },
  });
  try {
    const { key } = await capped.createKey("ws-cap", "--credit", "1");
    const first = await RawSocket.open(socketUrl(capped.url), bearer(key));
    const refused = await rawUpgrade(socketUrl(capped.url), bearer(key));
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("retry-after"), "1");
    first.close();
    await first.closed;
    // Its place is free again once it closed.
    await eventually(async () =>
      (await rawUpgrade(socketUrl(capped.url), bearer(key))).status === 101
    );
  } finally {
    await capped.stop();
  }
});

Deno.test("clients that stop reading hold about server.webSocketQueueBytes together, not 1 MiB each; a client that reads meanwhile gets its whole answer", async () => {
  const budget = 256 << 10;
  const slow = await longAnswers({ streamIdleTimeoutMs: 60_000, webSocketQueueBytes: budget });
  const sockets: TcpSocket[] = [];
  try {
    const { key } = await slow.createKey("ws-budget", "--credit", "20");
    const before = await stack.emulatorStats();
    for (let i = 0; i < 4; i++) {
      const socket = await TcpSocket.open(socketUrl(slow.url), bearer(key));
      sockets.push(socket);
      await sendLong(socket, "claude-long", LONG_WORDS);
    }
    // All four answers have begun; their queues fill (each alone may hold 1 MiB) until the
    // thread's budget is reached, then each waits with 64 KiB queued at most: the total settles a
    // little over the budget, and no answer gets to its end.
    await eventually(async () =>
      (await stack.emulatorStats()).streamsStarted >= before.streamsStarted + 4
    );
    let last = -1;
    await waitFor(async () => {
      const now = await queuedBytes(slow);
      const settled = now === last && now > budget;
      last = now;
      if (!settled) await sleep(300);
      return settled;
    }, { ms: 20_000, what: "the queues of the four clients settled over the budget" });
    assert.ok(last <= budget + 5 * (64 << 10), `${last} bytes held for four clients`);
    assert.equal((await stack.emulatorStats()).streamsCompleted, before.streamsCompleted);

    // A client that reads is not held back by those that do not: it gets its whole answer.
    const reader = await TcpSocket.open(socketUrl(slow.url), bearer(key));
    sockets.push(reader);
    await sendLong(reader, "claude-long", LONG_WORDS / 8);
    const whole = await reader.read((text) => TERMINAL_TEXT.test(text));
    assert.equal(JSON.parse(whole.last!).type, "response.completed", whole.last!.slice(0, 200));
    assert.ok(whole.messages > LONG_WORDS / 8, `${whole.messages} messages`);
    assert.ok(await queuedBytes(slow) <= budget + 5 * (64 << 10));

    // The clients that did not read leave: nothing is held for them any more, every turn is
    // settled and nothing stays held.
    for (const socket of sockets) socket.close();
    await eventually(async () => await queuedBytes(slow) === 0);
    await eventually(async () => (await settledOn(slow, "ws-budget")).length === 5);
    assert.equal((await usageOf(slow, key)).held_nanousd, 0);
  } finally {
    for (const socket of sockets) socket.close();
    await slow.stop();
  }
});

Deno.test("over the upstream's WebSocket, past server.webSocketQueueBytes a turn ends at 1 MiB unread, not 8 MiB", async () => {
  const budget = 256 << 10;
  const { charge, read, ended } = await unreadUpstreamTurn(
    { streamIdleTimeoutMs: 60_000, webSocketQueueBytes: budget },
    "ws-pressed",
    (gateway) => eventually(async () => await queuedBytes(gateway) === 0),
  );
  assert.equal(charge.estimated, true, "billed on what was relayed");
  assert.equal(JSON.parse(read.last!).type, "error", read.last!.slice(0, 200));
  // Ended by the thread's bound, with 1 MiB to 8 MiB unread (the turn's own bound is 8 MiB).
  assert.equal(ended.length, 1, JSON.stringify(ended));
  assert.equal(ended[0].bound, "thread");
  const unread = ended[0].unread_bytes as number;
  assert.ok(unread > 1 << 20 && unread <= 8 << 20, `${unread} bytes unread`);
  assert.ok((ended[0].held_bytes as number) > budget);
});
