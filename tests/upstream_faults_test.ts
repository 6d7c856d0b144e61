/**
 * Upstream answers as untrusted input, on both stores: an upstream that reports negative,
 * fractional, 10^15, overflowing, mistyped or no usage, or answers 200 with HTML, `null` or a body
 * of the wrong types — through every text route, passed through and translated, JSON and streams.
 * No answer is a 5xx the gateway caused, no hold outlives its call, no amount is anything but an
 * exact integer, a call the client is told failed costs nothing, and the usage a client is shown
 * is the usage it is billed (marked as the gateway's estimate when it is not the upstream's own).
 */
import assert from "node:assert/strict";
import { eventually, type Stack, startStack, usageOf } from "./helpers/setup.ts";
import {
  HAS_POSTGRES,
  type Postgres,
  POSTGRES_MISSING,
  startPostgres,
} from "./helpers/postgres.ts";
import {
  type Answer,
  chatClient,
  generateArrayClient,
  generateSseClient,
  messagesClient,
  responsesClient,
  type WireClient,
} from "./helpers/wire_clients.ts";
import { skippedWithout } from "./helpers/requires.ts";
import { readBody } from "./helpers/http.ts";

const ADMIN = "faults-admin-token-0123456789";
const admin = { authorization: `Bearer ${ADMIN}` };

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

/** Each client route with a model its upstream speaks (pass-through) and one it does not. */
const ROUTES: { client: WireClient; native: string; foreign: string; format: string }[] = [
  { client: responsesClient, native: "gpt-test", foreign: "claude-test", format: "openai" },
  { client: messagesClient, native: "claude-test", foreign: "gpt-test", format: "anthropic" },
  { client: generateSseClient, native: "gemini-test", foreign: "claude-test", format: "google" },
  { client: generateArrayClient, native: "gemini-test", foreign: "gpt-test", format: "google" },
  { client: chatClient, native: "local-test", foreign: "claude-test", format: "openai" },
];

const USAGE_FAULTS = ["negative", "fraction", "huge", "overflow", "text", "none"] as const;
const BODY_FAULTS = ["html", "null", "mistyped"] as const;

if (!HAS_POSTGRES) {
  skippedWithout(`the PostgreSQL half of the upstream fault tests is skipped: ${POSTGRES_MISSING}`);
}

let pg: Postgres | null = null;
const stacks: { name: string; stack: Stack }[] = [];
stacks.push({
  name: "sqlite",
  stack: await startStack({ env: { SWITCHYARD_ADMIN_TOKEN: ADMIN } }),
});
if (HAS_POSTGRES) {
  pg = await startPostgres();
  stacks.push({
    name: "postgres",
    stack: await startStack({
      store: { url: pg.url, poolSize: 4 },
      env: { SWITCHYARD_ADMIN_TOKEN: ADMIN },
    }),
  });
}

Deno.test.afterAll(async () => {
  for (const { stack } of stacks) await stack.stop();
  await pg?.stop();
});

/** The ledger entries of an account, through the admin API (up to 500). */
async function adminLedger(stack: Stack, account: string): Promise<Json[]> {
  const res = await fetch(`${stack.gateway.url}/admin/api/ledger?account=${account}&limit=500`, {
    headers: admin,
  });
  assert.equal(res.status, 200);
  return (await res.json()).data;
}

/** Input and output tokens of a charge's unit lines. */
function billedTokens(entry: Json): { input: number; output: number } {
  let input = 0;
  let output = 0;
  for (const line of entry.units) {
    const unit = String(line.unit).split(".")[0];
    if (/^(input|cached_input|cache_write|cache_write_1h|image_input)_tokens$/.test(unit)) {
      input += line.quantity;
    }
    if (/^(output|image_output)_tokens$/.test(unit)) output += line.quantity;
  }
  return { input, output };
}

/** Checks an account's money: nothing held, every amount a whole number, balance = credit − charges. */
async function moneyAddsUp(stack: Stack, key: string, account: string, credit: number) {
  await eventually(async () => (await usageOf(stack.gateway, key)).held_nanousd === 0);
  const usage = await usageOf(stack.gateway, key);
  const entries = await adminLedger(stack, account);
  const charges = entries.filter((e) => e.kind === "charge");
  for (const entry of charges) {
    assert.equal(entry.status, "settled");
    assert.ok(Number.isSafeInteger(entry.amount_nanousd) && entry.amount_nanousd >= 0);
    for (const line of entry.units) {
      assert.ok(Number.isSafeInteger(line.quantity) && line.quantity >= 0, JSON.stringify(line));
      assert.ok(Number.isSafeInteger(line.amount_nanousd), JSON.stringify(line));
    }
  }
  const spent = charges.reduce((sum, e) => sum + e.amount_nanousd, 0);
  assert.ok(Number.isSafeInteger(usage.balance_nanousd));
  assert.ok(usage.balance_nanousd >= 0);
  assert.equal(usage.balance_nanousd, credit - spent);
  return charges;
}

for (const { name: store, stack } of stacks) {
  Deno.test(`${store}: usage an upstream cannot have meant is charged at the hold, shown as billed`, async () => {
    const account = `usage-faults-${store}`;
    const { key } = await stack.gateway.createKey(account, "--credit", "50", "--rpm", "0");
    const seen: { request: string; shown: Answer["usage"]; estimated: boolean; label: string }[] =
      [];
    for (const route of ROUTES) {
      for (const [kind, model] of [["native", route.native], ["translated", route.foreign]]) {
        for (const stream of [false, true]) {
          if (!stream && route.client === generateArrayClient) continue; // the same as SSE's
          for (const fault of USAGE_FAULTS) {
            const label = `${route.client.name} ${kind} ${stream ? "stream" : "JSON"} ${fault}`;
            const body = route.client.first(
              model,
              `What is the weather in Paris? [[emulate usage=${fault}]]`,
              stream,
            );
            const res = await fetch(`${stack.gateway.url}${route.client.path(model, stream)}`, {
              method: "POST",
              headers: { "content-type": "application/json", ...route.client.headers(key) },
              body: JSON.stringify(body),
            });
            const text = await res.text();
            assert.equal(res.status, 200, `${label}: ${text.slice(0, 300)}`);
            const answer = route.client.read(text, stream);
            if (!stream) assert.equal(res.headers.get("x-switchyard-usage"), "estimated", label);
            seen.push({
              request: res.headers.get("x-request-id")!,
              shown: answer.usage,
              estimated: true,
              label,
            });
          }
        }
      }
    }
    const charges = await moneyAddsUp(stack, key, account, 50_000_000_000);
    assert.equal(charges.length, seen.length);
    for (const call of seen) {
      const entry = charges.find((e) => e.request_id === call.request);
      assert.ok(entry, `${call.label}: charged`);
      assert.equal(entry.estimated, true, call.label);
      // A Gemini stream in the JSON-array form passed through keeps the upstream's own fragments.
      if (/^generate-array native stream/.test(call.label)) continue;
      const billed = billedTokens(entry);
      assert.equal(call.shown.input, billed.input, `${call.label}: input shown = billed`);
      assert.equal(call.shown.output, billed.output, `${call.label}: output shown = billed`);
      assert.ok(billed.output <= 8192, `${call.label}: never past the output cap`);
    }
  });

  Deno.test(`${store}: a 200 the gateway cannot read is a failure for the client, and costs nothing`, async () => {
    const account = `body-faults-${store}`;
    const { key } = await stack.gateway.createKey(account, "--credit", "50", "--rpm", "0");
    const failed: string[] = [];
    for (const route of ROUTES) {
      for (const [kind, model] of [["native", route.native], ["translated", route.foreign]]) {
        for (const stream of [false, true]) {
          for (const fault of BODY_FAULTS) {
            const label = `${route.client.name} ${kind} ${stream ? "stream" : "JSON"} ${fault}`;
            const body = route.client.first(model, `Hello [[emulate body=${fault}]]`, stream);
            const res = await fetch(`${stack.gateway.url}${route.client.path(model, stream)}`, {
              method: "POST",
              headers: { "content-type": "application/json", ...route.client.headers(key) },
              body: JSON.stringify(body),
            });
            const { text, failed: aborted } = await readBody(res);
            const request = res.headers.get("x-request-id")!;
            if (!stream) {
              assert.equal(res.status, 502, `${label}: ${text.slice(0, 300)}`);
              const error = JSON.parse(text);
              if (route.format === "anthropic") assert.equal(error.type, "error", label);
              else if (route.format === "google") assert.equal(error.error.code, 502, label);
              else assert.equal(typeof error.error.message, "string", label);
              failed.push(request);
              continue;
            }
            assert.ok(res.status < 500, `${label}: ${res.status}`);
            // A stream the gateway cannot read is unbilled, and ends in the protocol's error —
            // but a pass-through stream of well-framed empty events, relayed as it came.
            if (kind === "translated" || fault === "html") {
              assert.match(
                text,
                /error/,
                `${label}: ends in an error: ${JSON.stringify(text.slice(0, 600))}`,
              );
            }
            // A generateContent stream that ends in its error is aborted after it; others end.
            assert.equal(aborted, route.format === "google", `${label}: how the body ended`);
            failed.push(request);
          }
        }
      }
    }
    const charges = await moneyAddsUp(stack, key, account, 50_000_000_000);
    for (const request of failed) {
      assert.equal(
        charges.find((e) => e.request_id === request),
        undefined,
        `a failed call (${request}) is not charged`,
      );
    }
  });
}
