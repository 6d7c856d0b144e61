import assert from "node:assert/strict";
import { formatDuration, RateLimiter, rateLimitHeaders } from "../../../src/auth/ratelimit.ts";

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

Deno.test("memory per key stays bounded whatever the limit (2,000 keys at 5,000,000 rpm)", () => {
  const limiter = new RateLimiter();
  const used = () => {
    const m = Deno.memoryUsage();
    return m.heapUsed + m.external;
  };
  const before = used();
  // 16 KiB a key is twice the documented bound; an array of `limit` timestamps (40 MB a key)
  // fails at the first checkpoint, before allocating much.
  const bound = (keys: number) => keys * 16 * 1024 + 8 * 1024 * 1024;
  for (let i = 1; i <= 2_000; i++) {
    assert.equal(limiter.check(`key-${i}`, 5_000_000, 1_000_000).allowed, true);
    if (i % 10 === 0) assert.ok(used() - before <= bound(i), `memory after ${i} keys`);
  }
  assert.equal(limiter.size, 2_000);
});

Deno.test("a large limit allows exactly `limit` requests per window; refused ones don't count", () => {
  const limiter = new RateLimiter();
  const t0 = 1_000_000;
  const limit = 3_000;
  // 3,000 requests spread over 59 s, all allowed.
  for (let i = 0; i < limit; i++) {
    const d = limiter.check("k", limit, t0 + Math.floor((i * 59_000) / limit));
    assert.equal(d.allowed, true, `request ${i}`);
    assert.equal(d.remaining, limit - i - 1);
  }
  // The first request (t0) leaves the window at t0 + 60 s.
  assert.deepEqual(limiter.check("k", limit, t0 + 59_000), {
    allowed: false,
    limit,
    remaining: 0,
    resetMs: 1_000,
  });
  for (let i = 0; i < 1_000; i++) {
    assert.deepEqual(limiter.check("k", limit, t0 + 59_500), {
      allowed: false,
      limit,
      remaining: 0,
      resetMs: 500,
    });
  }
  assert.equal(limiter.check("k", limit, t0 + 59_999).allowed, false);
  // At t0 + 60 s the 100 ms bucket of the oldest requests (t0 … t0 + 98 ms: 6 of them) leaves:
  // exactly 6 more are allowed, because the 1,002 refused requests were not counted.
  for (let i = 5; i >= 0; i--) {
    assert.deepEqual(limiter.check("k", limit, t0 + 60_000), {
      allowed: true,
      limit,
      remaining: i,
      resetMs: i > 0 ? 0 : 100,
    });
  }
  assert.deepEqual(limiter.check("k", limit, t0 + 60_000), {
    allowed: false,
    limit,
    remaining: 0,
    resetMs: 100,
  });
  // Once every counted request has left the window, the whole limit is available again.
  assert.deepEqual(limiter.check("k", limit, t0 + 120_000), {
    allowed: true,
    limit,
    remaining: limit - 1,
    resetMs: 0,
  });
});

Deno.test("resetMs of a refused request is > 0 and ≤ 60 s, and shrinks as time passes", () => {
  const limiter = new RateLimiter();
  const t0 = 1_234_567; // not on a bucket boundary
  for (const limit of [2, 1_024, 1_025, 3_000]) {
    const key = `burst-${limit}`;
    for (let i = 0; i < limit; i++) limiter.check(key, limit, t0);
    let previous = Infinity;
    for (const dt of [0, 1, 30_000, 59_000]) {
      const d = limiter.check(key, limit, t0 + dt);
      assert.equal(d.allowed, false, `limit ${limit} at +${dt}`);
      assert.ok(d.resetMs > 0 && d.resetMs <= 60_000, `resetMs ${d.resetMs}`);
      assert.ok(d.resetMs < previous);
      previous = d.resetMs;
      assert.ok(Number(rateLimitHeaders(d)["retry-after"]) >= 1);
    }
    // Allowed again once resetMs has elapsed.
    const refused = limiter.check(key, limit, t0 + 59_999);
    assert.equal(limiter.check(key, limit, t0 + 59_999 + refused.resetMs).allowed, true);
  }
});

Deno.test("limits up to 1,024 keep exact per-request timestamps", () => {
  const limiter = new RateLimiter();
  const t0 = 1_000_000;
  for (let i = 0; i < 1_024; i++) assert.equal(limiter.check("k", 1_024, t0 + i).allowed, true);
  assert.deepEqual(limiter.check("k", 1_024, t0 + 1_024), {
    allowed: false,
    limit: 1_024,
    remaining: 0,
    resetMs: 58_976,
  });
  // Each request leaves exactly 60 s after it was made: one at a time, millisecond by millisecond.
  assert.equal(limiter.check("k", 1_024, t0 + 60_000).allowed, true);
  assert.equal(limiter.check("k", 1_024, t0 + 60_000).allowed, false);
  assert.equal(limiter.check("k", 1_024, t0 + 60_001).allowed, true);
  assert.equal(limiter.check("k", 1_024, t0 + 60_001).allowed, false);
});

Deno.test("idle keys are swept when many keys are tracked; active ones are kept", () => {
  const limiter = new RateLimiter();
  const t0 = 1_000_000;
  for (let i = 0; i < 10_000; i++) limiter.check(`k${i}`, i % 2 === 0 ? 2 : 5_000, t0);
  limiter.check("k0", 2, t0 + 30_000);
  limiter.check("k1", 5_000, t0 + 30_000);
  assert.equal(limiter.size, 10_000);
  // The 10,001st key triggers a sweep: everything counted only at t0 has left the window.
  assert.equal(limiter.check("new", 5_000_000, t0 + 60_000).allowed, true);
  assert.equal(limiter.size, 3);
  // The kept keys still remember their requests.
  assert.equal(limiter.check("k0", 2, t0 + 60_000).remaining, 0);
  assert.equal(limiter.check("k1", 5_000, t0 + 60_000).remaining, 4_998);
});
