/**
 * A provider's attempts: each sends the call with the key it is given — the surface's auth header,
 * its fixed headers and the call's own, and a JSON body's content type — under its own abort
 * controller, aborted with the call's.
 */
import assert from "node:assert/strict";
import type { ProviderEntry } from "../../../src/catalog/catalog.ts";
import { surfacesOf } from "../../../src/catalog/surfaces.ts";
import { attempts, CallAbort } from "../../../src/providers/index.ts";

const DEADLINES = { headersMs: 5_000 };

/** A loopback upstream that answers each request with the headers it got. */
function echo() {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.arrayBuffer();
    return Response.json(Object.fromEntries(req.headers));
  });
}

function provider(port: number): ProviderEntry {
  const baseUrl = `http://127.0.0.1:${port}/v1`;
  return {
    name: "p",
    type: "openai",
    baseUrl,
    keys: [
      { secret: "sk-one", weight: 1, id: "one", label: "key 1 of 2" },
      { secret: "sk-two", weight: 1, id: "two", label: "key 2 of 2" },
    ],
    enabled: true,
    surfaces: surfacesOf("openai", baseUrl),
  };
}

Deno.test("each attempt sends its own key's header; a body its content type; own headers kept", async () => {
  const server = echo();
  try {
    const p = provider(server.addr.port);
    const [one, two] = p.keys;
    const sent = (call: Parameters<typeof attempts>[1], key = one) =>
      attempts(p, call, new CallAbort())(key, DEADLINES).then((r) => r.json());
    // Twice with the same key and body (the second time from headers made once), then another
    // key, no body, and headers of the call's own.
    for (let i = 0; i < 2; i++) {
      const got = await sent({ path: "/chat/completions", body: "{}" });
      assert.equal(got.authorization, "Bearer sk-one");
      assert.equal(got["content-type"], "application/json");
    }
    const other = await sent({ path: "/chat/completions", body: "{}" }, two);
    assert.equal(other.authorization, "Bearer sk-two");
    const bare = await sent({ method: "GET", path: "/models" });
    assert.equal(bare.authorization, "Bearer sk-one");
    assert.equal(bare["content-type"], undefined, "no body, no content type");
    const own = await sent({
      path: "/chat/completions",
      body: "{}",
      headers: { "content-type": "application/json; charset=utf-8", "x-own": "1" },
    });
    assert.equal(own.authorization, "Bearer sk-one");
    assert.equal(own["content-type"], "application/json; charset=utf-8");
    assert.equal(own["x-own"], "1");
    // The headers made once were not changed by the calls that had their own.
    const again = await sent({ path: "/chat/completions", body: "{}" });
    assert.equal(again["content-type"], "application/json");
    assert.equal(again["x-own"], undefined);
  } finally {
    await server.shutdown();
  }
});

Deno.test("a call's abort aborts its attempt in flight, and an attempt that starts after it at once", () => {
  const call = new CallAbort();
  const first = call.attempt();
  const second = call.attempt();
  assert.equal(second.signal.aborted, false);
  call.abort();
  assert.equal(call.signal.aborted, true);
  assert.equal(second.signal.aborted, true, "the attempt in flight");
  assert.equal(first.signal.aborted, false, "an earlier attempt ended before the next began");
  assert.equal(call.attempt().signal.aborted, true, "one after the call's abort");
});
