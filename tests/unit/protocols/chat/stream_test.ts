import assert from "node:assert/strict";
import { withoutUsage } from "../../../../src/protocols/chat/stream.ts";
import { chatUsage } from "../../../../src/protocols/chat/usage.ts";

const event = (data: string) => ({
  event: "",
  data: () => data,
  raw: () => new TextEncoder().encode(data),
});

Deno.test("withoutUsage takes out only what asking for usage caused: the usage chunk and usage: null", () => {
  assert.equal(
    withoutUsage(
      event('{"id":"c","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}'),
    ),
    "",
    "the usage-only chunk is dropped",
  );
  assert.equal(
    withoutUsage(
      event(
        '{"id":"c","choices":[{"index":0,"delta":{"content":"\\"usage\\":null"}}],"usage":null}',
      ),
    ),
    'data: {"id":"c","choices":[{"index":0,"delta":{"content":"\\"usage\\":null"}}]}\n\n',
  );
  assert.equal(
    withoutUsage(event('{"usage":null,"id":"c","choices":[]}')),
    'data: {"id":"c","choices":[]}\n\n',
  );
  // A usage the upstream sends unasked (on its last content chunk, at the top or in the choice)
  // is the upstream's own: the chunk passes as it came.
  for (
    const unasked of [
      '{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3}}',
      '{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop","usage":{"prompt_tokens":3}}]}',
    ]
  ) {
    assert.equal(withoutUsage(event(unasked)), null, unasked);
  }
  assert.equal(withoutUsage(event('{"id":"c","choices":[{"delta":{"content":"x"}}]}')), null);
  assert.equal(withoutUsage(event("[DONE]")), null);
  assert.equal(withoutUsage(event('{"error":{"message":"usage"}}')), null);
});

Deno.test("chat usage is read at the top level or inside a choice, with vendor cache fields", () => {
  assert.equal(
    chatUsage({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 2 } })
      ?.outputTokens,
    2,
  );
  const moonshot = chatUsage({
    choices: [{ usage: { prompt_tokens: 10, completion_tokens: 1, cached_tokens: 4 } }],
  });
  assert.equal(moonshot?.cachedInputTokens, 4);
  assert.equal(moonshot?.inputTokens, 6);
  const deepseek = chatUsage({
    usage: {
      prompt_tokens: 10,
      completion_tokens: 1,
      prompt_cache_hit_tokens: 7,
      prompt_cache_miss_tokens: 3,
    },
  });
  assert.equal(deepseek?.cachedInputTokens, 7);
  assert.equal(chatUsage({ choices: [{ delta: {} }], usage: null }), null);
});
