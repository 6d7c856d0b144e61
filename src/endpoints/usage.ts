/**
 * `GET /v1/usage`: the caller's account balance and spend, free of charge (it still counts toward
 * the key's RPM). Amounts are exact: decimal USD strings with integer nanoUSD beside them. Spend
 * is split by unit (`by_unit`: tokens by kind, images, video seconds, search calls) and by model;
 * `held_by_unit` shows what is reserved by calls in flight and unfinished video jobs. The calling
 * key's limits and budgets (and its account's) come with it, and what the prompt cache did for the
 * account and the key (`cache`, see `billing/cache_report.ts`).
 */
import type { Handler } from "../context.ts";
import { amountFields } from "../money.ts";
import { budgetJson, byModelFields, byUnitFields } from "../billing/spend_report.ts";
import { budgetWindows } from "../billing/windows.ts";
import { limitsJson } from "../billing/accounts_json.ts";
import { jsonResponse } from "../http/json.ts";
import { cacheReport } from "../billing/cache_report.ts";
import { DEFAULT_DAYS, MAX_DAYS } from "./admin_bodies.ts";
import { countParam, daysSince } from "./query.ts";
import type { UsageSummary } from "../store/store.ts";

/** The wire body of `GET /v1/usage`. */
function usageBody(u: UsageSummary): Record<string, unknown> {
  return {
    object: "usage",
    account: u.account.name,
    currency: "USD",
    ...amountFields("balance", u.account.balance),
    ...amountFields("spent", u.account.spent),
    ...amountFields("held", u.account.held),
    requests: u.requests,
    by_unit: byUnitFields(u.byUnit),
    held_by_unit: byUnitFields(u.heldByUnit, "held"),
    by_model: byModelFields(u.byModel),
  };
}

/**
 * The caller's own usage, and its key's: its limits and where its budgets and its account's stand
 * (spent in the window, held, remaining, when each resets), and the prompt cache's figures of the
 * last `days` UTC days (default 30) — its account's and its key's own, nothing of other keys or
 * accounts.
 */
export const getUsage: Handler = async (ctx) => {
  const principal = ctx.principal!;
  const { store, config } = ctx.services;
  const now = ctx.now();
  const days = countParam(ctx.url, "days", DEFAULT_DAYS, MAX_DAYS);
  const since = daysSince(days, now);
  const [summary, budgets, cache] = await Promise.all([
    store.usage(principal.accountId),
    store.budgets(principal.keyId, principal.accountId, budgetWindows(now, config.budgetTimeZone)),
    store.cacheUsage(since, principal.accountId),
  ]);
  const key = await store.findKey(principal.keyId);
  return jsonResponse({
    ...usageBody(summary),
    key: key && {
      id: key.id,
      name: key.name,
      expires_at: key.expiresAt === null ? null : new Date(key.expiresAt).toISOString(),
      ...limitsJson(key.limits),
      rpm: principal.rpm || null,
    },
    account_limits: limitsJson(principal.accountLimits),
    budgets: budgets.map(budgetJson),
    cache: {
      days,
      since: new Date(since).toISOString().slice(0, 10),
      ...cacheReport(cache),
      key: cacheReport(cache.filter((row) => row.keyId === principal.keyId)),
    },
  });
};
