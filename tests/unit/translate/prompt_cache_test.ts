/** The client's cache intent: OpenAI's key and retention, the gateway's TTL, history unmarked. */
import assert from "node:assert/strict";
import { GatewayError } from "../../../src/http/errors.ts";
import type { Message } from "../../../src/translate/ir.ts";
import { openAiCacheIntent, placedTtl, unmarked } from "../../../src/translate/prompt_cache.ts";

Deno.test("a Responses or chat body caches by itself, with the key and retention it gives", () => {
  assert.deepEqual(openAiCacheIntent({}), { implicit: true });
  assert.deepEqual(
    openAiCacheIntent({ prompt_cache_key: "conv-1", prompt_cache_retention: "24h" }),
    { implicit: true, key: "conv-1", retention: "24h" },
  );
  assert.deepEqual(openAiCacheIntent({ prompt_cache_key: null }), { implicit: true });
  assert.throws(
    () => openAiCacheIntent({ prompt_cache_key: 7 }),
    (e) => e instanceof GatewayError && e.status === 400 && e.options.param === "prompt_cache_key",
  );
});

Deno.test("the gateway's breakpoints live an hour only when extended retention is asked", () => {
  assert.equal(placedTtl({ implicit: true, retention: "24h" }), "1h");
  assert.equal(placedTtl({ implicit: true, retention: "in_memory" }), undefined);
  assert.equal(placedTtl({ implicit: true }), undefined);
  assert.equal(placedTtl(undefined), undefined);
});

Deno.test("kept history loses its breakpoints, results' inner parts included; nothing else", () => {
  const history: Message[] = [
    { role: "system", content: [{ type: "text", text: "s", cache: {} }] },
    {
      role: "user",
      content: [
        { type: "text", text: "look", cache: { ttl: "1h" } },
        { type: "file", mediaType: "image/png", data: { base64: "AA" }, cache: {} },
      ],
    },
    {
      role: "assistant",
      content: [
        { type: "reasoning", text: "hm" },
        { type: "tool-call", id: "c1", name: "f", input: {}, cache: {} },
      ],
    },
    {
      role: "tool",
      content: [{
        type: "tool-result",
        id: "c1",
        content: [{ type: "text", text: "ok", cache: {} }],
        cache: { ttl: "5m" },
      }],
    },
  ];
  const plain = unmarked(history);
  assert.ok(!JSON.stringify(plain).includes('"cache"'));
  assert.deepEqual(plain[2].content[0], { type: "reasoning", text: "hm" });
  assert.deepEqual(plain[3], {
    role: "tool",
    content: [{ type: "tool-result", id: "c1", content: [{ type: "text", text: "ok" }] }],
  });
  assert.ok(JSON.stringify(history).includes('"cache"'), "the kept history is not changed");
});
