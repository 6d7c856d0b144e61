/**
 * The dashboard's script: plain JavaScript, as text (the page embeds it; its CSP allows it by its
 * hash, see `page.ts`). It signs in with the admin token — kept in `sessionStorage`, sent only as
 * `Authorization: Bearer` to the admin API (not even to `/readyz`), never in a URL — and draws the
 * admin API's data with `textContent` and DOM nodes (never `innerHTML`), so nothing an account,
 * key or model name holds can become markup. URLs are relative to the page (`/admin`), so the
 * gateway may sit under a prefix.
 *
 * One function body in parts that share its scope: this module's helpers and panels (health,
 * spend, ledger), then the prompt cache (`script_cache.ts`), accounts (`script_accounts.ts`), keys
 * (`script_keys.ts`) and alerts (`script_alerts.ts`), then this module's start.
 *
 * Written without template literals (these are ones) and with `String.raw` (backslashes stay as
 * written).
 */
import { ACCOUNTS_SCRIPT } from "./script_accounts.ts";
import { ALERTS_SCRIPT } from "./script_alerts.ts";
import { CACHE_SCRIPT } from "./script_cache.ts";
import { KEYS_SCRIPT } from "./script_keys.ts";

const HEAD = String.raw`"use strict";
(() => {
  const TOKEN = "switchyard-admin-token";
  const DAYS = 30;
  const DAY_MS = 86400000;
  const SVG = "http://www.w3.org/2000/svg";
  /** Rows shown at most in the accounts and keys tables. */
  const MAX_ROWS = 200;
  const LEDGER_PAGE = 50;
  const $ = (id) => document.getElementById(id);
  let olderLedger = null;

  /** An element with attributes and children (strings become text nodes). */
  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined) node.setAttribute(name, String(value));
    }
    for (const child of children || []) {
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function cell(text, className) {
    return el("td", { class: className }, [text === null || text === undefined ? "" : String(text)]);
  }

  function usd(text) {
    return "$" + text;
  }

  /** An axis label: a round figure of nanoUSD, three significant digits for small amounts. */
  function axisUsd(nano) {
    const value = nano / 1e9;
    return "$" + (value >= 100 ? value.toFixed(0) : String(Number(value.toPrecision(3))));
  }

  function when(iso) {
    return iso ? iso.replace("T", " ").slice(0, 19) : "";
  }

  function say(text, isError) {
    const status = $("status");
    status.textContent = text;
    status.className = isError ? "error" : "";
  }

  class Unauthorized extends Error {}

  /** The answer's JSON, or null when it has none. */
  async function jsonOf(res) {
    try {
      return await res.json();
    } catch {
      return null;
    }
  }

  /**
   * Calls the admin API with the token; rejects with the API's error message. With missing, a 404
   * is null (a route this gateway may not have).
   */
  async function api(method, path, body, missing) {
    const headers = { authorization: "Bearer " + sessionStorage.getItem(TOKEN) };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
    const json = await jsonOf(res);
    if (res.status === 401) throw new Unauthorized("The admin token was refused.");
    if (missing && res.status === 404) return null;
    if (!res.ok) {
      const message = json && json.error && json.error.message;
      throw new Error(message || "HTTP " + res.status);
    }
    return json;
  }

  /** The readiness answer, asked without the token (it needs none); a 503 has providers too. */
  async function readiness() {
    const res = await fetch("readyz", { cache: "no-store", credentials: "omit" });
    const json = await jsonOf(res);
    if (!json || !json.providers) throw new Error("readyz: HTTP " + res.status);
    return json;
  }

  function showSignIn(message) {
    sessionStorage.removeItem(TOKEN);
    $("app").hidden = true;
    $("nav").hidden = true;
    $("signin-view").hidden = false;
    $("signin-error").textContent = message || "";
    $("token").value = "";
    $("token").focus();
    say("");
  }

  function fail(error) {
    if (error instanceof Unauthorized) showSignIn(error.message);
    else say(String(error.message || error), true);
  }

  function renderHealth(ready) {
    $("store-status").textContent = "Store: " + (ready.store === "ok" ? "answering" : "NOT answering") +
      " · window: last " + Math.round(ready.window_seconds / 60) + " minutes";
    $("store-status").className = ready.store === "ok" ? "ok" : "error";
    const rows = Object.entries(ready.providers).map(([name, p]) => {
      const rate = p.error_rate === null ? "—" : (p.error_rate * 100).toFixed(1) + " %";
      const className = p.error_rate === null ? "" : p.error_rate >= 0.5 ? "error" : p.error_rate > 0 ? "warn" : "ok";
      return el("tr", { "data-provider": name }, [
        cell(name),
        cell(p.calls, "num"),
        cell(p.errors, "num"),
        cell(rate, "num " + className),
      ]);
    });
    $("provider-rows").replaceChildren(...rows);
  }

  /**
   * Bars per UTC day on the window's axis, as an SVG chart: one per entry of o.days (each with
   * its day), o.barHeight(d, plotH) pixels tall, with o.attrs(d) and the hover text
   * o.title(d); o.top and o.bottom label the value axis.
   */
  function dayBars(usage, o) {
    const width = 720, height = o.height, left = 64, right = 8, top = 12, bottom = 28;
    const plotW = width - left - right, plotH = height - top - bottom;
    const start = Date.parse(usage.since + "T00:00:00Z");
    const slot = plotW / usage.days;
    const chart = svg("svg", {
      viewBox: "0 0 " + width + " " + height,
      role: "img",
      "aria-label": o.label,
      class: "chart",
    });
    chart.append(
      svg("line", { x1: left, y1: top, x2: left, y2: top + plotH, class: "axis" }),
      svg("line", { x1: left, y1: top + plotH, x2: left + plotW, y2: top + plotH, class: "axis" }),
      svg("text", { x: left - 6, y: top + 10, "text-anchor": "end", class: "label" }, o.top),
      svg("text", { x: left - 6, y: top + plotH, "text-anchor": "end", class: "label" }, o.bottom),
      svg("text", { x: left, y: height - 8, class: "label" }, usage.since),
      svg("text", { x: left + plotW, y: height - 8, "text-anchor": "end", class: "label" }, new Date(start + (usage.days - 1) * DAY_MS).toISOString().slice(0, 10)),
    );
    for (const d of o.days) {
      const index = Math.round((Date.parse(d.day + "T00:00:00Z") - start) / DAY_MS);
      if (index < 0 || index >= usage.days) continue;
      const h = o.barHeight(d, plotH);
      const bar = svg("rect", {
        class: "bar",
        "data-day": d.day,
        ...o.attrs(d),
        x: (left + index * slot + slot * 0.15).toFixed(2),
        y: (top + plotH - h).toFixed(2),
        width: (slot * 0.7).toFixed(2),
        height: h.toFixed(2),
      });
      bar.append(svg("title", {}, o.title(d)));
      chart.append(bar);
    }
    return chart;
  }

  /** Spend per UTC day as bars, one per day with spend, on a 30-day axis. */
  function renderChart(usage) {
    const max = Math.max(0, ...usage.by_day.map((d) => d.spent_nanousd));
    const chart = dayBars(usage, {
      height: 220,
      label: "Spend per day over the last " + usage.days + " days",
      top: max ? axisUsd(max) : "$0",
      bottom: "$0",
      days: usage.by_day,
      barHeight: (d, plotH) => Math.max(1, (d.spent_nanousd / (max || 1)) * plotH),
      attrs: () => ({}),
      title: (d) => d.day + ": " + usd(d.spent_usd) + " (" + d.requests + " requests)",
    });
    $("chart").replaceChildren(chart);
    $("spend-total").textContent = usd(usage.spent_usd) + " in " + usage.requests +
      " requests since " + usage.since + " (UTC days with spend: " + usage.by_day.length + ")";
  }

  function ledgerRow(e) {
    const what = e.kind === "credit" ? "credit" + (e.note ? " (" + e.note + ")" : "") : e.endpoint;
    return el("tr", { "data-entry": e.id }, [
      cell(when(e.created_at)),
      cell(e.account),
      cell(what),
      cell(e.model),
      cell(e.provider),
      cell(e.status + (e.estimated ? ", estimated" : "")),
      cell(usd(e.amount_usd), "num"),
    ]);
  }

  async function loadLedger(more) {
    const query = "admin/api/ledger?limit=" + LEDGER_PAGE + (more ? "&before=" + olderLedger : "");
    const page = await api("GET", query);
    const rows = page.data.map(ledgerRow);
    if (more) $("ledger-rows").append(...rows);
    else $("ledger-rows").replaceChildren(...rows);
    olderLedger = page.next;
    $("older").hidden = page.next === null;
  }

  async function loadAll() {
    say("Loading…");
    const accounts = api("GET", "admin/api/accounts");
    const [list, usage, ready] = await Promise.all([
      accounts,
      api("GET", "admin/api/usage?days=" + DAYS),
      readiness(),
      accounts.then(loadKeys),
      loadLedger(false),
      loadAlerts(),
    ]);
    renderAccounts(list);
    renderChart(usage);
    renderCache(usage);
    renderHealth(ready);
    say("Updated " + new Date().toISOString().replace("T", " ").slice(0, 19) + " UTC");
    document.body.dataset.loaded = String(Date.now());
  }

  async function signIn() {
    $("signin-view").hidden = true;
    $("app").hidden = false;
    $("nav").hidden = false;
    try {
      await loadAll();
    } catch (error) {
      fail(error);
    }
  }

  $("signin").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token").value.trim();
    if (!token) return;
    sessionStorage.setItem(TOKEN, token);
    $("token").value = "";
    signIn();
  });

  $("signout").addEventListener("click", () => showSignIn("Signed out."));

  $("refresh").addEventListener("click", () => loadAll().catch(fail));

  $("older").addEventListener("click", () => loadLedger(true).catch(fail));

`;

const TAIL = String.raw`
  document.body.dataset.ready = "1";
  if (sessionStorage.getItem(TOKEN)) signIn();
  else showSignIn("");
})();
`;

/** The whole script (one function body; see the module doc). */
export const DASHBOARD_SCRIPT = HEAD + CACHE_SCRIPT + ACCOUNTS_SCRIPT + KEYS_SCRIPT +
  ALERTS_SCRIPT +
  TAIL;
