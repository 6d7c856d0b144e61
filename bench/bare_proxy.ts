/**
 * The baseline the gateway is measured against: a bare `Deno.serve` + `fetch` pass-through proxy,
 * no auth, no limits, validation or ledger. Prints `{"port":N}` once listening.
 *   deno run --allow-net bench/bare_proxy.ts http://127.0.0.1:8090/openai [--relay]
 * The upstream body goes to `Deno.serve` as it is, and Deno moves its bytes without JavaScript.
 * With `--relay` each chunk is read and re-sent from JavaScript instead (the reader the gateway
 * uses, into a stream one chunk ahead of the client, as the gateway's relay): the least any proxy
 * that sees a stream's bytes holds per open stream (the memory scenario's `JS relay`).
 */
import { chunkReader } from "../src/http/bytes.ts";

const [target, mode] = Deno.args;
if (!target || (mode !== undefined && mode !== "--relay")) {
  throw new Error("usage: bare_proxy.ts TARGET_BASE_URL [--relay]");
}

/** The upstream body, each chunk passed through JavaScript. */
function relayed(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = chunkReader(body);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 1 });
}

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
  const url = new URL(req.url);
  const upstream = await fetch(target + url.pathname + url.search, {
    method: req.method,
    // Every family's key header, so one proxy reaches each emulated provider.
    headers: {
      "content-type": "application/json",
      authorization: "Bearer bench-upstream",
      "x-api-key": "bench-upstream",
      "x-goog-api-key": "bench-upstream",
      "anthropic-version": "2023-06-01",
    },
    body: req.body,
  });
  const body = mode && upstream.body ? relayed(upstream.body) : upstream.body;
  return new Response(body, {
    status: upstream.status,
    headers: { "content-type": upstream.headers.get("content-type") ?? "application/json" },
  });
});
console.log(JSON.stringify({ port: server.addr.port }));
