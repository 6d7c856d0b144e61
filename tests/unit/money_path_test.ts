/**
 * The money path on its own: the hold a token-billed call plans (`billing/reserve.ts`), the bill
 * that holds it and settles or releases it exactly once (`billing/ledger.ts`) against a real
 * SQLite store in memory, the limit errors clients see, recovery after a crash, and the call plan
 * between protocols (`translate/plan.ts`). Models come from the real config loader.
 */
import assert from "node:assert/strict";
import { buildConfig } from "../../src/config/load.ts";
import type { ResolvedModel } from "../../src/catalog/catalog.ts";
import { planTokenCall, type TokenCall } from "../../src/billing/reserve.ts";
import {
  type Bill,
  billsInFlight,
  insufficientBalance,
  limitError,
  LimitRefused,
  MAX_COUNT,
  type OpenBill,
  openBill,
  recoverHolds,
  tokenHeaders,
} from "../../src/billing/ledger.ts";
import { emptyUsage, type Usage } from "../../src/billing/price.ts";
import { planCall } from "../../src/translate/plan.ts";
import { authenticate, type Principal } from "../../src/auth/authenticate.ts";
import { createKey } from "../../src/billing/accounts.ts";
import { GatewayError } from "../../src/http/errors.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import type { Store } from "../../src/store/store.ts";

/** USD per million tokens → nanoUSD per token: 1 USD/M is 1,000 nanoUSD a token. */
const PER_TOKEN = 1_000;

/** A catalog of test models on one OpenAI-compatible provider; `id` resolved. */
function model(id: string): ResolvedModel {
  const config = buildConfig({
    defaultCatalog: false,
    providers: { up: { type: "openai-compatible", baseUrl: "http://127.0.0.1:9/v1" } },
    models: {
      // 2 USD/M in, 10 USD/M out, at most 1,000 output tokens.
      text: { provider: "up", price: { input: 2, output: 10 }, maxOutputTokens: 1000 },
      // No maximum known: the configured default applies.
      open: { provider: "up", price: { input: 2, output: 10 } },
      // Cache writes dearer than input; a priority tier dearer still; a priced search tool.
      tiered: {
        provider: "up",
        price: {
          input: 2,
          cacheWrite: 3,
          output: 10,
          tiers: { priority: { input: 4, output: 20 }, flex: { input: 1, output: 5 } },
          tools: { web_search: 0.01 },
        },
        maxOutputTokens: 1000,
      },
      free: { provider: "up", free: true, maxOutputTokens: 500 },
      // Cache reads at a tenth of input, 1-hour writes at twice it.
      cached: {
        provider: "up",
        price: { input: 2, cachedInput: 0.2, cacheWrite: 2.5, cacheWrite1h: 4, output: 10 },
        maxOutputTokens: 1000,
      },
    },
  }, () => undefined);
  const resolved = config.catalog.resolve(id);
  assert.ok(resolved.ok, id);
  return resolved.model;
}

/** A call with `bound` input tokens (typical: half of it), no tools, minimum cap 16. */
function call(bound: number, extra: Partial<TokenCall> = {}): TokenCall {
  return {
    input: { bound, typical: bound / 2 },
    output: true,
    minCap: 16,
    hostedTools: new Map(),
    ...extra,
  };
}

Deno.test("the hold covers the input bound and the output cap at their rates; the model's maximum is not sent", () => {
  const plan = planTokenCall(model("text"), call(100), 1e12, 4096);
  assert.deepEqual(plan, {
    ok: true,
    reserve: 100 * 2 * PER_TOKEN + 1000 * 10 * PER_TOKEN,
    estimate: { ...emptyUsage(), inputTokens: 50 },
    inputBound: 100,
    cap: 1000,
    sendCap: false,
  });
  // The client's cap below the maximum: held as asked, and the upstream applies it itself.
  const asked = planTokenCall(model("text"), call(100, { requestedCap: 200 }), 1e12, 4096);
  assert.ok(asked.ok);
  assert.deepEqual([asked.reserve, asked.cap, asked.sendCap], [2_200_000, 200, false]);
  // Above the maximum: held (and sent) at the maximum.
  const over = planTokenCall(model("text"), call(100, { requestedCap: 5000 }), 1e12, 4096);
  assert.ok(over.ok);
  assert.deepEqual([over.cap, over.sendCap], [1000, true]);
  // No maximum known and none asked: the configured default, sent so the upstream keeps to it.
  const open = planTokenCall(model("open"), call(100), 1e12, 4096);
  assert.ok(open.ok);
  assert.deepEqual([open.cap, open.sendCap, open.reserve], [4096, true, 200_000 + 4096 * 10_000]);
  // A protocol that always needs a cap gets it sent; one with nowhere to send it does not.
  const required = planTokenCall(model("text"), call(100, { capRequired: true }), 1e12, 4096);
  assert.ok(required.ok && required.sendCap);
  const uncappable = planTokenCall(
    model("text"),
    call(100, { requestedCap: 5000, cappable: false }),
    1e12,
    4096,
  );
  assert.ok(uncappable.ok && !uncappable.sendCap);
});

Deno.test("a balance short of the full hold lowers the cap to what it covers; below the minimum it is a refusal", () => {
  const fixed = 100 * 2 * PER_TOKEN;
  // Exactly 300 output tokens' worth past the input.
  const lowered = planTokenCall(model("text"), call(100), fixed + 300 * 10 * PER_TOKEN, 4096);
  assert.deepEqual(lowered, {
    ok: true,
    reserve: fixed + 300 * 10 * PER_TOKEN,
    estimate: { ...emptyUsage(), inputTokens: 50 },
    inputBound: 100,
    cap: 300,
    sendCap: true,
  });
  // One nanoUSD short of 300: 299 tokens.
  const short = planTokenCall(model("text"), call(100), fixed + 300 * 10 * PER_TOKEN - 1, 4096);
  assert.ok(short.ok);
  assert.equal(short.cap, 299);
  // Under the protocol's smallest cap: refused, needing the input and that smallest cap.
  const refused = planTokenCall(model("text"), call(100), fixed + 15 * 10 * PER_TOKEN, 4096);
  assert.deepEqual(refused, { ok: false, needed: fixed + 16 * 10 * PER_TOKEN });
  // A call that cannot be capped is refused rather than lowered.
  assert.deepEqual(
    planTokenCall(model("text"), call(100, { cappable: false }), fixed + 500 * 10 * PER_TOKEN, 0),
    { ok: false, needed: fixed + 1000 * 10 * PER_TOKEN },
  );
  // Several answers at once: the cap applies to each, so the balance is split between them.
  const two = planTokenCall(model("text"), call(100, { choices: 2 }), fixed + 300 * 10_000, 4096);
  assert.ok(two.ok);
  assert.equal(two.cap, 150);
  // No output (embeddings): the input alone, refused when even that is not covered.
  const embed = planTokenCall(model("text"), call(100, { output: false }), fixed, 4096);
  assert.deepEqual(embed, {
    ok: true,
    reserve: fixed,
    estimate: { ...emptyUsage(), inputTokens: 50 },
    inputBound: 100,
    cap: undefined,
    sendCap: false,
  });
  assert.deepEqual(
    planTokenCall(model("text"), call(100, { output: false }), fixed - 1, 4096),
    { ok: false, needed: fixed },
  );
});

Deno.test("the hold is at the dearest rate the call can be charged: cache writes, any tier the upstream may pick, tool calls", () => {
  const tiered = model("tiered");
  // Unspecified tier: the upstream may serve at priority — its rates held; input at the dearest
  // of input and cache writes (4 > 3).
  const auto = planTokenCall(tiered, call(100, { requestedCap: 100 }), 1e12, 0);
  assert.ok(auto.ok);
  assert.equal(auto.reserve, 100 * 4 * PER_TOKEN + 100 * 20 * PER_TOKEN);
  // Flex asked for: flex's rates (its cache writes default to its input, as the base rates do).
  const flex = planTokenCall(
    tiered,
    call(100, { requestedCap: 100, serviceTier: "flex" }),
    1e12,
    0,
  );
  assert.ok(flex.ok);
  assert.equal(flex.reserve, 100 * 1 * PER_TOKEN + 100 * 5 * PER_TOKEN);
  // Hosted tool calls: their price each, and each call's results held as input.
  const tools = planTokenCall(
    tiered,
    call(100, {
      requestedCap: 100,
      serviceTier: "flex",
      hostedTools: new Map([["web_search", 3]]),
    }),
    1e12,
    0,
  );
  assert.ok(tools.ok);
  assert.equal(tools.inputBound, 100 + 3 * 4_000);
  assert.equal(
    tools.reserve,
    (100 + 12_000) * 1 * PER_TOKEN + 100 * 5 * PER_TOKEN + 3 * 10_000_000,
  );
  // Conversation state held upstream counts as input, exactly.
  const continued = planTokenCall(model("text"), call(100, { contextTokens: 900 }), 1e12, 0);
  assert.ok(continued.ok);
  assert.deepEqual([continued.inputBound, continued.estimate.inputTokens], [1000, 950]);
  // A free model holds nothing, whatever the balance.
  assert.deepEqual(planTokenCall(model("free"), call(100), 0, 4096), {
    ok: true,
    reserve: 0,
    estimate: { ...emptyUsage(), inputTokens: 50 },
    inputBound: 100,
    cap: 500,
    sendCap: false,
  });
});

/** A principal of `account` (plain holds unless `limited`). */
function principal(accountId: number, limited = false): Principal {
  return {
    keyId: "key_aaaaaaaaaaaa",
    accountId,
    accountName: "acct",
    rpm: 0,
    limits: {},
    accountLimits: {},
    limited,
    strict: false,
  };
}

/** A store with one account credited `credit` nanoUSD; `fn` gets it, the account id and a scope. */
async function withAccount(
  credit: number,
  fn: (store: Store, accountId: number, held: Bill[]) => Promise<void>,
): Promise<void> {
  const store = openSqliteStore(":memory:");
  try {
    const account = await store.ensureAccount("acct");
    if (credit) await store.credit(account.id, credit, "test");
    await fn(store, account.id, []);
  } finally {
    await store.close();
  }
}

/** A bill for a `text` call with 100 input tokens held and an output cap of 1,000. */
function billFor(accountId: number, held: Bill[], extra: Partial<OpenBill> = {}): OpenBill {
  return {
    scope: { hold: (bill) => held.push(bill) },
    principal: principal(accountId),
    requestId: `req_${crypto.randomUUID()}`,
    endpoint: "/v1/responses",
    model: model("text"),
    reserve: 100 * 2 * PER_TOKEN + 1000 * 10 * PER_TOKEN,
    estimate: { ...emptyUsage(), inputTokens: 50 },
    inputBound: 100,
    outputCap: 1000,
    ...extra,
  };
}

const usage = (input: number, output: number, more: Partial<Usage> = {}): Usage => ({
  ...emptyUsage(),
  inputTokens: input,
  outputTokens: output,
  ...more,
});

Deno.test("a bill holds its reserve, settles once on the reported usage, and gives the rest back", async () => {
  await withAccount(1e9, async (store, accountId, held) => {
    const before = billsInFlight();
    const bill = await openBill(store, billFor(accountId, held));
    assert.deepEqual(held, [bill], "added to the request's scope");
    assert.equal(billsInFlight(), before + 1);
    assert.ok(bill.open);
    let account = (await store.account("acct"))!;
    assert.equal(account.held, 10_200_000);
    assert.equal(await store.available(accountId), 1e9 - 10_200_000);
    const charged = bill.charged(usage(80, 300), true, 0);
    assert.deepEqual(charged, { usage: usage(80, 300), estimated: false });
    await bill.settle(charged);
    await bill.settle(charged); // a second settlement is a no-op
    await bill.release(); // and so is a release after it
    assert.ok(!bill.open);
    assert.equal(billsInFlight(), before);
    account = (await store.account("acct"))!;
    const cost = 80 * 2 * PER_TOKEN + 300 * 10 * PER_TOKEN;
    assert.deepEqual([account.held, account.balance, account.spent], [0, 1e9 - cost, cost]);
    const [entry] = await store.ledgerPage({ accountId, limit: 10 });
    assert.deepEqual([entry.kind, entry.status, entry.amount, entry.estimated], [
      "charge",
      "settled",
      cost,
      false,
    ]);
    assert.deepEqual(entry.units.map((u) => [u.unit, u.quantity, u.amount]), [
      ["input_tokens", 80, 160_000],
      ["output_tokens", 300, 3_000_000],
    ]);
  });
});

Deno.test("a bill keeps what the prompt cache did with its charge, and a miss noted on it", async () => {
  await withAccount(1e9, async (store, accountId, held) => {
    const bill = await openBill(store, billFor(accountId, held, { model: model("cached") }));
    bill.cacheMiss({ cause: "translation", tokens: 10 });
    bill.cacheMiss({ cause: "failover", tokens: 900 }); // the last note counts
    const reported = usage(30, 5, { cachedInputTokens: 40, cacheWrite1hTokens: 20 });
    await bill.settle(bill.charged(reported, true, 0));
    const [entry] = await store.ledgerPage({ accountId, limit: 1 });
    // 40 read: 40 × (2 − 0.2) USD/M saved; the miss at most the 50 tokens not read.
    assert.deepEqual(entry.cache, {
      inputTokens: 90,
      cachedTokens: 40,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 20,
      saved: 40 * 1.8 * PER_TOKEN,
      miss: { cause: "failover", tokens: 50, lost: 50 * 1.8 * PER_TOKEN },
    });
    const [row] = await store.cacheUsage(0, accountId);
    assert.deepEqual([row.keyId, row.missCause, row.lost], [
      "key_aaaaaaaaaaaa",
      "failover",
      50 * 1.8 * PER_TOKEN,
    ]);
  });
});

Deno.test("a released bill charges nothing; a balance that cannot cover the hold is a 402 naming the amount", async () => {
  await withAccount(20_000_000, async (store, accountId, held) => {
    const bill = await openBill(store, billFor(accountId, held));
    await bill.release();
    await bill.release();
    const account = (await store.account("acct"))!;
    assert.deepEqual([account.held, account.balance, account.spent], [0, 20_000_000, 0]);
    await assert.rejects(
      openBill(store, billFor(accountId, held, { reserve: 20_000_001 })),
      (error) =>
        error instanceof GatewayError && error.status === 402 &&
        /needs 0\.020000001 USD available on account acct/.test(error.message),
    );
    await assert.rejects(
      openBill(store, billFor(accountId, held, { reserve: 1.5 })),
      /whole, non-negative amount/,
    );
    assert.equal(held.length, 1, "a refused hold is not in the scope");
  });
});

Deno.test("a call that ended early is charged its best estimate, never past its cap; an impossible report is charged the hold", async () => {
  await withAccount(1e9, async (store, accountId, held) => {
    const bill = await openBill(store, billFor(accountId, held));
    // No report at all: the typical input, the relayed bytes' tokens (4 bytes a token).
    assert.deepEqual(bill.charged(null, false, 400), {
      usage: usage(50, 100),
      estimated: true,
    });
    // More relayed than the cap allows: the cap.
    assert.deepEqual(bill.charged(null, false, 40_000), {
      usage: usage(50, 1000),
      estimated: true,
    });
    // A partial report: its input; output the larger of its count and the relayed bytes'.
    assert.deepEqual(bill.charged(usage(70, 10), false, 400), {
      usage: usage(70, 100),
      estimated: true,
    });
    // A running count (the protocol sends one) is taken as it is.
    assert.deepEqual(bill.charged(usage(70, 10), false, 400, true), {
      usage: usage(70, 10),
      estimated: true,
    });
    // Out of range: the hold (input bound, output cap), with the reason.
    const atHold = { usage: usage(100, 1000), estimated: true };
    assert.deepEqual(bill.charged(usage(80, 1001), true, 0), {
      ...atHold,
      fault: "output tokens 1001 past the cap 1000",
    });
    assert.deepEqual(bill.charged(usage(-1, 5), true, 0), { ...atHold, fault: "inputTokens -1" });
    assert.deepEqual(bill.charged(usage(0.5, 5), true, 0), { ...atHold, fault: "inputTokens 0.5" });
    assert.deepEqual(bill.charged(usage(MAX_COUNT + 1, 5), true, 0), {
      ...atHold,
      fault: `inputTokens ${MAX_COUNT + 1}`,
    });
    assert.deepEqual(bill.charged(usage(100 * 4 + 10_000_001, 5), true, 0), {
      ...atHold,
      fault: "input tokens 10000401 past 10000400",
    });
    assert.deepEqual(
      bill.charged(usage(10, 5, { toolCalls: { web_search: -2 } }), true, 0),
      { ...atHold, fault: "web_search calls -2" },
    );
    // Settled on an impossible report: charged the hold, marked estimated.
    await bill.settle(bill.charged(usage(80, 5000), true, 0));
    const [entry] = await store.ledgerPage({ accountId, limit: 1 });
    assert.deepEqual([entry.amount, entry.estimated], [10_200_000, true]);
    // The conversation's size for the next hold: exact when complete, else input and output charged.
    assert.equal(bill.contextTokens({ usage: usage(80, 300), estimated: false }, null), 380);
    assert.equal(bill.contextTokens({ usage: usage(50, 100), estimated: true }, null), 200);
    assert.equal(bill.contextTokens({ usage: usage(70, 100), estimated: true }, usage(70, 0)), 170);
  });
});

Deno.test("a call billed by units may not report more than it held; a crash's hold is settled on its estimate at the next start", async () => {
  await withAccount(1e9, async (store, accountId, held) => {
    const units = { ...emptyUsage(), images: 2 };
    const images = await openBill(store, billFor(accountId, held, { units, estimate: units }));
    assert.equal(
      images.charged({ ...emptyUsage(), images: 3 }, true, 0).fault,
      "images 3 past the 2 held",
    );
    // Ended before any report: at least the units asked for.
    assert.equal(images.charged(null, false, 0).usage.images, 2);
    await images.settleRecorded();
    // A bill left held (the process died): recovery settles it on the estimate, once.
    await openBill(store, billFor(accountId, held));
    assert.equal(await recoverHolds(store), 1);
    assert.equal(await recoverHolds(store), 0);
    const account = (await store.account("acct"))!;
    assert.equal(account.held, 0);
    const entries = await store.ledgerPage({ accountId, limit: 10 });
    assert.deepEqual(entries.filter((e) => e.kind === "charge").map((e) => e.estimated), [
      true,
      true,
    ]);
    // The crash's charge is the typical input estimate.
    assert.equal(entries[0].amount, 50 * 2 * PER_TOKEN);
  });
});

Deno.test("limited holds: a budget refusal is a 429 naming the budget, with retry-after until it resets", async () => {
  await withAccount(1e9, async (store, accountId, held) => {
    const now = Date.UTC(2027, 2, 15, 12);
    const error = limitError(
      {
        refused: "budget",
        owner: "key",
        period: "month",
        amount: 5e9,
        room: 0,
        resetsAt: Date.UTC(2027, 3, 1),
      },
      principal(accountId),
      now,
    );
    assert.equal(error.status, 429);
    assert.equal(error.options.code, "budget_exceeded");
    assert.match(error.message, /this key's monthly budget of 5\.00 USD .* resets at 2027-04-01/);
    assert.equal(
      error.options.headers?.["retry-after"],
      String((Date.UTC(2027, 3, 1) - now) / 1000),
    );
    const lifetime = limitError(
      {
        refused: "budget",
        owner: "account",
        period: "total",
        amount: 1e9,
        room: 0,
        resetsAt: Infinity,
      },
      principal(accountId),
      now,
    );
    assert.match(lifetime.message, /this account's lifetime budget .* does not reset/);
    assert.deepEqual(lifetime.options.headers, {});
    const tpm = limitError(
      { refused: "tpm", limit: 1000, resetsAt: now + 30_000, tooLarge: false },
      principal(accountId),
      now,
    );
    assert.equal(tpm.options.code, "rate_limit_exceeded");
    assert.equal(tpm.options.headers?.["x-ratelimit-remaining-tokens"], "0");
    const tooLarge = limitError(
      { refused: "tpm", limit: 1000, resetsAt: now + 30_000, tooLarge: true },
      principal(accountId),
      now,
    );
    assert.equal(tooLarge.options.code, "request_too_large");
    const busy = limitError({ refused: "concurrency", limit: 2 }, principal(accountId), now);
    assert.equal(busy.options.code, "concurrency_limit_exceeded");
    assert.equal(busy.options.headers?.["retry-after"], "1");
    const broke = limitError(
      { refused: "balance", needed: 1_500_000_000 },
      principal(accountId),
      now,
    );
    assert.deepEqual([broke.status, broke.message], [
      402,
      insufficientBalance(principal(accountId), 1_500_000_000).message,
    ]);
    assert.deepEqual(tokenHeaders({ limit: 1000, used: 1200, resetsAt: now + 1500 }, now), {
      "x-ratelimit-limit-tokens": "1000",
      "x-ratelimit-remaining-tokens": "0",
      "x-ratelimit-reset-tokens": "2s", // rounded up to whole seconds
    });
    // A key that allows two calls in flight (made and authenticated as the gateway does): the
    // store refuses a third hold as the key's limit, until one of the two ends.
    const made = await createKey(store, { account: "acct", maxConcurrent: 2 });
    const limited = await authenticate(store, made.key, 0, { now });
    assert.ok(limited.limited);
    const open = (n: number) =>
      openBill(
        store,
        billFor(accountId, held, { principal: limited, requestId: `c${n}`, now: () => now }),
      );
    const [a] = [await open(1), await open(2)];
    await assert.rejects(
      open(3),
      (e) => e instanceof LimitRefused && e.refusal.refused === "concurrency" && e.status === 429,
    );
    await a.release();
    const c = await open(4);
    assert.ok(c.open, "a call in flight ended: room for another");
  });
});

Deno.test("the call plan: the client's protocol when the provider speaks it, else the provider's first", () => {
  assert.deepEqual(planCall("messages", ["messages", "chat"]), {
    kind: "passthrough",
    protocol: "messages",
  });
  assert.deepEqual(planCall("chat", ["messages", "chat"]), {
    kind: "passthrough",
    protocol: "chat",
  });
  assert.deepEqual(planCall("responses", ["generate", "chat"]), {
    kind: "translate",
    from: "responses",
    to: "generate",
  });
  assert.deepEqual(planCall("generate", []), { kind: "refuse" });
});
