/**
 * `GET /v1/usage`: the caller's account balance and spend, free of charge (it still counts toward
 * the key's RPM). Amounts are exact: decimal USD strings with integer nanoUSD beside them. Spend
 * is split by unit (`by_unit`: tokens by kind, images, video seconds, search calls) and by model;
 * `held_by_unit` shows what is reserved by calls in flight and unfinished video jobs.
 */
import type { Handler } from "../context.ts";
import { nanoToUsd } from "../billing/money.ts";
import { jsonResponse } from "../http/json.ts";
import type { UsageSummary } from "../store/store.ts";

/** The wire body of `GET /v1/usage`. */
function usageBody(u: UsageSummary): Record<string, unknown> {
  const money = (prefix: string, nano: number) => ({
    [`${prefix}_usd`]: nanoToUsd(nano),
    [`${prefix}_nanousd`]: nano,
  });
  return {
    object: "usage",
    account: u.account.name,
    currency: "USD",
    ...money("balance", u.account.balance),
    ...money("spent", u.account.spent),
    ...money("held", u.account.held),
    requests: u.requests,
    by_unit: Object.fromEntries(
      Object.entries(u.byUnit).map(([unit, x]) => [
        unit,
        { quantity: x.quantity, ...money("spent", x.amount) },
      ]),
    ),
    held_by_unit: Object.fromEntries(
      Object.entries(u.heldByUnit).map(([unit, x]) => [
        unit,
        { quantity: x.quantity, ...money("held", x.amount) },
      ]),
    ),
    by_model: Object.fromEntries(
      Object.entries(u.byModel).map(([model, x]) => [
        model,
        { requests: x.requests, ...money("spent", x.amount) },
      ]),
    ),
  };
}

export const getUsage: Handler = (ctx) =>
  jsonResponse(usageBody(ctx.services.store.usage(ctx.principal!.accountId)));
