/**
 * `GET /v1/usage`: the caller's account balance and spend, free of charge (it still counts toward
 * the key's RPM). Amounts are exact: decimal USD strings with integer nanoUSD beside them. Spend
 * is split by unit (`by_unit`: tokens by kind, images, video seconds, search calls) and by model;
 * `held_by_unit` shows what is reserved by calls in flight and unfinished video jobs.
 */
import type { Handler } from "../context.ts";
import { amountFields } from "../billing/money.ts";
import { byModelFields, byUnitFields } from "../billing/spend_report.ts";
import { jsonResponse } from "../http/json.ts";
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

export const getUsage: Handler = async (ctx) =>
  jsonResponse(usageBody(await ctx.services.store.usage(ctx.principal!.accountId)));
