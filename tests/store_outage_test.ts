/**
 * A gateway on PostgreSQL that loses its database: new billed calls get 503 in the client's own
 * protocol (never an answer unbilled, never a 401 for a key it cannot look up), `/readyz` says
 * so, a stream in flight is settled once the database is back, and calls are served again.
 */
import assert from "node:assert/strict";
import { eventually, type Stack, startStack, usageOf } from "./helpers/setup.ts";
import {
  HAS_POSTGRES,
  type Postgres,
  POSTGRES_MISSING,
  startPostgres,
} from "./helpers/postgres.ts";
import { skippedWithout } from "./helpers/requires.ts";

if (!HAS_POSTGRES) skippedWithout(`skipping the store outage test: ${POSTGRES_MISSING}`);

Deno.test({
  name:
    "while PostgreSQL is away billed calls get 503 in their protocol; a stream in flight settles when it is back",
  ignore: !HAS_POSTGRES,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const pg: Postgres = await startPostgres();
    let stack: Stack | null = null;
    try {
      stack = await startStack({ store: { url: pg.url } });
      const gw = stack.gateway;
      const { key } = await gw.createKey("outage", "--credit", "1", "--rpm", "0");
      const other = await gw.createKey("outage-cold", "--credit", "1", "--rpm", "0");
      const before = await usageOf(gw, key); // the key is in memory from here on
      assert.equal(before.requests, 0);

      const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
      const stream = await fetch(`${gw.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "gpt-test",
          input: "slow [[emulate words=200 delay=25]]",
          stream: true,
        }),
        client,
      });
      assert.equal(stream.status, 200);
      // The stream (about 5 s) has begun: its hold is in the database. It runs on through the
      // outage below and ends while the database is away.
      const reader = stream.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      const relayed = (async () => {
        let text = first;
        for (let chunk; !(chunk = await reader.read()).done;) {
          text += new TextDecoder().decode(chunk.value);
        }
        return text;
      })();
      await pg.pause();

      const call = (path: string, body: unknown, headers: Record<string, string>) =>
        fetch(`${gw.url}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify(body),
        }).then(async (res) => ({
          status: res.status,
          retryAfter: res.headers.get("retry-after"),
          body: await res.json(),
        }));
      const responses = await call(
        "/v1/responses",
        { model: "gpt-test", input: "hi" },
        { authorization: `Bearer ${key}` },
      );
      assert.equal(responses.status, 503);
      assert.equal(responses.retryAfter, "1");
      assert.match(responses.body.error.message, /cannot reach its database/);
      assert.ok(!JSON.stringify(responses.body).includes(String(pg.port)), "no database address");
      const messages = await call(
        "/v1/messages",
        { model: "claude-test", max_tokens: 16, messages: [{ role: "user", content: "hi" }] },
        { "x-api-key": key, "anthropic-version": "2023-06-01" },
      );
      assert.equal(messages.status, 503);
      assert.equal(messages.body.type, "error");
      const gemini = await call(
        "/v1beta/models/gemini-test:generateContent",
        { contents: [{ role: "user", parts: [{ text: "hi" }] }] },
        { "x-goog-api-key": key },
      );
      assert.equal(gemini.status, 503);
      assert.equal(gemini.body.error.code, 503);
      // A key not in memory cannot be checked: 503 as well, not 401.
      const cold = await call(
        "/v1/responses",
        { model: "gpt-test", input: "hi" },
        { authorization: `Bearer ${other.key}` },
      );
      assert.equal(cold.status, 503);
      const ready = await fetch(`${gw.url}/readyz`);
      const readiness = await ready.json();
      assert.equal(ready.status, 503);
      assert.equal(readiness.store, "error");
      assert.match(readiness.store_error, /unreachable/);

      // The stream ends while the database is away: its settlement waits for it.
      assert.match(await relayed, /response\.completed/);
      client.close();
      await pg.resume();
      await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200);
      await eventually(async () => (await usageOf(gw, key)).requests === 1);
      const after = await usageOf(gw, key);
      assert.equal(after.held_nanousd, 0);
      assert.ok(after.spent_nanousd > 0, "the stream was charged");
      const again = await call(
        "/v1/responses",
        { model: "gpt-test", input: "hi" },
        { authorization: `Bearer ${other.key}` },
      );
      assert.equal(again.status, 200);
    } finally {
      await stack?.stop();
      await pg.stop();
    }
  },
});
