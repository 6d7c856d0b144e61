/**
 * The admin API (`/admin/api/`): only the admin token opens it; keys and accounts are managed as
 * with the CLI (a new key's secret shown once, never in a listing; a revoked key refused at once);
 * an account's usage by day, unit and model; the ledger a page at a time; errors as JSON.
 */
import assert from "node:assert/strict";
import { startStack, usageOf } from "./helpers/setup.ts";

const ADMIN = "admin-api-token-0123456789abcdef";
const stack = await startStack({ admin: { token: ADMIN } });
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

async function api(method: string, path: string, body?: unknown, token: string | null = ADMIN) {
  const res = await fetch(`${gateway.url}/admin/api${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : null, headers: res.headers };
}

function respond(key: string) {
  return fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-test", input: "admin test", max_output_tokens: 32 }),
  });
}

Deno.test("every admin route is 401 without the admin token or with a wrong one (or an API key)", async () => {
  const { key } = await gateway.createKey("admin-outsider", "--credit", "1");
  const routes: [string, string, unknown?][] = [
    ["GET", "/keys"],
    ["POST", "/keys", { account: "x" }],
    ["DELETE", "/keys/key_aaaaaaaaaaaa"],
    ["GET", "/accounts"],
    ["POST", "/accounts", { name: "x" }],
    ["POST", "/accounts/admin-outsider/credit", { usd: "5" }],
    ["GET", "/accounts/admin-outsider/usage"],
    ["GET", "/ledger"],
    ["GET", "/usage"],
  ];
  for (const [method, path, body] of routes) {
    for (const token of [null, "wrong-token-wrong-token-wrong", key]) {
      const res = await api(method, path, body, token);
      assert.equal(res.status, 401, `${method} ${path} with ${token ? "a wrong token" : "none"}`);
      assert.equal(typeof res.json.error.message, "string");
      assert.ok(!res.text.includes(ADMIN) && !(token && res.text.includes(token)));
    }
  }
  // Nothing changed: the outsider's balance is as it was.
  assert.equal((await usageOf(gateway, key)).balance_nanousd, 1_000_000_000);
});

Deno.test("accounts and keys: create, credit, a key's secret once, listing without secrets, revoke", async () => {
  const created = await api("POST", "/accounts", { name: "admin-acme" });
  assert.equal(created.status, 201);
  assert.equal(created.json.name, "admin-acme");
  assert.equal((await api("POST", "/accounts", { name: "admin-acme" })).status, 200, "idempotent");
  const credited = await api("POST", "/accounts/admin-acme/credit", { usd: "2.50" });
  assert.equal(credited.status, 200);
  assert.equal(credited.json.balance_nanousd, 2_500_000_000);

  const made = await api("POST", "/keys", { account: "admin-acme", rpm: 100, credit_usd: "0.5" });
  assert.equal(made.status, 201);
  assert.equal(made.headers.get("cache-control"), "no-store");
  const secret: string = made.json.key;
  assert.match(secret, /^sy-/);
  assert.equal(made.json.balance_usd, "3.00");
  assert.equal((await respond(secret)).status, 200, "the new key works at once");

  const listed = await api("GET", "/keys?account=admin-acme");
  assert.equal(listed.json.data.length, 1);
  assert.equal(listed.json.data[0].id, made.json.id);
  assert.equal(listed.json.data[0].rpm, 100);
  assert.equal(listed.json.data[0].strict, false, "not strict unless asked");
  assert.ok(!listed.text.includes(secret), "a listing never shows the secret");
  assert.ok(!("hash" in listed.json.data[0]) && !("key" in listed.json.data[0]));

  const accounts = await api("GET", "/accounts");
  const acme = accounts.json.data.find((a: { name: string }) => a.name === "admin-acme");
  assert.ok(acme.spent_nanousd > 0 && acme.held_nanousd === 0);
  assert.equal(acme.balance_nanousd + acme.spent_nanousd, 3_000_000_000);

  const revoked = await api("DELETE", `/keys/${made.json.id}`);
  assert.deepEqual(revoked.json, { object: "key", id: made.json.id, revoked: true });
  assert.equal((await respond(secret)).status, 401, "a revoked key is refused at once");
  assert.equal((await api("DELETE", `/keys/${made.json.id}`)).status, 404, "revoked once");
  const after = await api("GET", "/keys?account=admin-acme");
  assert.notEqual(after.json.data[0].revoked_at, null);
});

Deno.test("usage by day, unit and model, and the ledger a page at a time, newest first", async () => {
  const made = await api("POST", "/keys", { account: "admin-usage", credit_usd: "1" });
  for (let i = 0; i < 3; i++) assert.equal((await respond(made.json.key)).status, 200);
  const own = await usageOf(gateway, made.json.key);
  const usage = await api("GET", "/accounts/admin-usage/usage?days=7");
  assert.equal(usage.status, 200);
  assert.equal(usage.json.requests, 3);
  assert.equal(usage.json.by_day.length, 1);
  assert.equal(usage.json.by_day[0].day, new Date().toISOString().slice(0, 10));
  assert.equal(usage.json.by_day[0].requests, 3);
  assert.equal(usage.json.by_day[0].spent_nanousd, own.spent_nanousd);
  assert.equal(usage.json.by_model["gpt-test"].spent_nanousd, own.spent_nanousd);
  assert.deepEqual(usage.json.by_unit, own.by_unit);

  // Three charges and the credit: two pages of two.
  const first = await api("GET", "/ledger?account=admin-usage&limit=2");
  assert.equal(first.json.data.length, 2);
  assert.ok(first.json.data.every((e: { kind: string }) => e.kind === "charge"));
  assert.equal(first.json.next, first.json.data[1].id);
  const second = await api("GET", `/ledger?account=admin-usage&limit=2&before=${first.json.next}`);
  const all = [...first.json.data, ...second.json.data];
  assert.deepEqual(all.map((e) => e.kind), ["charge", "charge", "charge", "credit"]);
  assert.deepEqual(all.map((e) => e.id), all.map((e) => e.id).toSorted((a, b) => b - a));
  assert.equal(second.json.next, null, "the last page");
  const charged = all.filter((e) => e.kind === "charge").reduce((n, e) => n + e.amount_nanousd, 0);
  assert.equal(charged, own.spent_nanousd);
  assert.ok(all[0].units.some((u: { unit: string }) => u.unit === "output_tokens"));
  assert.equal(all[0].model, "gpt-test");
  assert.equal(all[3].amount_nanousd, 1_000_000_000);
});

Deno.test("every account's spend by UTC day: today's is the sum of every account's spend", async () => {
  const made = await api("POST", "/keys", { account: "admin-total", credit_usd: "1" });
  for (let i = 0; i < 2; i++) assert.equal((await respond(made.json.key)).status, 200);
  const usage = await api("GET", "/usage?days=3");
  assert.equal(usage.status, 200);
  const accounts = (await api("GET", "/accounts")).json.data as { spent_nanousd: number }[];
  const spent = accounts.reduce((n, a) => n + a.spent_nanousd, 0);
  const today = new Date().toISOString().slice(0, 10);
  assert.equal(usage.json.days, 3);
  assert.equal(usage.json.since, new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10));
  assert.deepEqual(usage.json.by_day.map((d: { day: string }) => d.day), [today]);
  assert.equal(usage.json.by_day[0].spent_nanousd, spent);
  assert.equal(usage.json.spent_nanousd, spent);
  assert.equal(usage.json.requests, usage.json.by_day[0].requests);
  assert.ok(usage.json.requests >= 2);
  assert.equal((await api("GET", "/usage?days=0")).status, 400);
});

Deno.test("bad input is a JSON 400 naming the field; unknown accounts and keys are 404", async () => {
  const cases: [string, string, unknown, string][] = [
    ["POST", "/keys", { account: "no spaces allowed" }, "account"],
    ["POST", "/keys", { account: "ok", rpm: -1 }, "rpm"],
    ["POST", "/keys", { account: "ok", credit_usd: "lots" }, "credit_usd"],
    ["POST", "/keys", { account: "ok", extra: true }, "extra"],
    ["POST", "/keys", { account: "ok", strict: "yes" }, "strict"],
    ["POST", "/accounts", {}, "name"],
  ];
  for (const [method, path, body, param] of cases) {
    const res = await api(method, path, body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.json.error.param, param);
  }
  assert.equal((await api("GET", "/ledger?limit=0")).status, 400);
  assert.equal((await api("GET", "/accounts/nobody-here/usage")).status, 404);
  assert.equal((await api("POST", "/accounts/nobody-here/credit", { usd: "1" })).status, 404);
  assert.equal((await api("GET", "/ledger?account=nobody-here")).status, 404);
});

Deno.test("a negative credit removes balance: the admin API and the CLI, each with its ledger entry", async () => {
  const { key } = await gateway.createKey("admin-debit", "--credit", "2");
  const debited = await api("POST", "/accounts/admin-debit/credit", { usd: "-0.75" });
  assert.equal(debited.status, 200, debited.text);
  assert.equal(debited.json.balance_nanousd, 1_250_000_000);
  const byCli = await gateway.cli("accounts", "credit", "admin-debit", "-0.25", "--json");
  assert.equal(byCli.code, 0, byCli.stderr);
  assert.equal(JSON.parse(byCli.stdout).balance_usd, "1.00");
  // The key sees the balance that is left; the ledger holds both debits as negative credits.
  assert.equal((await usageOf(gateway, key)).balance_nanousd, 1_000_000_000);
  const ledger = await api("GET", "/ledger?account=admin-debit");
  assert.deepEqual(
    ledger.json.data.map((
      e: { kind: string; amount_nanousd: number },
    ) => [e.kind, e.amount_nanousd]),
    [["credit", -250_000_000], ["credit", -750_000_000], ["credit", 2_000_000_000]],
  );
});

Deno.test("with no admin token configured, the admin API and /metrics answer 404, whatever is sent", async () => {
  const open = await startStack();
  try {
    const { key } = await open.gateway.createKey("no-admin", "--credit", "1");
    const paths: [string, string, unknown?][] = [
      ["GET", "/admin/api/keys"],
      ["POST", "/admin/api/accounts", { name: "x" }],
      ["POST", "/admin/api/accounts/no-admin/credit", { usd: "5" }],
      ["GET", "/admin/api/ledger"],
      ["GET", "/metrics"],
    ];
    for (const [method, path, body] of paths) {
      for (const token of [null, ADMIN, key]) {
        const res = await fetch(`${open.gateway.url}${path}`, {
          method,
          headers: {
            ...(token ? { authorization: `Bearer ${token}` } : {}),
            ...(body === undefined ? {} : { "content-type": "application/json" }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        assert.equal(res.status, 404, `${method} ${path} with ${token ? "a token" : "none"}`);
        assert.doesNotMatch(text, /switchyard_/, "no metric");
      }
    }
    // Nothing was credited.
    assert.equal((await usageOf(open.gateway, key)).balance_nanousd, 1_000_000_000);
  } finally {
    await open.stop();
  }
});
