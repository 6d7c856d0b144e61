/**
 * Traces: with `OTEL_DENO=true` the gateway's spans reach an OTLP/HTTP receiver (this test's, JSON
 * encoding): per model call one span with the GenAI attributes — for a stream too, with the usage
 * known only at its end — under Deno's server span, and the upstream fetch as its child; a key a
 * client put in `?key=` is overwritten in the server span's URL attributes.
 */
import assert from "node:assert/strict";
import { startStack } from "./helpers/setup.ts";
import { waitFor } from "./helpers/poll.ts";

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

const received: Span[] = [];
const bodies: string[] = [];
const receiver = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
  const text = await req.text();
  bodies.push(text);
  if (new URL(req.url).pathname === "/v1/traces") {
    const value = (v: Record<string, unknown>) =>
      v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ??
        v.doubleValue ?? (v.arrayValue as { values?: Record<string, unknown>[] })?.values?.map(
          (x) => x.stringValue,
        );
    for (const rs of JSON.parse(text).resourceSpans ?? []) {
      for (const ss of rs.scopeSpans ?? []) {
        for (const span of ss.spans ?? []) {
          received.push({
            ...span,
            attributes: Object.fromEntries(
              (span.attributes ?? []).map((a: { key: string; value: Record<string, unknown> }) => [
                a.key,
                value(a.value),
              ]),
            ),
          });
        }
      }
    }
  }
  return Response.json({});
});

const stack = await startStack({
  env: {
    OTEL_DENO: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.addr.port}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_DENO_CONSOLE: "ignore",
    OTEL_BSP_SCHEDULE_DELAY: "100",
  },
});
const { gateway } = stack;
Deno.test.afterAll(async () => {
  await stack.stop();
  await receiver.shutdown();
});

function spanNamed(name: string): Promise<Span> {
  return waitFor(() => received.find((s) => s.name === name), {
    what: `a span "${name}" (got ${received.map((s) => s.name).join(", ")})`,
  });
}

Deno.test("a JSON call: its GenAI span, under Deno's server span, with the upstream fetch as its child", async () => {
  const { key } = await gateway.createKey("trace-json", "--credit", "1");
  const res = await fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-test", input: "trace me", max_output_tokens: 64 }),
  });
  const answer = await res.json();
  const span = await spanNamed("chat gpt-test");
  assert.equal(span.kind, 3, "a client span (OTLP's numbering)");
  assert.equal(span.attributes["gen_ai.operation.name"], "chat");
  assert.equal(span.attributes["gen_ai.provider.name"], "openai");
  assert.equal(span.attributes["gen_ai.request.model"], "gpt-test");
  assert.equal(span.attributes["gen_ai.response.model"], "gpt-5.4");
  assert.equal(span.attributes["gen_ai.usage.input_tokens"], answer.usage.input_tokens);
  assert.equal(span.attributes["gen_ai.usage.output_tokens"], answer.usage.output_tokens);
  assert.deepEqual(span.attributes["gen_ai.response.finish_reasons"], ["stop"]);
  // The spans end at different moments (the server's once the response is sent) and are exported
  // in batches: each may come in a later batch than the call's.
  const server = await waitFor(() => received.find((s) => s.spanId === span.parentSpanId), {
    what: "the call span's parent span",
  });
  assert.equal(server.kind, 2, "Deno's server span");
  const upstream = await waitFor(() => received.find((s) => s.parentSpanId === span.spanId), {
    what: "the upstream call as the call span's child",
  });
  assert.match(String(upstream.attributes["url.full"]), /\/openai\/v1\/responses$/);
});

Deno.test("a stream's span ends when it is settled, with its usage and finish reason", async () => {
  const { key } = await gateway.createKey("trace-stream", "--credit", "1");
  const res = await fetch(`${gateway.url}/v1/messages`, {
    method: "POST",
    headers: {
      "x-api-key": key,
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
    },
    body: JSON.stringify({
      model: "claude-test",
      max_tokens: 64,
      stream: true,
      messages: [{ role: "user", content: "stream a trace" }],
    }),
  });
  const text = await res.text();
  const output = Number([...text.matchAll(/"output_tokens":(\d+)/g)].at(-1)![1]);
  const span = await spanNamed("chat claude-test");
  assert.equal(span.attributes["gen_ai.provider.name"], "anthropic");
  assert.equal(span.attributes["gen_ai.usage.output_tokens"], output);
  assert.deepEqual(span.attributes["gen_ai.response.finish_reasons"], ["end_turn"]);
});

Deno.test("a key sent in ?key= (refused: keys go in headers) is overwritten in the server span's URL", async () => {
  const { key } = await gateway.createKey("trace-gemini", "--credit", "1");
  const res = await fetch(
    `${gateway.url}/v1beta/models/gemini-test:generateContent?alt=json&key=${key}`,
    {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
    },
  );
  assert.equal(res.status, 401);
  await res.body?.cancel();
  const server = await waitFor(
    () =>
      received.find((s) =>
        s.kind === 2 && String(s.attributes["url.path"]).includes("gemini-test:generateContent")
      ),
    { what: "the request's server span" },
  );
  assert.equal(server.attributes["url.query"], "alt=json&key=REDACTED");
  assert.match(String(server.attributes["url.full"]), /key=REDACTED$/);
  // Deno's server span keeps the URL it recorded (its attributes can be overwritten, not removed:
  // the README says so); no other span carries the key.
  const others = received.filter((s) => s !== server);
  assert.ok(!others.some((s) => JSON.stringify(s).includes(key)));
});
