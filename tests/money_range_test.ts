/**
 * Amounts at 2^53 nanoUSD and beyond, through the real gateway: a credit is bounded at the edge
 * (at most 1,000,000 USD each, a 400 naming the limit, or a CLI error) and may not take a balance
 * past 2^53 − 1 nanoUSD (a 400 too); a lifetime spend past 2^53 (years of heavy use, seeded in
 * the store) is shown exactly by `GET /v1/usage`, the admin API, the CLI and the dashboard — the
 * nanoUSD figures as exact JSON integers, the USD figures as exact decimal strings.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { startStack, usageOf } from "./helpers/setup.ts";
import { CHROMIUM, hasChromium, launchChromium } from "./helpers/chromium.ts";
import { skippedWithout } from "./helpers/requires.ts";

const ADMIN = "money-range-admin-token-0123456789";
const stack = await startStack({ admin: { token: ADMIN } });
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

/** 2^53 − 1: the most nanoUSD a balance may hold. */
const MAX = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * JSON with its integers past 2^53 read exactly (as bigints, from their source text; a plain
 * `JSON.parse` would round them).
 */
// deno-lint-ignore no-explicit-any
function exactJson(text: string): any {
  return JSON.parse(
    text,
    (_key, value, context?: { source?: string }) =>
      typeof value === "number" && !Number.isSafeInteger(value) &&
        /^\d+$/.test(context?.source ?? "")
        ? BigInt(context!.source!)
        : value,
  );
}

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(`${gateway.url}/admin/api${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, json: exactJson(text) };
}

/** Exact decimal USD of integer nanoUSD. */
function usd(nano: bigint): string {
  const fraction = (nano % 1_000_000_000n).toString().padStart(9, "0").replace(/0+$/, "");
  return `${nano / 1_000_000_000n}.${fraction.padEnd(2, "0")}`;
}

Deno.test("a credit past 1,000,000 USD, or past the most a balance may hold, is a 400 naming the limit; the CLI says the same", async () => {
  assert.equal((await api("POST", "/accounts", { name: "range-big" })).status, 201);
  for (const amount of ["1000000.000000001", "1e30", "-2000000", "90071992547409910"]) {
    const res = await api("POST", "/accounts/range-big/credit", { usd: amount });
    assert.equal(res.status, 400, amount);
    assert.equal(res.json.error.type, "invalid_request_error");
    assert.equal(res.json.error.param, "usd");
    assert.match(res.json.error.message, /^Invalid 'usd': must be at most 1000000 USD per credit/);
  }
  // Nine credits of the most one may be, then the rest up to 2^53 − 1 nanoUSD.
  for (let i = 0; i < 9; i++) {
    assert.equal((await api("POST", "/accounts/range-big/credit", { usd: "1000000" })).status, 200);
  }
  const full = await api("POST", "/accounts/range-big/credit", { usd: "7199.254740991" });
  assert.equal(full.status, 200);
  assert.equal(full.json.balance_nanousd, Number.MAX_SAFE_INTEGER);
  assert.equal(full.json.balance_usd, "9007199.254740991");

  const over = await api("POST", "/accounts/range-big/credit", { usd: "0.000000001" });
  assert.equal(over.status, 400);
  assert.equal(over.json.error.type, "invalid_request_error");
  assert.equal(
    over.json.error.message,
    'a credit of 0.000000001 USD would take the balance of account "range-big" to 9007199.254740992 USD, past the most an account may hold (9007199.254740991 USD)',
  );
  const key = await api("POST", "/keys", { account: "range-big", credit_usd: "1" });
  assert.equal(key.status, 400);
  assert.match(key.json.error.message, /past the most an account may hold/);

  const cli = await gateway.cli("accounts", "credit", "range-big", "0.01");
  assert.equal(cli.code, 2);
  assert.match(cli.stderr, /would take the balance of account "range-big" to 9007199\.264740991/);
  const tooMuch = await gateway.cli("accounts", "credit", "range-big", "1000001");
  assert.equal(tooMuch.code, 2);
  assert.match(tooMuch.stderr, /the amount must be at most 1000000 USD per credit/);
  const created = await gateway.cli("keys", "create", "--account", "range-new", "--credit", "2e6");
  assert.equal(created.code, 2);
  assert.match(created.stderr, /--credit must be at most 1000000 USD per credit/);

  const accounts = await api("GET", "/accounts");
  const big = accounts.json.data.find((a: { name: string }) => a.name === "range-big");
  assert.equal(big.balance_nanousd, Number.MAX_SAFE_INTEGER, "nothing refused was added");
  const ledger = await api("GET", "/ledger?account=range-big");
  assert.equal(
    ledger.json.data.length,
    10,
    "a ledger entry per credit made, none for a refused one",
  );

  // A debit takes at most what the account has available.
  const { key: small } = await gateway.createKey("range-small", "--credit", "1");
  const debit = await api("POST", "/accounts/range-small/credit", { usd: "-1.5" });
  assert.equal(debit.status, 400);
  assert.match(
    debit.json.error.message,
    /a debit of 1\.50 USD is more than account "range-small" has available \(1\.00 USD/,
  );
  assert.equal((await usageOf(gateway, small)).balance_usd, "1.00");
});

Deno.test("a lifetime spend past 2^53 nanoUSD is shown exactly: /v1/usage, the admin API, the CLI", async () => {
  const { key } = await gateway.createKey("range-heavy", "--credit", "1");
  const call = await fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-test", input: "a heavy user", max_output_tokens: 32 }),
  });
  assert.equal(call.status, 200);
  await call.text();
  const before = await usageOf(gateway, key);
  const cost = BigInt(before.spent_nanousd);
  const tokens = BigInt(before.by_unit.input_tokens.quantity);
  // Years of heavy use: three more charges of 2^53 − 1 nanoUSD each, settled long ago.
  const db = new DatabaseSync(`${gateway.dir}/data/switchyard.db`);
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    const units = JSON.stringify(
      [{ unit: "input_tokens", quantity: MAX, amount: MAX }],
      (_, v) => typeof v === "bigint" ? Number(v) : v,
    );
    const now = Date.now();
    db.exec(`UPDATE accounts SET spent = spent + 3 * ${MAX} WHERE name = 'range-heavy';
      INSERT INTO ledger (kind, status, request_id, account_id, endpoint, model, provider, reserved,
                          amount, units, estimated, created_at, settled_at)
      SELECT 'charge', 'settled', 'seed-' || n.n, a.id, 'responses', 'gpt-test', 'openai', ${MAX},
             ${MAX}, '${units}', 0, ${now}, ${now}
      FROM accounts a, (SELECT 1 AS n UNION ALL SELECT 2 UNION ALL SELECT 3) n
      WHERE a.name = 'range-heavy';`);
  } finally {
    db.close();
  }
  const spent = cost + 3n * MAX;
  assert.ok(spent > 2n ** 54n);

  const res = await fetch(`${gateway.url}/v1/usage`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.ok(text.includes(`"spent_nanousd":${spent},`), "the exact digits, as a JSON number");
  const usage = exactJson(text);
  assert.equal(usage.spent_nanousd, spent);
  assert.equal(usage.spent_usd, usd(spent));
  assert.equal(usage.balance_nanousd, before.balance_nanousd, "a figure below 2^53 is as it was");
  assert.equal(typeof usage.balance_nanousd, "number");
  assert.equal(usage.requests, 4);
  assert.equal(usage.by_unit.input_tokens.quantity, tokens + 3n * MAX);
  assert.equal(usage.by_model["gpt-test"].spent_nanousd, spent);
  assert.equal(usage.by_model["gpt-test"].spent_usd, usd(spent));

  const listed = (await api("GET", "/accounts")).json.data.find((a: { name: string }) =>
    a.name === "range-heavy"
  );
  assert.equal(listed.spent_nanousd, spent);
  assert.equal(listed.spent_usd, usd(spent));
  const account = await api("GET", "/accounts/range-heavy/usage");
  assert.equal(account.status, 200);
  assert.equal(account.json.spent_nanousd, spent);
  assert.deepEqual(account.json.by_day.map((d: { spent_nanousd: bigint }) => d.spent_nanousd), [
    spent,
  ]);
  assert.equal(account.json.by_day[0].spent_usd, usd(spent));
  const total = await api("GET", "/usage");
  assert.equal(total.status, 200);
  assert.ok(BigInt(total.json.spent_nanousd) >= spent);
  assert.equal(total.json.spent_usd, usd(BigInt(total.json.spent_nanousd)));
  const ledger = await api("GET", "/ledger?account=range-heavy&limit=3");
  assert.deepEqual(ledger.json.data.map((e: { amount_nanousd: number }) => e.amount_nanousd), [
    Number.MAX_SAFE_INTEGER,
    Number.MAX_SAFE_INTEGER,
    Number.MAX_SAFE_INTEGER,
  ]);

  const cliJson = await gateway.cli("accounts", "list", "--json");
  assert.equal(cliJson.code, 0, cliJson.stderr);
  const heavy = exactJson(cliJson.stdout).find((a: { name: string }) => a.name === "range-heavy");
  assert.deepEqual([heavy.spent_nanousd, heavy.spent_usd], [spent, usd(spent)]);
  const cliText = await gateway.cli("accounts", "list");
  const row = cliText.stdout.split("\n").find((line) => line.startsWith("range-heavy "))!;
  assert.ok(row.includes(` ${usd(spent)} `) && row.includes(` ${spent} `), row);

  if (!hasChromium()) {
    // The dashboard part needs a browser (see dashboard_test.ts).
    skippedWithout(`money_range_test: the dashboard part skipped — ${CHROMIUM} not found`);
    return;
  }
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.goto(`${gateway.url}/admin`);
    await page.waitFor("document.body.dataset.ready", "the page's script");
    await page.type("#token", ADMIN);
    await page.pressEnter();
    await page.waitFor("document.body.dataset.loaded", "the dashboard's data");
    const cells = await page.evaluate<string[]>(
      `[...document.querySelectorAll('tr[data-account="range-heavy"] td')].map((c) => c.textContent)`,
    );
    assert.equal(cells[2], `$${usd(spent)}`, "the dashboard shows the exact spend");
    assert.deepEqual(page.problems.filter((p) => !p.text.startsWith("network:")), []);
  } finally {
    await browser.close();
  }
});
