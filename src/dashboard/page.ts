/**
 * The admin dashboard: one self-contained HTML page (no framework, CDN or web font: it works on an
 * air-gapped host and from inside the compiled binary) with its stylesheet and script inline. The
 * page holds no data — the script fetches it with the admin token — so it loads without one.
 *
 * Content-Security-Policy: nothing may load or run but this page's own stylesheet and script,
 * allowed by their SHA-256 hashes. Hashes rather than nonces: both are static text, so a hash pins
 * exactly them, needs no per-response randomness, and lets the page be the same bytes every time;
 * an injected `<script>` or inline handler (say, through a model name that escaped escaping) would
 * not match and not run. `connect-src 'self'` limits where the script can send the token,
 * `form-action 'none'` keeps the sign-in form from ever being submitted (so the token cannot end
 * up in a URL even without the script), and `frame-ancestors 'none'` (with `x-frame-options: DENY`)
 * forbids framing.
 */
import { sha256 } from "../sha256.ts";
import { DASHBOARD_SCRIPT } from "./script.ts";
import { DASHBOARD_STYLE } from "./style.ts";

/** A CSP source for an inline text: its SHA-256 in base64. */
function hashSource(text: string): string {
  return `'sha256-${sha256(text).toBase64()}'`;
}

/** The `content-security-policy` the page is served with. */
const DASHBOARD_CSP = [
  "default-src 'none'",
  `script-src ${hashSource(DASHBOARD_SCRIPT)}`,
  `style-src ${hashSource(DASHBOARD_STYLE)}`,
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** The page's headers: its CSP, no framing, no referrer, no sniffing, not stored in caches. */
export const DASHBOARD_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": DASHBOARD_CSP,
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "cross-origin-opener-policy": "same-origin",
  "cache-control": "no-store",
};

/** The page. */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Switchyard admin</title>
<style>${DASHBOARD_STYLE}</style>
</head>
<body>
<header>
  <h1>Switchyard</h1>
  <span id="status" role="status"></span>
  <nav id="nav" hidden>
    <button id="refresh" type="button">Refresh</button>
    <button id="signout" type="button">Sign out</button>
  </nav>
</header>
<main>
<div id="signin-view">
  <form id="signin" method="post" autocomplete="off">
    <h2>Sign in</h2>
    <label>Admin token (admin.token or SWITCHYARD_ADMIN_TOKEN)
      <input id="token" type="password" required autocomplete="off" spellcheck="false">
    </label>
    <button type="submit">Sign in</button>
    <p class="note">The token stays in this tab (sessionStorage) and is sent only to the admin API.</p>
    <p id="signin-error" class="error" role="alert"></p>
  </form>
</div>
<div id="app" hidden>
  <section id="health">
    <h2>Provider health</h2>
    <p id="store-status"></p>
    <table>
      <thead><tr><th>provider</th><th class="num">calls</th><th class="num">errors</th><th class="num">error rate</th></tr></thead>
      <tbody id="provider-rows"></tbody>
    </table>
  </section>
  <section id="spend">
    <h2>Spend, last 30 days (UTC)</h2>
    <p id="spend-total" class="note"></p>
    <div id="chart"></div>
  </section>
  <section id="cache">
    <h2>Prompt cache, last 30 days (UTC)</h2>
    <p id="cache-total" class="note"></p>
    <div id="cache-chart"></div>
    <table>
      <thead><tr><th>model</th><th class="num">input tokens</th><th class="num">hit rate</th><th class="num">written, 5 min</th><th class="num">written, 1 h</th><th class="num">saved</th><th class="num">lost to misses</th></tr></thead>
      <tbody id="cache-rows"></tbody>
    </table>
  </section>
  <section id="alerts" hidden>
    <h2>Alerts</h2>
    <table>
      <thead><tr><th>time (UTC)</th><th>type</th><th>account</th><th>key</th><th>what</th><th>delivery</th><th class="num">attempts</th></tr></thead>
      <tbody id="alert-rows"></tbody>
    </table>
    <p id="alert-note" class="note"></p>
  </section>
  <section id="accounts">
    <h2>Accounts</h2>
    <form id="account-limits" class="grid" method="post" autocomplete="off" hidden>
      <h3>Limits of <span id="limits-account"></span></h3>
      <label>Budgets (e.g. 100/month, 10/day; blank: none) <input id="limits-budgets" size="24"></label>
      <label>Models it may call (ids, * patterns; blank: all) <input id="limits-models" size="24"></label>
      <label>Models it may not call <input id="limits-deny" size="24"></label>
      <div class="buttons">
        <button type="submit">Save limits</button>
        <button id="limits-cancel" type="button">Cancel</button>
      </div>
      <p id="limits-error" class="error" role="alert"></p>
    </form>
    <table>
      <thead><tr><th>account</th><th class="num">balance</th><th class="num">spent</th><th class="num">held</th><th>budgets and models</th><th>created (UTC)</th><th></th></tr></thead>
      <tbody id="account-rows"></tbody>
    </table>
    <p id="account-note" class="note"></p>
  </section>
  <section id="keys">
    <h2>Keys</h2>
    <form id="new-key" class="grid" method="post" autocomplete="off">
      <h3 id="key-form-title">New key</h3>
      <label>Account <input id="key-account" required list="account-names" size="18"></label>
      <label>Name <input id="key-name" maxlength="64" size="18"></label>
      <label>Budgets (e.g. 20/month, 5/day) <input id="key-budgets" size="20"></label>
      <label>Models it may call (ids, * patterns; blank: all) <input id="key-models" size="24"></label>
      <label>Models it may not call <input id="key-deny" size="24"></label>
      <label>Expires (2027-01-31, a date-time, 30d; blank: never) <input id="key-expires" size="20"></label>
      <label>RPM (blank: default, 0: unlimited) <input id="key-rpm" inputmode="numeric" size="8"></label>
      <label>Tokens per minute (blank: no limit) <input id="key-tpm" inputmode="numeric" size="10"></label>
      <label>Calls in flight (blank: no limit) <input id="key-concurrent" inputmode="numeric" size="6"></label>
      <label>Addresses (IPs, CIDR ranges; blank: any) <input id="key-ips" size="24"></label>
      <label>Metadata (KEY=VALUE, one per line) <textarea id="key-meta" rows="2" cols="24"></textarea></label>
      <label id="key-credit-label">Credit, USD (optional) <input id="key-credit" inputmode="decimal" size="8"></label>
      <div class="buttons">
        <button id="key-submit" type="submit">Create key</button>
        <button id="key-cancel" type="button" hidden>Cancel</button>
      </div>
      <datalist id="account-names"></datalist>
    </form>
    <p id="new-key-error" class="error" role="alert"></p>
    <div id="new-secret" hidden>
      <strong id="new-secret-title"></strong> — copy it now, it is not shown again:
      <code id="new-secret-value"></code>
      <span id="new-secret-note" class="note"></span>
      <button id="new-secret-dismiss" type="button">Done</button>
    </div>
    <p class="note"><label class="row">On rotation, the old secret works
      <select id="rotate-grace">
        <option value="0">no longer</option>
        <option value="3600">for an hour</option>
        <option value="86400">for a day</option>
        <option value="604800">for a week</option>
      </select></label></p>
    <table>
      <thead><tr><th>key</th><th>account</th><th>status</th><th>budgets (spent, held, limit)</th><th>limits</th><th>times (UTC)</th><th></th></tr></thead>
      <tbody id="key-rows"></tbody>
    </table>
    <p id="key-note" class="note"></p>
  </section>
  <section id="requests">
    <h2>Recent requests</h2>
    <table>
      <thead><tr><th>time (UTC)</th><th>account</th><th>endpoint</th><th>model</th><th>provider</th><th>status</th><th class="num">amount</th></tr></thead>
      <tbody id="ledger-rows"></tbody>
    </table>
    <button id="older" type="button" hidden>Older</button>
  </section>
</div>
</main>
<script>${DASHBOARD_SCRIPT}</script>
</body>
</html>
`;
