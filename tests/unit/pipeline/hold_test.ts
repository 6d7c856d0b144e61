/**
 * The call lifecycle's pieces on their own (`src/pipeline/`): a request's scope ends every bill
 * and upstream request it opened whatever way the request ends, and upstream error answers reach
 * the client in its protocol, 5xx as 502, the operator's credentials and identifiers never shown.
 * Bills are real, on a SQLite store in memory.
 */
import assert from "node:assert/strict";
import { buildConfig } from "../../../src/config/load.ts";
import type { ResolvedModel } from "../../../src/catalog/catalog.ts";
import { type Bill, openBill } from "../../../src/billing/ledger.ts";
import { emptyUsage } from "../../../src/billing/price.ts";
import { CallScope } from "../../../src/pipeline/hold.ts";
import { redact, relayUpstreamError } from "../../../src/pipeline/upstream_errors.ts";
import { GatewayError } from "../../../src/http/errors.ts";
import { openSqliteStore } from "../../../src/store/sqlite.ts";
import type { Store } from "../../../src/store/store.ts";

function model(): ResolvedModel {
  const config = buildConfig({
    defaultCatalog: false,
    providers: { up: { type: "openai-compatible", baseUrl: "http://127.0.0.1:9/v1" } },
    models: {
      public: { provider: "up", upstream: "secret-upstream-v7", price: { input: 2, output: 10 } },
    },
  }, () => undefined);
  const resolved = config.catalog.resolve("public");
  assert.ok(resolved.ok);
  return resolved.model;
}

/** A store with an account of 1 USD; `bill()` opens a 0.01 USD hold in `scope`. */
async function withBills(
  fn: (store: Store, scope: CallScope, bill: () => Promise<Bill>) => Promise<void>,
): Promise<void> {
  const store = openSqliteStore(":memory:");
  try {
    const account = await store.ensureAccount("acct");
    await store.credit(account.id, 1e9, "test");
    const scope = new CallScope("req_scope");
    let n = 0;
    const bill = () =>
      openBill(store, {
        scope,
        principal: {
          keyId: "key_aaaaaaaaaaaa",
          accountId: account.id,
          accountName: "acct",
          rpm: 0,
          limits: {},
          accountLimits: {},
          limited: false,
          strict: false,
        },
        requestId: `req_${++n}`,
        endpoint: "/v1/responses",
        model: model(),
        reserve: 10_000_000,
        estimate: { ...emptyUsage(), inputTokens: 100 },
      });
    await fn(store, scope, bill);
  } finally {
    await store.close();
  }
}

const charges = async (store: Store) =>
  (await store.ledgerPage({ limit: 100 })).filter((e) => e.kind === "charge").reverse();

Deno.test("a failed request releases every bill it holds and aborts its upstream requests", async () => {
  await withBills(async (store, scope, bill) => {
    const [a, b] = [await bill(), await bill()];
    const upstream = new AbortController();
    scope.upstream(upstream);
    const told: boolean[] = [];
    scope.settleOnAnswer(a, (answered) => {
      told.push(answered);
      return answered ? a.settle({ usage: emptyUsage(), estimated: false }) : a.release();
    });
    await scope.close(true);
    assert.deepEqual(told, [false], "the answer's settlement is told the request failed");
    assert.ok(!a.open && !b.open);
    assert.ok(upstream.signal.aborted);
    // Released: no charge is left in the ledger, nothing held, nothing spent.
    assert.deepEqual(await charges(store), []);
    const account = (await store.account("acct"))!;
    assert.deepEqual([account.balance, account.spent], [1e9, 0]);
    assert.equal((await store.account("acct"))!.held, 0);
  });
});

Deno.test("an answered request settles its whole answers, leaves streams to their stream, and settles a forgotten hold on its estimate", async () => {
  await withBills(async (store, scope, bill) => {
    const answered = await bill();
    const streamed = await bill();
    const forgotten = await bill();
    const upstream = new AbortController();
    scope.upstream(upstream);
    const usage = { ...emptyUsage(), inputTokens: 10, outputTokens: 20 };
    scope.settleOnAnswer(
      answered,
      (ok) => ok ? answered.settle({ usage, estimated: false }) : answered.release(),
    );
    streamed.toStream();
    await scope.close(false);
    assert.ok(!upstream.signal.aborted, "an answered request's upstream is not aborted");
    assert.ok(!answered.open && !forgotten.open);
    assert.ok(streamed.open, "the stream settles it when it ends");
    const [first, , third] = await charges(store);
    assert.deepEqual([first.status, first.amount, first.estimated], [
      "settled",
      10 * 2_000 + 20 * 10_000,
      false,
    ]);
    // The forgotten one: what a crash would charge (its recorded estimate).
    assert.deepEqual([third.status, third.amount, third.estimated], ["settled", 100 * 2_000, true]);
    assert.equal((await store.account("acct"))!.held, 10_000_000, "the stream's hold only");
    await streamed.release();
    // A job's bill is the job's: the scope leaves it (held in the store) alone.
    const job = await bill();
    job.toJob();
    await scope.close(true);
    assert.equal((await store.account("acct"))!.held, 10_000_000);
  });
});

/** The error-level lines `run` writes (to stderr, at once), parsed. */
async function errorLines(run: () => Promise<void>): Promise<Record<string, unknown>[]> {
  const original = Deno.stderr.writeSync;
  const lines: Record<string, unknown>[] = [];
  Deno.stderr.writeSync = (bytes: Uint8Array) => {
    for (const line of new TextDecoder().decode(bytes).split("\n")) {
      if (line) lines.push(JSON.parse(line));
    }
    return bytes.length;
  };
  try {
    await run();
  } finally {
    Deno.stderr.writeSync = original;
  }
  return lines;
}

Deno.test("a settlement that fails is logged, never thrown, with one bill or several; the others still end", async () => {
  await withBills(async (store, scope, bill) => {
    // One bill (the common request): its failed settlement is the request's log line.
    const lone = await bill();
    scope.settleOnAnswer(lone, () => Promise.reject(new Error("disk full")));
    const one = await errorLines(() => scope.close(false));
    assert.deepEqual(
      one.map((l) => [l.msg, l.request_id, l.error]),
      [["ending a call's hold failed", "req_scope", "Error: disk full"]],
    );
    await lone.release();

    const other = new CallScope("req_two");
    const [failing, settled] = [await bill(), await bill()];
    other.hold(failing);
    other.hold(settled);
    other.settleOnAnswer(failing, () => Promise.reject(new Error("locked")));
    const usage = { ...emptyUsage(), inputTokens: 10 };
    other.settleOnAnswer(settled, () => settled.settle({ usage, estimated: false }));
    const two = await errorLines(() => other.close(false));
    assert.deepEqual(two.map((l) => [l.request_id, l.error]), [["req_two", "Error: locked"]]);
    assert.ok(!settled.open, "the other bill was settled all the same");
    await failing.release();
    assert.equal((await store.account("acct"))!.held, 0);
  });
});

/** What `relayUpstreamError` makes of an upstream answer: a Response, or the error it threw. */
async function relayed(
  status: number,
  body: unknown,
  format: "openai" | "anthropic" | "google",
  upstreamFormat = format,
  headers: Record<string, string> = {},
): Promise<Response | GatewayError> {
  const upstream = new Response(typeof body === "string" ? body : JSON.stringify(body), {
    status,
    headers,
  });
  try {
    return await relayUpstreamError(upstream, format, model(), upstreamFormat);
  } catch (error) {
    assert.ok(error instanceof GatewayError, String(error));
    return error;
  }
}

Deno.test("upstream errors: 4xx in the client's own envelope are relayed as they are, redacted", async () => {
  const body = {
    error: {
      message:
        "Rate limit for secret-upstream-v7 in organization org-AbCd1234 (key sk-proj-abc***xyz)",
      type: "rate_limit_error",
    },
  };
  const res = await relayed(429, body, "openai", "openai", { "retry-after": "7" });
  assert.ok(res instanceof Response);
  assert.equal(res.status, 429);
  assert.equal(res.headers.get("retry-after"), "7");
  const text = await res.text();
  assert.doesNotMatch(text, /AbCd1234|sk-proj|secret-upstream-v7/);
  assert.match(
    text,
    /Rate limit for public in organization org-\[redacted\] \(key \[redacted key\]\)/,
  );
  // In another protocol's envelope: the status and message, in the client's format.
  const crossed = await relayed(400, body, "anthropic", "openai");
  assert.ok(crossed instanceof GatewayError);
  assert.equal(crossed.status, 400);
  assert.match(crossed.message, /org-\[redacted\]/);
  // Not JSON at all: the start of the text, or the status text.
  const html = await relayed(404, "<html>not here</html>", "google");
  assert.ok(html instanceof GatewayError);
  assert.deepEqual([html.status, html.message], [404, "<html>not here</html>"]);
  // A retry-after that is not a count of seconds is not passed on.
  const odd = await relayed(429, body, "openai", "google", { "retry-after": "soon" });
  assert.ok(odd instanceof GatewayError);
  assert.equal(odd.options.headers?.["retry-after"], undefined);
});

Deno.test("upstream errors: 5xx become 502, Anthropic's 529 a 503 elsewhere, the operator's key failures a 502 without the upstream's words", async () => {
  const failed = await relayed(500, { error: { message: "boom", type: "server_error" } }, "openai");
  assert.ok(failed instanceof GatewayError);
  assert.deepEqual([failed.status, failed.message], [
    502,
    "The upstream provider failed (status 500): boom",
  ]);
  const overloaded = { type: "error", error: { type: "overloaded_error", message: "Overloaded" } };
  const forOpenai = await relayed(529, overloaded, "openai", "anthropic");
  assert.ok(forOpenai instanceof GatewayError);
  assert.equal(forOpenai.status, 503);
  const forAnthropic = await relayed(529, overloaded, "anthropic");
  assert.ok(forAnthropic instanceof Response);
  assert.equal(forAnthropic.status, 529);
  for (
    const [status, text] of [
      [401, '{"error":{"message":"Incorrect API key provided: sk-abc***"}}'],
      [403, '{"error":{"message":"forbidden"}}'],
      [
        400,
        '{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}',
      ],
    ] as const
  ) {
    const error = await relayed(status, text, "google");
    assert.ok(error instanceof GatewayError);
    assert.equal(error.status, 502, text);
    assert.doesNotMatch(error.message, /sk-abc|API key not valid|forbidden/);
  }
  assert.equal(redact("sy-abcdef and AIzaSyA1234567890"), "[redacted key] and [redacted key]");
  assert.equal(redact("proj_Zz99 only"), "proj_[redacted] only");
});
