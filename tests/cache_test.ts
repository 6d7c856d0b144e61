/**
 * The prompt cache, shown to whoever pays: cache reads and 5-minute / 1-hour writes priced each at
 * its own rate on every family — Anthropic's writes by lifetime, OpenAI's `cached_tokens` (and the
 * newer `cache_write_tokens`), Gemini's `cachedContentTokenCount` — from every client protocol,
 * native and translated, JSON and streamed; and what the cache did (hit rate, writes, what reads
 * saved, what misses the gateway caused lost) in `/v1/usage` (the caller's account and key only),
 * the admin API and the ledger, to the nanoUSD.
 */
import assert from "node:assert/strict";
import { startStack, TEST_PRICE, usageOf } from "./helpers/setup.ts";
import { anthropic, bearer, goog, type Json, post } from "./helpers/http.ts";
import { settledEntry, withStore } from "./helpers/store.ts";
import { tokenCost } from "../src/billing/price.ts";
import { nanoToUsd } from "../src/money.ts";
import type { CacheCharge, LedgerEntry } from "../src/store/store.ts";

const ADMIN = "cache-admin-token-0123456789abcdef";
const stack = await startStack({ admin: { token: ADMIN } });
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

/** The test prices in nanoUSD per million tokens. */
const RATE = {
  input: TEST_PRICE.input * 1e9,
  cached: TEST_PRICE.cachedInput * 1e9,
  write: TEST_PRICE.cacheWrite * 1e9,
  write1h: TEST_PRICE.cacheWrite1h * 1e9,
};
/** What reading `n` tokens from the cache saves at the test prices. */
const saving = (n: number) => tokenCost(n, RATE.input) - tokenCost(n, RATE.cached);

/** A prompt long enough for the cache directives' counts (well over 100 tokens). */
const PREFIX = "Please keep this long shared prefix in mind. ".repeat(20);

type Family = "anthropic" | "openai" | "gemini";
const MODEL: Record<Family, string> = {
  anthropic: "claude-test",
  openai: "gpt-test",
  gemini: "gemini-test",
};
/** What each family's upstream reports for `cached=20 cache_write=30 cache_write_1h=40`. */
const REPORTED: Record<Family, { cached: number; write: number; write1h: number }> = {
  anthropic: { cached: 20, write: 30, write1h: 40 },
  // OpenAI reports one kind of write (`cache_write_tokens`), billed at the 5-minute rate.
  openai: { cached: 20, write: 30, write1h: 0 },
  // Gemini's implicit caching reports reads only.
  gemini: { cached: 20, write: 0, write1h: 0 },
};
const DIRECTIVE = "[[emulate cached=20 cache_write=30 cache_write_1h=40]]";

type Client = "responses" | "chat" | "messages" | "generate";

/** One call from `client` to `model`, JSON or streamed; its request id once it is answered. */
async function call(
  key: string,
  client: Client,
  model: string,
  stream: boolean,
  text: string,
): Promise<string> {
  const content = `${PREFIX}${text}`;
  const res = client === "responses"
    ? await post(gateway.url, "/v1/responses", bearer(key), {
      model,
      input: content,
      max_output_tokens: 64,
      stream,
    })
    : client === "chat"
    ? await post(gateway.url, "/v1/chat/completions", bearer(key), {
      model,
      messages: [{ role: "user", content }],
      max_tokens: 64,
      stream,
    })
    : client === "messages"
    ? await post(gateway.url, "/v1/messages", anthropic(key), {
      model,
      max_tokens: 64,
      messages: [{ role: "user", content }],
      stream,
    })
    : await post(
      gateway.url,
      `/v1beta/models/${model}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
      goog(key),
      { contents: [{ role: "user", parts: [{ text: content }] }] },
    );
  assert.equal(res.status, 200, `${client} → ${model}: ${await res.clone().text()}`);
  await res.text();
  return res.headers.get("x-request-id")!;
}

/** The settled ledger entry of a request (a stream settles as it ends). */
const entryOf = (requestId: string): Promise<LedgerEntry> => settledEntry(gateway, requestId);

/** The quantity and amount of a unit line (0 when absent). */
function line(entry: LedgerEntry, unit: string): { quantity: number; amount: number } {
  return entry.units.find((u) => u.unit === unit) ?? { quantity: 0, amount: 0 };
}

Deno.test("cache reads and 5-minute / 1-hour writes are priced each at its own rate, native and translated", async () => {
  const { key } = await gateway.createKey("cache-units", "--credit", "10");
  const clients: Client[] = ["responses", "chat", "messages", "generate"];
  const families: Family[] = ["anthropic", "openai", "gemini"];
  let n = 0;
  for (const family of families) {
    for (const client of clients) {
      const stream = n++ % 2 === 1;
      const what = `${client} → ${family}${stream ? ", streamed" : ""}`;
      const entry = await entryOf(await call(key, client, MODEL[family], stream, DIRECTIVE));
      const expected = REPORTED[family];
      const input = line(entry, "input_tokens");
      const cached = line(entry, "cached_input_tokens");
      const write = line(entry, "cache_write_tokens");
      const write1h = line(entry, "cache_write_1h_tokens");
      assert.deepEqual(
        [cached.quantity, write.quantity, write1h.quantity],
        [expected.cached, expected.write, expected.write1h],
        what,
      );
      assert.ok(input.quantity > 100, `${what}: the uncached rest (${input.quantity})`);
      assert.deepEqual([input.amount, cached.amount, write.amount, write1h.amount], [
        tokenCost(input.quantity, RATE.input),
        tokenCost(expected.cached, RATE.cached),
        tokenCost(expected.write, RATE.write),
        tokenCost(expected.write1h, RATE.write1h),
      ], what);
      assert.equal(entry.estimated, false, what);
      // The entry keeps what the cache did: every input token, reads, writes, what reads saved.
      const all = input.quantity + expected.cached + expected.write + expected.write1h;
      assert.deepEqual(
        entry.cache,
        {
          inputTokens: all,
          cachedTokens: expected.cached,
          cacheWriteTokens: expected.write,
          cacheWrite1hTokens: expected.write1h,
          saved: saving(expected.cached),
          miss: null,
        } satisfies CacheCharge,
        what,
      );
    }
  }
  // /v1/usage shows each as its own unit.
  const usage = await usageOf(gateway, key);
  assert.equal(usage.by_unit.cached_input_tokens.quantity, 12 * 20);
  assert.equal(usage.by_unit.cache_write_tokens.quantity, 8 * 30);
  assert.equal(usage.by_unit.cache_write_1h_tokens.quantity, 4 * 40);
  assert.equal(usage.by_unit.cache_write_1h_tokens.spent_nanousd, 4 * tokenCost(40, RATE.write1h));
});

/** A settled charge with a cache miss the gateway caused, written beside the gateway. */
async function seedMiss(account: string, keyId: string): Promise<void> {
  await withStore(gateway, async (store) => {
    const { id: accountId } = (await store.account(account))!;
    const hold = await store.reserve({
      requestId: "req_seeded_miss",
      keyId,
      accountId,
      endpoint: "messages",
      model: "claude-test",
      provider: "anthropic",
      reserve: 10_000_000,
      estimate: { units: [], amount: 0 },
    });
    assert.ok(hold !== null);
    const amount = tokenCost(2_000, RATE.write);
    assert.ok(
      await store.settle(hold, {
        units: [{ unit: "cache_write_tokens", quantity: 2_000, amount }],
        amount,
        estimated: false,
        cache: {
          inputTokens: 2_000,
          cachedTokens: 0,
          cacheWriteTokens: 2_000,
          cacheWrite1hTokens: 0,
          saved: 0,
          miss: { cause: "failover", tokens: 1_500, lost: saving(1_500) },
        },
      }),
    );
  });
}

async function admin(path: string): Promise<Json> {
  const res = await fetch(`${gateway.url}${path}`, { headers: bearer(ADMIN) });
  assert.equal(res.status, 200, path);
  return await res.json();
}

/** A report without the fields only /v1/usage adds. */
function report(cache: Json): Json {
  const { days: _days, since: _since, key: _key, by_key: _byKey, ...rest } = cache;
  return rest;
}

Deno.test("/v1/usage and the admin API show hit rate, writes, savings and losses to the nanoUSD, each account its own", async () => {
  const one = await gateway.createKey("cache-team", "--credit", "10");
  const two = await gateway.createKey("cache-team");
  const other = await gateway.createKey("cache-rival", "--credit", "10");
  const entries = [
    await entryOf(await call(one.key, "messages", "claude-test", false, DIRECTIVE)),
    await entryOf(await call(one.key, "responses", "gpt-test", true, "[[emulate cached=50]]")),
    await entryOf(await call(two.key, "generate", "gemini-test", false, "[[emulate cached=20]]")),
  ];
  await entryOf(await call(other.key, "messages", "claude-test", false, "[[emulate cached=100]]"));
  await seedMiss("cache-team", two.id);
  // Embeddings go through no prompt cache: charged, but not in the cache's figures.
  const embedded = await post(gateway.url, "/v1/embeddings", bearer(one.key), {
    model: "embed-test",
    input: "no cache here",
  });
  assert.equal(embedded.status, 200);
  assert.equal((await entryOf(embedded.headers.get("x-request-id")!)).cache, null);
  await embedded.body?.cancel();

  const usage = await usageOf(gateway, one.key);
  const cache = usage.cache;
  const inputs = entries.map((e) => e.cache!.inputTokens);
  const total = inputs.reduce((a, b) => a + b, 0) + 2_000;
  const today = new Date().toISOString().slice(0, 10);
  assert.equal(cache.days, 30);
  assert.equal(
    cache.since,
    new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10),
  );
  const saved = saving(20) + saving(50) + saving(20);
  const lost = saving(1_500);
  const totals = {
    requests: 4,
    input_tokens: total,
    cached_input_tokens: 90,
    cache_write_tokens: 30 + 2_000,
    cache_write_1h_tokens: 40,
    uncached_input_tokens: total - 90 - 2_030 - 40,
    hit_rate: 90 / total,
    saved_usd: nanoToUsd(saved),
    saved_nanousd: saved,
    missed_input_tokens: 1_500,
    lost_usd: nanoToUsd(lost),
    lost_nanousd: lost,
    misses: {
      failover: {
        requests: 1,
        missed_input_tokens: 1_500,
        lost_usd: nanoToUsd(lost),
        lost_nanousd: lost,
      },
    },
  };
  const { by_model: byModel, by_day: byDay, ...figures } = report(cache);
  assert.deepEqual(figures, totals, "the account's: both its keys, not the other account's");
  assert.deepEqual(byDay, [{ day: today, ...totals }]);
  assert.deepEqual(Object.keys(byModel).sort(), ["claude-test", "gemini-test", "gpt-test"]);
  assert.equal(byModel["claude-test"].requests, 2, "the rival's claude call is not in it");
  assert.equal(byModel["claude-test"].hit_rate, 20 / (inputs[0] + 2_000));
  assert.equal(byModel["claude-test"].lost_nanousd, lost);
  assert.equal(byModel["gpt-test"].saved_nanousd, saving(50));
  assert.equal(byModel["gemini-test"].hit_rate, 20 / inputs[2]);
  // The calling key's own figures: its two calls.
  assert.equal(cache.key.requests, 2);
  assert.equal(cache.key.input_tokens, inputs[0] + inputs[1]);
  assert.equal(cache.key.saved_nanousd, saving(20) + saving(50));
  assert.equal(cache.key.lost_nanousd, 0);
  assert.deepEqual(cache.key.misses, {});
  // The other key of the account sees the account's figures and its own.
  const seenByTwo = (await usageOf(gateway, two.key)).cache;
  assert.deepEqual(report(seenByTwo), report(cache));
  assert.equal(seenByTwo.key.lost_nanousd, lost);
  assert.equal(seenByTwo.key.hit_rate, 20 / (inputs[2] + 2_000));
  // The other account sees its own call only.
  const rival = (await usageOf(gateway, other.key)).cache;
  assert.deepEqual([rival.requests, rival.cached_input_tokens, rival.saved_nanousd], [
    1,
    100,
    saving(100),
  ]);
  assert.deepEqual(Object.keys(rival.by_model), ["claude-test"]);
  // ?days= narrows the window (today's still counts); out of range is a 400 naming it.
  const oneDay = await fetch(`${gateway.url}/v1/usage?days=1`, { headers: bearer(one.key) });
  assert.equal((await oneDay.json()).cache.requests, 4);
  const bad = await fetch(`${gateway.url}/v1/usage?days=0`, { headers: bearer(one.key) });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.param, "days");

  // The admin API: the same figures, and by key.
  const accountUsage = await admin("/admin/api/accounts/cache-team/usage?days=30");
  assert.deepEqual(report(accountUsage.cache), report(cache));
  assert.deepEqual(Object.keys(accountUsage.cache.by_key).sort(), [one.id, two.id].sort());
  assert.deepEqual(accountUsage.cache.by_key[one.id], cache.key);
  assert.deepEqual(accountUsage.cache.by_key[two.id], seenByTwo.key);
  // Every account's together: the sum of each account's.
  const all = (await admin("/admin/api/usage?days=30")).cache;
  const accounts = (await admin("/admin/api/accounts")).data as { name: string }[];
  const each = await Promise.all(
    accounts.map(async (a) =>
      (await admin(`/admin/api/accounts/${encodeURIComponent(a.name)}/usage`)).cache
    ),
  );
  for (const field of ["requests", "input_tokens", "cached_input_tokens", "saved_nanousd"]) {
    assert.equal(all[field], each.reduce((sum, c) => sum + c[field], 0), field);
  }
  assert.equal(all.lost_nanousd, lost);
  assert.equal(all.by_model["claude-test"].misses.failover.requests, 1);
  // Each ledger entry shows what the cache did for its call.
  const ledger = (await admin("/admin/api/ledger?account=cache-team")).data as Json[];
  const seeded = ledger.find((e) => e.request_id === "req_seeded_miss")!;
  assert.deepEqual(seeded.cache, {
    input_tokens: 2_000,
    cached_input_tokens: 0,
    cache_write_tokens: 2_000,
    cache_write_1h_tokens: 0,
    saved_usd: "0.00",
    saved_nanousd: 0,
    miss: {
      cause: "failover",
      missed_input_tokens: 1_500,
      lost_usd: nanoToUsd(lost),
      lost_nanousd: lost,
    },
  });
  const first = ledger.find((e) => e.request_id === entries[0].requestId)!;
  assert.equal(first.cache.cache_write_1h_tokens, 40);
  assert.equal(first.cache.saved_nanousd, saving(20));
  assert.equal(first.cache.miss, null);
  assert.equal(ledger.find((e) => e.kind === "credit")!.cache, null);
});
