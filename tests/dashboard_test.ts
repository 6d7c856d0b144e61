/**
 * The admin dashboard (`GET /admin`) in a real browser — headless Chromium driven over the
 * DevTools Protocol (see `helpers/chromium.ts`): the page loads without a token under a strict
 * CSP, signs in with the admin token (refusing a wrong one), shows accounts, provider health and
 * the 30-day spend chart (one bar per day with spend) and the prompt cache's hit rate per day and
 * figures by model, creates a key whose secret works at once,
 * and revokes it; creates a key with a $20 monthly budget, two model patterns and an expiry from
 * its form (its operator-chosen name and metadata shown as text, never markup), shows its budget as
 * a bar with the reset time, disables, enables, rotates and changes it, sets its account's budget
 * and model list — each checked through the admin API and real calls — and shows the alerts panel
 * when the gateway answers `GET /admin/api/alerts` (hidden on a 404). The token travels only in
 * the `Authorization` header, never in a URL, and the page reports no script error or CSP
 * violation. The browser test is skipped when Chromium is not
 * installed; the page's CSP hashes and headers are checked without it.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { type Stack, startStack } from "./helpers/setup.ts";
import {
  type Browser,
  CHROMIUM,
  hasChromium,
  launchChromium,
  type Page,
} from "./helpers/chromium.ts";
import { createHash } from "node:crypto";
import { DASHBOARD_SCRIPT } from "../src/dashboard/script.ts";
import { getDashboard } from "../src/endpoints/dashboard.ts";
import { GatewayError } from "../src/http/errors.ts";
import type { RequestContext } from "../src/context.ts";
import { skippedWithout } from "./helpers/requires.ts";

const ADMIN = "dashboard-admin-token-0123456789abcdef";
const DAY_MS = 86_400_000;
const skip = !hasChromium();
if (skip) {
  skippedWithout(
    `dashboard_test: SKIPPED — ${CHROMIUM} not found; install Debian's chromium package ` +
      "(apt-get install -y chromium) to run the dashboard in a real browser",
  );
}

let stack: Stack | undefined;
let browser: Browser | undefined;
Deno.test.afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

/** The admin API, as the test's own client. */
async function api(method: string, path: string) {
  const res = await fetch(`${stack!.gateway.url}/admin/api${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  return await res.json();
}

function respond(key: string, model = "gpt-test", input = "dashboard test") {
  return fetch(`${stack!.gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, input, max_output_tokens: 32 }),
  });
}

/** The status of a call with `key` (its body read). */
async function statusOf(key: string, model?: string): Promise<number> {
  const res = await respond(key, model);
  await res.text();
  return res.status;
}

/** A time as the page writes it (UTC). */
function shown(iso: string): string {
  return iso.replace("T", " ").slice(0, 19);
}

/** A UTC date `days` days before today, `YYYY-MM-DD`. */
function daysAgo(days: number): string {
  return new Date(Date.now() - days * DAY_MS).toISOString().slice(0, 10);
}

/**
 * Spreads the account's history over past days, as a ledger that has been running that long: its
 * credit 41 days ago, its charges (oldest first) `ages` days ago.
 */
function backdate(account: string, ages: number[]): void {
  const db = new DatabaseSync(`${stack!.gateway.dir}/data/switchyard.db`);
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    const entries = db.prepare(
      `SELECT l.id, l.kind FROM ledger l JOIN accounts a ON a.id = l.account_id
       WHERE a.name = ? ORDER BY l.id`,
    ).all(account) as { id: number; kind: string }[];
    const charges = entries.filter((e) => e.kind === "charge");
    assert.equal(charges.length, ages.length);
    const move = db.prepare(`UPDATE ledger SET created_at = created_at - ? WHERE id = ?`);
    for (const e of entries.filter((e) => e.kind === "credit")) move.run(41 * DAY_MS, e.id);
    charges.forEach((e, i) => move.run(ages[i] * DAY_MS, e.id));
  } finally {
    db.close();
  }
}

Deno.test("the page's CSP allows exactly its inline script and stylesheet; 404 with no admin token", async () => {
  const page = (adminToken: string | null) =>
    getDashboard({ services: { config: { adminToken } } } as unknown as RequestContext);
  await assert.rejects(
    async () => await page(null),
    (e) => e instanceof GatewayError && e.status === 404,
  );
  const res = await page(ADMIN);
  const html = await res.text();
  const csp = res.headers.get("content-security-policy")!;
  const hash = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;
  const script = /<script>([\s\S]*?)<\/script>/.exec(html)![1];
  const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1];
  assert.ok(csp.includes(`script-src ${hash(script)};`));
  assert.ok(csp.includes(`style-src ${hash(style)};`));
  assert.equal(html.match(/<script/g)!.length, 1, "one script, inline");
  assert.ok(
    !/ on[a-z]+=|javascript:|\b(src|href|action)=|@import|url\(/i.test(html),
    "no handler attribute, nothing loaded from elsewhere",
  );
  assert.equal(res.headers.get("x-frame-options"), "DENY");
  assert.equal(res.headers.get("referrer-policy"), "no-referrer");
  assert.match(res.headers.get("content-type")!, /^text\/html; charset=utf-8$/);
});

Deno.test({
  name:
    "the dashboard in headless Chromium: sign in, health, chart, prompt cache; keys created with settings, their budget bars, disabled, enabled, rotated, changed, revoked; account limits; alerts",
  ignore: skip,
  async fn(t) {
    stack = await startStack({ admin: { token: ADMIN } });
    const { gateway } = stack;
    // Four charges: 40 days ago (outside the chart), 10 and 3 days ago, and today — each reading
    // more of its input from the prompt cache (none 10 days ago).
    const { key } = await gateway.createKey("dash-acme", "--credit", "5");
    for (let i = 0; i < 4; i++) {
      const input = `${"dashboard test ".repeat(20)}[[emulate cached=${[5, 0, 10, 30][i]}]]`;
      const res = await respond(key, "gpt-test", input);
      assert.equal(res.status, 200);
      await res.text();
    }
    backdate("dash-acme", [40, 10, 3, 0]);
    const usage = await api("GET", "/usage?days=30");
    assert.deepEqual(usage.by_day.map((d: { day: string }) => d.day), [
      daysAgo(10),
      daysAgo(3),
      daysAgo(0),
    ]);

    browser = await launchChromium();
    const page: Page = await browser.newPage();
    /** Every request the page made: its URL and Authorization header. */
    const requests: { url: string; authorization?: string }[] = [];
    page.connection.on((method, params, sessionId) => {
      if (sessionId !== page.sessionId || method !== "Network.requestWillBeSent") return;
      const request = params.request as { url: string; headers: Record<string, string> };
      const authorization = Object.entries(request.headers).find(([name]) =>
        name.toLowerCase() === "authorization"
      )?.[1];
      requests.push({ url: request.url, authorization });
    });
    const url = `${gateway.url}/admin`;

    await t.step("the page loads without a token, with a strict CSP and no data", async () => {
      const { status, headers } = await page.goto(url);
      assert.equal(status, 200);
      const csp = headers["content-security-policy"];
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/]+=*'(;|$)/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.ok(!csp.includes("unsafe-inline") && !csp.includes("unsafe-eval"));
      assert.equal(headers["x-frame-options"], "DENY");
      assert.equal(headers["referrer-policy"], "no-referrer");
      await page.waitFor("document.body.dataset.ready", "the page's script to run (its CSP hash)");
      assert.deepEqual(page.problems, [], "no script error or CSP violation");
      assert.equal(await page.evaluate("document.getElementById('app').hidden"), true);
      assert.equal(await page.evaluate("document.getElementById('signin-view').hidden"), false);
      assert.ok(!DASHBOARD_SCRIPT.includes("innerHTML"), "data goes in as text, never as markup");
    });

    await t.step("a wrong token is refused and forgotten", async () => {
      await page.type("#token", "not-the-admin-token-at-all");
      await page.pressEnter();
      const message = await page.waitFor<string>(
        "document.getElementById('signin-error').textContent",
        "the sign-in error",
      );
      assert.match(message, /refused/);
      assert.equal(await page.evaluate("sessionStorage.length"), 0);
    });

    await t.step("signed in: accounts, provider health and the 30-day chart", async () => {
      await page.type("#token", ADMIN);
      await page.click("#signin button[type=submit]");
      await page.waitFor("document.body.dataset.loaded", "the dashboard's data");
      assert.equal(await page.evaluate("location.href"), url, "the token is not in the URL");
      assert.equal(await page.evaluate("sessionStorage.getItem('switchyard-admin-token')"), ADMIN);

      const acme = (await api("GET", "/accounts")).data.find((a: { name: string }) =>
        a.name === "dash-acme"
      );
      const cells = await page.evaluate<string[]>(
        `[...document.querySelectorAll('tr[data-account="dash-acme"] td')].map((c) => c.textContent)`,
      );
      assert.deepEqual(cells.slice(0, 4), [
        "dash-acme",
        `$${acme.balance_usd}`,
        `$${acme.spent_usd}`,
        `$${acme.held_usd}`,
      ]);

      const openai = await page.evaluate<string[]>(
        `[...document.querySelectorAll('tr[data-provider="openai"] td')].map((c) => c.textContent)`,
      );
      assert.deepEqual(openai.slice(0, 3), ["openai", "4", "0"]);
      assert.equal(openai[3], "0.0 %");

      const bars = await page.evaluate<{ day: string; height: number }[]>(
        `[...document.querySelectorAll('#chart svg rect.bar')].map((r) => ({
          day: r.dataset.day, height: r.getBBox().height }))`,
      );
      assert.deepEqual(bars.map((b) => b.day), usage.by_day.map((d: { day: string }) => d.day));
      assert.ok(bars.every((b) => b.height > 0), "every bar is drawn");
      assert.equal(
        await page.evaluate("document.querySelector('#chart svg').namespaceURI"),
        "http://www.w3.org/2000/svg",
      );
    });

    await t.step("the prompt cache: its hit rate per day, its figures by model", async () => {
      const cache = usage.cache;
      assert.deepEqual(
        cache.by_day.map((d: { hit_rate: number }) => d.hit_rate > 0),
        [false, true, true],
        "none read 10 days ago, some since",
      );
      const bars = await page.evaluate<{ day: string; rate: number; height: number }[]>(
        `[...document.querySelectorAll('#cache-chart svg rect.bar')].map((r) => ({
          day: r.dataset.day, rate: Number(r.dataset.rate), height: r.getBBox().height }))`,
      );
      assert.deepEqual(
        bars.map((b) => [b.day, b.rate]),
        cache.by_day.map((d: { day: string; hit_rate: number }) => [d.day, d.hit_rate]),
      );
      // Heights in proportion to the rate, on a 0-100 % axis.
      const plot = 160 - 12 - 28;
      for (const bar of bars) assert.ok(Math.abs(bar.height - bar.rate * plot) < 0.01, bar.day);
      assert.equal(bars[0].height, 0);
      const gpt = cache.by_model["gpt-test"];
      const cells = await page.evaluate<string[]>(
        `[...document.querySelectorAll('#cache-rows tr[data-model="gpt-test"] td')]
          .map((c) => c.textContent)`,
      );
      assert.deepEqual(cells, [
        "gpt-test",
        String(gpt.input_tokens),
        `${(gpt.hit_rate * 100).toFixed(1)} %`,
        "0",
        "0",
        `$${gpt.saved_usd}`,
        "$0.00",
      ]);
      assert.ok(gpt.saved_nanousd > 0);
      const total = await page.evaluate<string>(
        "document.getElementById('cache-total').textContent",
      );
      assert.ok(
        total.startsWith(`${(cache.hit_rate * 100).toFixed(1)} % of ${cache.input_tokens}`),
      );
      assert.ok(total.includes(`saved $${cache.saved_usd}`));
    });

    let made = { secret: "", id: "" };
    await t.step("a key created through the page works at once and is listed", async () => {
      await page.type("#key-account", "dash-new");
      await page.type("#key-credit", "1");
      await page.click("#new-key button[type=submit]");
      const secret = await page.waitFor<string>(
        "!document.getElementById('new-secret').hidden && " +
          "document.getElementById('new-secret-value').textContent",
        "the new key's secret",
      );
      assert.match(secret, /^sy-[a-z2-9]{12}-/);
      const id = `key_${secret.split("-")[1]}`;
      made = { secret, id };
      const res = await respond(secret);
      assert.equal(res.status, 200, "the new key works for a real call");
      await res.text();
      const listed = await api("GET", "/keys?account=dash-new");
      assert.deepEqual(listed.data.map((k: { id: string }) => k.id), [id]);
      assert.equal(listed.data[0].revoked_at, null);
      await page.waitFor(`document.querySelector('tr[data-key="${id}"] button.revoke')`, "its row");
      // Shown once: dismissed, it is gone from the page.
      await page.click("#new-secret-dismiss");
      assert.equal(
        await page.evaluate("document.body.textContent.includes(" + JSON.stringify(secret) + ")"),
        false,
      );
    });

    await t.step("revoked through the page, the key is refused", async () => {
      const button = `tr[data-key="${made.id}"] button.revoke`;
      await page.click(button);
      assert.equal(
        await page.evaluate(`document.querySelector('${button}').textContent`),
        "Confirm revoke",
      );
      await page.click(button);
      await page.waitFor(
        `document.querySelector('tr[data-key="${made.id}"]').classList.contains('revoked')`,
        "the key shown revoked",
      );
      const res = await respond(made.secret);
      assert.equal(res.status, 401, "a revoked key is refused");
      await res.text();
      const listed = await api("GET", "/keys?account=dash-new");
      assert.notEqual(listed.data[0].revoked_at, null);
    });

    /** Runs `action` (clicks) and waits for the page to have loaded its data again. */
    const reloaded = async (action: () => Promise<void>, what: string) => {
      const before = await page.evaluate<string>("document.body.dataset.loaded");
      await action();
      await page.waitFor(`document.body.dataset.loaded !== ${JSON.stringify(before)}`, what);
      assert.equal(
        await page.evaluate("document.getElementById('new-key-error').textContent"),
        "",
        "no form error",
      );
    };
    const row = (id: string) => `tr[data-key="${id}"]`;
    const text = (selector: string) =>
      page.evaluate<string | null>(
        `document.querySelector(${JSON.stringify(selector)})?.textContent ?? null`,
      );
    const clear = (id: string) => page.evaluate(`document.getElementById('${id}').value = ''`);

    const expiry = new Date(Date.now() + 90 * DAY_MS).toISOString().slice(0, 10);
    const name = 'intern <img src=x id="pwn"> & co';
    let team = { secret: "", id: "" };
    await t.step(
      "a key with a $20 monthly budget, two model patterns and an expiry, from the form",
      async () => {
        await page.type("#key-account", "dash-team");
        await page.type("#key-name", name);
        await page.type("#key-budgets", "20/month");
        await page.type("#key-models", "gpt-test, claude-*");
        await page.type("#key-expires", expiry);
        await page.type("#key-meta", "team=<b>ml</b>");
        await page.type("#key-credit", "3");
        await reloaded(() => page.click("#key-submit"), "the keys with the new one");
        const secret = await page.waitFor<string>(
          "!document.getElementById('new-secret').hidden && " +
            "document.getElementById('new-secret-value').textContent",
          "the new key's secret",
        );
        team = { secret, id: `key_${secret.split("-")[1]}` };
        const key = await api("GET", `/keys/${team.id}`);
        assert.equal(key.name, name);
        assert.equal(key.account, "dash-team");
        assert.equal(key.status, "active");
        assert.deepEqual(key.budgets, [{ period: "month", usd: "20.00", nanousd: 20_000_000_000 }]);
        assert.deepEqual(key.models, ["gpt-test", "claude-*"]);
        assert.equal(key.expires_at, `${expiry}T00:00:00.000Z`);
        assert.deepEqual(key.metadata, { team: "<b>ml</b>" });
        // What the operator typed is shown as text, never as markup.
        assert.equal(await page.evaluate("document.getElementById('pwn')"), null);
        assert.equal(await page.evaluate("document.querySelector('#key-rows b')"), null);
        assert.equal(await text(`${row(team.id)} .name`), name);
        assert.equal(await text(`${row(team.id)} .expires`), `expires ${expiry} 00:00:00`);
        // Its model list holds: one model it may call, one it may not.
        assert.equal(await statusOf(team.secret), 200);
        assert.equal(await statusOf(team.secret, "grok-test"), 403);
        await page.click("#new-secret-dismiss");
      },
    );

    await t.step(
      "its budget as a bar: what it spent against $20, and when the month resets",
      async () => {
        await reloaded(() => page.click("#refresh"), "the refreshed page");
        const [state] = (await api("GET", `/keys/${team.id}`)).budget_states;
        assert.ok(state.spent_nanousd > 0);
        const bar = `${row(team.id)} .budget[data-owner="key"][data-period="month"]`;
        assert.equal(
          await text(`${bar} .label`),
          `key month: $${state.spent_usd} spent + $${state.held_usd} held of $20.00`,
        );
        assert.equal(await text(`${bar} .resets`), `resets ${shown(state.resets_at)} UTC`);
        const widths = await page.evaluate<number[]>(
          `[...document.querySelectorAll('${bar} rect')].map((r) => r.getBBox().width)`,
        );
        assert.equal(widths.length, 3);
        // Its share of the track, at least a visible sliver (a call is a tiny part of $20).
        const expected = Math.max(1, (state.spent_nanousd / state.limit_nanousd) * widths[0]);
        assert.ok(Math.abs(widths[1] - expected) < 0.01, `spent ${widths[1]}, not ${expected}`);
        assert.equal(widths[2], 0, "nothing held");
      },
    );

    await t.step("disabled, then enabled, from the page", async () => {
      assert.equal(await text(`${row(team.id)} button.toggle`), "Disable");
      await reloaded(() => page.click(`${row(team.id)} button.toggle`), "the key disabled");
      assert.equal(await text(`${row(team.id)} td.status`), "disabled");
      assert.equal((await api("GET", `/keys/${team.id}`)).status, "disabled");
      assert.equal(await statusOf(team.secret), 401, "a disabled key is refused");

      assert.equal(await text(`${row(team.id)} button.toggle`), "Enable");
      await reloaded(() => page.click(`${row(team.id)} button.toggle`), "the key enabled");
      assert.equal(await text(`${row(team.id)} td.status`), "active");
      assert.equal((await api("GET", `/keys/${team.id}`)).status, "active");
      assert.equal(await statusOf(team.secret), 200, "enabled, it works again");
    });

    await t.step(
      "rotated from the page: the new secret shown once, the old one refused",
      async () => {
        const button = `${row(team.id)} button.rotate`;
        await page.click(button);
        assert.equal(await text(button), "Confirm rotate");
        await reloaded(() => page.click(button), "the key rotated");
        const secret = await page.waitFor<string>(
          "!document.getElementById('new-secret').hidden && " +
            "document.getElementById('new-secret-value').textContent",
          "the rotated key's secret",
        );
        assert.notEqual(secret, team.secret);
        assert.equal(`key_${secret.split("-")[1]}`, team.id, "the same key");
        assert.equal((await api("GET", `/keys/${team.id}`)).prefix, secret.slice(0, 10));
        assert.equal(await statusOf(team.secret), 401, "the old secret is refused (no grace)");
        assert.equal(await statusOf(secret), 200);
        team = { ...team, secret };
        await page.click("#new-secret-dismiss");
        assert.equal(await page.evaluate(`document.body.textContent.includes("${secret}")`), false);
      },
    );

    await t.step("its settings changed from the form (PATCH)", async () => {
      await page.click(`${row(team.id)} button.edit`);
      assert.equal(
        await page.evaluate("document.getElementById('key-budgets').value"),
        "20.00/month",
      );
      assert.equal(await page.evaluate("document.getElementById('key-name').value"), name);
      await clear("key-budgets");
      await page.type("#key-budgets", "20/month, 2/day");
      await page.type("#key-tpm", "50000");
      await clear("key-models");
      await reloaded(() => page.click("#key-submit"), "the key changed");
      const key = await api("GET", `/keys/${team.id}`);
      const periods = key.budgets.map((b: { period: string }) => b.period);
      assert.deepEqual(periods.sort(), ["day", "month"]);
      assert.equal(key.tpm, 50000);
      assert.equal(key.models, null, "a cleared field clears the setting");
      assert.equal(key.name, name, "what was not changed stays");
      assert.equal(key.expires_at, `${expiry}T00:00:00.000Z`);
      assert.equal(await statusOf(team.secret, "grok-test"), 200, "every model now");
      assert.ok(
        await page.evaluate(
          `!!document.querySelector('${row(team.id)} .budget[data-period="day"]')`,
        ),
      );
    });

    await t.step("an account's budgets and model list set from the page", async () => {
      await page.click('tr[data-account="dash-team"] button.limits');
      await page.type("#limits-budgets", "100/month");
      await page.type("#limits-models", "gpt-*");
      await reloaded(
        () => page.click("#account-limits button[type=submit]"),
        "the account changed",
      );
      const account = (await api("GET", "/accounts")).data.find((a: { name: string }) =>
        a.name === "dash-team"
      );
      assert.deepEqual(account.budgets, [{ period: "month", usd: "100.00", nanousd: 100e9 }]);
      assert.deepEqual(account.models, ["gpt-*"]);
      assert.equal(await statusOf(team.secret, "grok-test"), 403, "the account's list holds");
      assert.match(
        (await text(`${row(team.id)} .budget[data-owner="account"] .label`))!,
        /^account month: \$[\d.]+ spent \+ \$[\d.]+ held of \$100\.00$/,
      );
    });

    await t.step(
      "the alerts panel: shown when the gateway has alerts, hidden when not",
      async () => {
        const res = await fetch(`${gateway.url}/admin/api/alerts`, {
          headers: { authorization: `Bearer ${ADMIN}` },
        });
        const alerts = res.status === 200 ? await res.json() : (await res.body?.cancel(), null);
        assert.ok(res.status === 200 || res.status === 404, `alerts: ${res.status}`);
        assert.equal(await page.evaluate("document.getElementById('alerts').hidden"), !alerts);
        if (alerts) {
          assert.equal(
            await page.evaluate("document.querySelectorAll('#alert-rows tr').length"),
            Math.min(alerts.data.length, 200),
          );
          return;
        }
        // This gateway has no alerts route yet: the page is shown one (its fetch answered in the
        // page, for that path only), drawn as text, then hidden again when the route is gone.
        const alert = {
          id: "alert_1",
          type: "budget.threshold",
          created_at: "2026-11-20T10:00:00.000Z",
          account: "<i>dash-team</i>",
          key_id: team.id,
          period: "month",
          threshold_percent: 80,
          status: "failed",
          attempts: 3,
        };
        await page.evaluate(`(() => {
          const real = window.fetch;
          window.realFetch = real;
          window.fetch = (path, init) => String(path).startsWith("admin/api/alerts")
            ? Promise.resolve(new Response(JSON.stringify({ object: "list", data: [${
          JSON.stringify(alert)
        }], next: null }), { headers: { "content-type": "application/json" } }))
            : real(path, init);
        })()`);
        await reloaded(() => page.click("#refresh"), "the page with an alert");
        assert.equal(await page.evaluate("document.getElementById('alerts').hidden"), false);
        const cells = await page.evaluate<string[]>(
          `[...document.querySelectorAll('#alert-rows tr[data-alert="alert_1"] td')]
            .map((c) => c.textContent)`,
        );
        assert.deepEqual(cells, [
          "2026-11-20 10:00:00",
          "budget.threshold",
          "<i>dash-team</i>",
          team.id,
          "month budget at 80 %",
          "failed",
          "3",
        ]);
        assert.equal(await page.evaluate("document.querySelector('#alert-rows i')"), null);
        await page.evaluate("window.fetch = window.realFetch");
        await reloaded(() => page.click("#refresh"), "the page without alerts");
        assert.equal(await page.evaluate("document.getElementById('alerts').hidden"), true);
      },
    );

    await t.step(
      "the token went only in the Authorization header; no script or CSP error",
      () => {
        const apiCalls = requests.filter((r) => r.url.includes("/admin/api/"));
        assert.ok(apiCalls.length >= 5);
        assert.ok(requests.every((r) => !r.url.includes(ADMIN)), "never in a URL");
        assert.ok(
          apiCalls.every((r) => r.authorization?.startsWith("Bearer ")),
          "every admin API call carries the token",
        );
        // Network entries are the wrong token's 401 (and a favicon's 404): expected.
        const problems = page.problems.filter((p) => !p.text.startsWith("network:"));
        assert.deepEqual(problems, []);
      },
    );

    await t.step("signing out forgets the token", async () => {
      await page.click("#signout");
      assert.equal(await page.evaluate("sessionStorage.length"), 0);
      assert.equal(await page.evaluate("document.getElementById('app').hidden"), true);
    });
  },
});
