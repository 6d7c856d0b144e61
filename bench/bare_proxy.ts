/**
 * The baseline the gateway is measured against: a bare `Deno.serve` + `fetch` pass-through proxy,
 * no auth, no limits, no validation, no ledger. Prints `{"port":N}` once listening.
 *   deno run --allow-net bench/bare_proxy.ts http://127.0.0.1:8090/openai
 */
const target = Deno.args[0];
if (!target) throw new Error("usage: bare_proxy.ts TARGET_BASE_URL");

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
  return new Response(upstream.body, {
    status: upstream.status,
    headers: { "content-type": upstream.headers.get("content-type") ?? "application/json" },
  });
});
console.log(JSON.stringify({ port: server.addr.port }));
