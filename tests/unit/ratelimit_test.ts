import assert from "node:assert/strict";
import { formatDuration, RateLimiter, rateLimitHeaders } from "../../src/auth/ratelimit.ts";

Deno.test("the sliding window allows `limit` requests per 60 s and then refuses", () => {
  const limiter = new RateLimiter();
  const t0 = 1_000_000;
  assert.deepEqual(limiter.check("k", 2, t0), {
    allowed: true,
    limit: 2,
    remaining: 1,
    resetMs: 0,
  });
  assert.deepEqual(limiter.check("k", 2, t0 + 10_000), {
    allowed: true,
    limit: 2,
    remaining: 0,
    resetMs: 50_000,
  });
  assert.deepEqual(limiter.check("k", 2, t0 + 20_000), {
    allowed: false,
    limit: 2,
    remaining: 0,
    resetMs: 40_000,
  });
  // The first request leaves the window at t0 + 60 s; refused requests did not count.
  assert.equal(limiter.check("k", 2, t0 + 59_999).allowed, false);
  assert.equal(limiter.check("k", 2, t0 + 60_000).allowed, true);
  assert.equal(limiter.check("k", 2, t0 + 60_001).allowed, false);
  assert.equal(limiter.check("other", 2, t0).allowed, true);
  assert.equal(limiter.check("free", 0, t0).allowed, true);
});

Deno.test("rate-limit headers follow OpenAI's names and duration format", () => {
  assert.deepEqual(
    rateLimitHeaders({ allowed: false, limit: 5, remaining: 0, resetMs: 1_500 }),
    {
      "x-ratelimit-limit-requests": "5",
      "x-ratelimit-remaining-requests": "0",
      "x-ratelimit-reset-requests": "2s",
      "retry-after": "2",
    },
  );
  assert.deepEqual(rateLimitHeaders({ allowed: true, limit: 0, remaining: 0, resetMs: 0 }), {});
  assert.equal(formatDuration(0), "0s");
  assert.equal(formatDuration(12), "12ms");
  assert.equal(formatDuration(60_000), "1m0s");
  assert.equal(formatDuration(361_000), "6m1s");
});
