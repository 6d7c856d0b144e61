/**
 * Connections that never finish their headers (issue #27): the gateway closes a connection whose
 * request line and headers have not arrived within `server.headerTimeoutMs` — a new one, and a
 * kept-alive one once no request is in flight — and its descriptors come back; a request in flight
 * longer than that is not cut. At most `server.maxConnections` are open in the process (across its
 * serving threads): past it new ones are closed at once, logged and counted in /metrics. Headers
 * over `server.maxHeaderBytes` are a 431 in the route's protocol.
 */
import assert from "node:assert/strict";
import { eventually, startStack } from "./helpers/setup.ts";
import { type Gateway, startGateway } from "./helpers/gateway.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The gateway process's open descriptors. */
async function descriptors(gateway: Gateway): Promise<number> {
  let n = 0;
  for await (const _ of Deno.readDir(`/proc/${gateway.pid}/fd`)) n++;
  return n;
}

/** The port the gateway's `metrics listening` line names. */
function metricsPort(gateway: Gateway): number {
  const line = gateway.logs.map((l) => JSON.parse(l)).find((l) => l.msg === "metrics listening");
  assert.ok(line, "the metrics port is logged");
  return line.port;
}

/** The gateway's metrics, from its loopback metrics port (which the connection cap leaves out). */
async function metricValues(gateway: Gateway): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort(gateway)}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** A raw client connection: what it has read so far, and when the gateway closed it. */
class Client {
  text = "";
  /** Milliseconds from `opened` until the gateway closed the connection (EOF or reset). */
  closedAfter: number | null = null;
  readonly opened = Date.now();
  readonly done: Promise<void>;
  #closed = false;

  constructor(readonly conn: Deno.TcpConn) {
    this.done = this.#read();
  }

  static async open(gateway: Gateway): Promise<Client> {
    const port = Number(new URL(gateway.url).port);
    return new Client(await Deno.connect({ hostname: "127.0.0.1", port }));
  }

  async #read(): Promise<void> {
    const buffer = new Uint8Array(16384);
    try {
      while (true) {
        const n = await this.conn.read(buffer);
        if (n === null) break;
        this.text += decoder.decode(buffer.subarray(0, n));
      }
    } catch { /* reset by the gateway, or closed here */ }
    this.closedAfter = Date.now() - this.opened;
  }

  async send(text: string): Promise<void> {
    await this.conn.write(encoder.encode(text));
  }

  /** Waits until `count` complete answers have arrived. */
  async answers(count: number): Promise<void> {
    await eventually(
      () => Promise.resolve(this.text.split("HTTP/1.1 ").length - 1 >= count),
      10_000,
    );
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.conn.close();
    } catch { /* already closed */ }
  }
}

const HEALTH = "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n";

/** `promise`, or an error naming `what` after `ms`. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} after ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The header deadline of the tests (small, so that they wait little; margins are generous). */
const DEADLINE = 2000;

Deno.test("connections that never finish their headers are closed after headerTimeoutMs; their descriptors come back", async () => {
  const gateway = await startGateway({
    config: { server: { headerTimeoutMs: DEADLINE, metricsPort: 0 } },
  });
  const clients: Client[] = [];
  try {
    const before = await descriptors(gateway);
    const PER_KIND = 5;
    const open = (first?: string) =>
      Client.open(gateway).then(async (client) => {
        clients.push(client);
        if (first) await client.send(first);
        return client;
      });
    const each = (first?: string) =>
      Promise.all(Array.from({ length: PER_KIND }, () => open(first)));
    const kinds: Record<string, Client[]> = {
      // Nothing sent at all.
      silent: await each(),
      // Half a request line.
      partial: await each("GET /heal"),
      // A whole request answered, then nothing: an idle kept-alive connection.
      idle: await each(HEALTH),
      // A whole request, then half of the next one's headers.
      second: await each(`${HEALTH}GET /healthz HTTP/1.1\r\nHost: loc`),
    };
    // Every connection is held by the gateway: a descriptor each.
    await eventually(async () => await descriptors(gateway) >= before + clients.length);
    const held = await descriptors(gateway);
    for (const client of [...kinds.idle, ...kinds.second]) await client.answers(1);
    // All closed by the gateway, none before the deadline.
    await within(Promise.all(clients.map((c) => c.done)), DEADLINE + 15_000, "still open");
    for (const [kind, list] of Object.entries(kinds)) {
      for (const client of list) {
        assert.ok(
          client.closedAfter! >= DEADLINE - 100,
          `${kind}: closed after ${client.closedAfter} ms, before the ${DEADLINE} ms deadline`,
        );
      }
    }
    // The whole requests were answered, once; the half-sent ones never were.
    for (const client of [...kinds.idle, ...kinds.second]) {
      assert.equal(client.text.split("HTTP/1.1 200").length - 1, 1, client.text);
    }
    for (const client of [...kinds.silent, ...kinds.partial]) assert.equal(client.text, "");
    // The descriptors come back (a couple of slack for the store's own files).
    assert.ok(held >= before + clients.length, `held ${held}, before ${before}`);
    await eventually(async () => await descriptors(gateway) <= before + 2);
    // The gateway still serves, and counts no connection open but the scrape's.
    assert.equal(
      (await fetch(`${gateway.url}/healthz`, { headers: { connection: "close" } })).status,
      200,
    );
    await eventually(
      async () => (await metricValues(gateway)).get("switchyard_open_connections") === 0,
      10_000,
    );
    assert.equal((await metricValues(gateway)).get("switchyard_connections_refused_total"), 0);
  } finally {
    for (const client of clients) client.close();
    await gateway.stop();
  }
});

Deno.test("a request in flight longer than headerTimeoutMs is not cut; its connection closes once idle", async () => {
  // A deadline of its own, longer than the others: on a starved machine the request must still
  // get to the gateway within it (this test is of a request in flight, not of a slow start).
  const deadline = 5000;
  const stack = await startStack({ server: { headerTimeoutMs: deadline, maxBodyBytes: 65536 } });
  const client = await Client.open(stack.gateway);
  try {
    const { key } = await stack.gateway.createKey("slow-stream", "--credit", "5");
    // Events 250 ms apart, for longer than the deadline.
    const body = JSON.stringify({
      model: "gpt-test",
      input: "[[emulate words=32]] [[emulate delay=250]] go on",
      stream: true,
    });
    const sent = Date.now();
    await client.send(
      "POST /v1/responses HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n" +
        `authorization: Bearer ${key}\r\ncontent-length: ${encoder.encode(body).length}\r\n\r\n` +
        body,
    );
    // The stream's end, or the connection's: whichever comes first says which happened.
    await eventually(() =>
      Promise.resolve(/response\.completed/.test(client.text) || client.closedAfter !== null)
    );
    assert.equal(client.closedAfter, null, `cut while in flight:\n${client.text.slice(-300)}`);
    const streamed = Date.now() - sent;
    assert.ok(streamed > deadline + 500, `the stream took ${streamed} ms`);
    assert.match(client.text, /^HTTP\/1\.1 200/);
    // Idle once its answer is out: closed after the deadline.
    await within(client.done, deadline + 15_000, "still open");
    assert.ok(
      client.closedAfter! - streamed >= deadline - 500,
      `closed ${client.closedAfter! - streamed} ms after the stream`,
    );
  } finally {
    client.close();
    await stack.stop();
  }
});

/** Opens `n` connections, each with one request answered (so the gateway has accepted them). */
async function served(gateway: Gateway, n: number): Promise<Client[]> {
  const clients: Client[] = [];
  for (let i = 0; i < n; i++) {
    const client = await Client.open(gateway);
    clients.push(client);
    await client.send(HEALTH);
    await client.answers(1);
    assert.equal(client.closedAfter, null);
  }
  return clients;
}

/** Opens a connection and waits for the gateway to close it; the answer it got (none, refused). */
async function refused(gateway: Gateway): Promise<Client> {
  const client = await Client.open(gateway);
  await client.send(HEALTH).catch(() => {});
  await within(client.done, 10_000, "not refused");
  client.close();
  return client;
}

Deno.test("past maxConnections new connections are closed at once, logged and counted; once some close, requests work again", async () => {
  const gateway = await startGateway({
    config: { server: { maxConnections: 5, headerTimeoutMs: 60_000, metricsPort: 0 } },
  });
  const clients: Client[] = [];
  try {
    clients.push(...await served(gateway, 5));
    // Three at once: one log line now, the others' count in the next.
    for (const client of await Promise.all([1, 2, 3].map(() => refused(gateway)))) {
      assert.equal(client.text, "", "a refused connection gets no answer");
      assert.ok(client.closedAfter! < 5000, `closed after ${client.closedAfter} ms`);
    }
    // The ones held still serve.
    await clients[0].send(HEALTH);
    await clients[0].answers(2);
    let values = await metricValues(gateway);
    assert.equal(values.get("switchyard_open_connections"), 5);
    assert.equal(values.get("switchyard_connections_refused_total"), 3);
    // Logged, with a count, and not once per connection.
    await eventually(
      () => Promise.resolve(gateway.logs.some((l) => l.includes("connection limit reached"))),
      10_000,
    );
    const lines = gateway.logs.map((l) => JSON.parse(l)).filter((l) =>
      l.msg?.startsWith("connection limit reached")
    );
    assert.ok(lines.length >= 1 && lines.length < 3, JSON.stringify(lines));
    assert.equal(lines[0].max_connections, 5);
    assert.ok(lines[0].refused >= 1);
    // The refusals not in the first line are told within the next few seconds.
    await eventually(
      () =>
        Promise.resolve(
          gateway.logs.map((l) => JSON.parse(l))
            .filter((l) => l.msg?.startsWith("connection limit reached"))
            .reduce((sum, l) => sum + l.refused, 0) === 3,
        ),
      15_000,
    );
    // Two close: new connections are served again.
    clients.splice(0, 2).forEach((c) => c.close());
    await eventually(async () => {
      const res = await fetch(`${gateway.url}/healthz`, { headers: { connection: "close" } })
        .catch(() => null);
      await res?.body?.cancel();
      return res?.status === 200;
    }, 10_000);
    values = await metricValues(gateway);
    assert.ok((values.get("switchyard_open_connections") ?? 0) <= 4);
  } finally {
    for (const client of clients) client.close();
    await gateway.stop();
  }
});

Deno.test("--workers 2: the connection cap is the process's, across both threads", async () => {
  const gateway = await startGateway({
    workers: 2,
    config: { server: { maxConnections: 4, headerTimeoutMs: 60_000, metricsPort: 0 } },
  });
  const clients: Client[] = [];
  try {
    clients.push(...await served(gateway, 4));
    // Each thread would let these in if the cap were its own: the kernel spreads them over both.
    for (let i = 0; i < 6; i++) {
      const client = await refused(gateway);
      assert.equal(client.text, "");
    }
    const values = await metricValues(gateway);
    assert.equal(values.get("switchyard_open_connections"), 4);
    assert.equal(values.get("switchyard_connections_refused_total"), 6);
    clients.forEach((c) => c.close());
    clients.length = 0;
    await eventually(async () => {
      const res = await fetch(`${gateway.url}/healthz`).catch(() => null);
      await res?.body?.cancel();
      return res?.status === 200;
    }, 10_000);
  } finally {
    for (const client of clients) client.close();
    await gateway.stop();
  }
});

Deno.test("headers over maxHeaderBytes are a 431 in the route's protocol", async () => {
  const gateway = await startGateway({ config: { server: { maxHeaderBytes: 4096 } } });
  try {
    const big = { "x-padding": "p".repeat(5000) };
    const post = (path: string, headers: Record<string, string>) =>
      fetch(`${gateway.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: "{}",
      });

    const openai = await post("/v1/responses", { ...big, "x-request-id": "too-big-1" });
    assert.equal(openai.status, 431);
    assert.equal(openai.headers.get("x-request-id"), "too-big-1");
    const openaiBody = await openai.json();
    assert.equal(openaiBody.error.type, "invalid_request_error");
    assert.equal(openaiBody.error.code, "request_header_fields_too_large");
    assert.match(openaiBody.error.message, /at most 4096/);

    const anthropic = await post("/v1/messages", big);
    assert.equal(anthropic.status, 431);
    const anthropicBody = await anthropic.json();
    assert.equal(anthropicBody.type, "error");
    assert.equal(anthropicBody.error.type, "request_too_large");
    assert.equal(anthropicBody.request_id, anthropic.headers.get("request-id"));

    const google = await post("/v1beta/models/gemini-2.5-flash:generateContent", big);
    assert.equal(google.status, 431);
    const googleBody = await google.json();
    assert.equal(googleBody.error.code, 431);
    assert.equal(googleBody.error.status, "INVALID_ARGUMENT");

    // Just under the bound the request goes on (to authentication, here).
    const under = await post("/v1/responses", { "x-padding": "p".repeat(3500) });
    assert.equal(under.status, 401);
    await under.body?.cancel();
    // Logged like any refusal.
    await eventually(
      () => Promise.resolve(gateway.logs.some((l) => l.includes('"request_id":"too-big-1"'))),
    );
    const line = JSON.parse(gateway.logs.find((l) => l.includes('"request_id":"too-big-1"'))!);
    assert.equal(line.status, 431);
  } finally {
    await gateway.stop();
  }
});
