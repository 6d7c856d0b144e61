/**
 * Spend broken down as `GET /v1/usage` and the admin API show it: quantities and amounts by unit,
 * requests and amounts by model (amounts as `amountFields`: exact at any size).
 */
import { amountFields } from "../money.ts";
import type { BudgetState, Total } from "../store/store.ts";

/** `{unit: {quantity, <prefix>_usd, <prefix>_nanousd}}` (prefix `spent`, or `held`). */
export function byUnitFields(
  byUnit: Record<string, { quantity: Total; amount: Total }>,
  prefix = "spent",
): Record<string, Record<string, string | Total>> {
  return Object.fromEntries(
    Object.entries(byUnit).map((
      [unit, x],
    ) => [unit, { quantity: x.quantity, ...amountFields(prefix, x.amount) }]),
  );
}

/** `{model: {requests, spent_usd, spent_nanousd}}`. */
export function byModelFields(
  byModel: Record<string, { requests: number; amount: Total }>,
): Record<string, Record<string, string | Total>> {
  return Object.fromEntries(
    Object.entries(byModel).map((
      [model, x],
    ) => [model, { requests: x.requests, ...amountFields("spent", x.amount) }]),
  );
}

/** `[{day, requests, spent_usd, spent_nanousd}]`, one row per UTC day. */
export function byDayFields(
  byDay: readonly { day: string; requests: number; amount: Total }[],
): Record<string, string | Total>[] {
  return byDay.map((d) => ({
    day: d.day,
    requests: d.requests,
    ...amountFields("spent", d.amount),
  }));
}

/**
 * A budget as the APIs show it: its limit, what its window settled and what calls hold, what is
 * left, and when it resets (null: a lifetime budget never does).
 */
export function budgetJson(b: BudgetState) {
  return {
    owner: b.owner,
    period: b.period,
    ...amountFields("limit", b.amount),
    ...amountFields("spent", b.spent),
    ...amountFields("held", b.held),
    ...amountFields("remaining", Math.max(0, b.amount - b.spent - b.held)),
    window_start: new Date(b.windowStart).toISOString(),
    resets_at: Number.isFinite(b.resetsAt) ? new Date(b.resetsAt).toISOString() : null,
  };
}
