/**
 * Alert events (pure): the alert each condition raises — a budget reaching a threshold in its
 * window, a balance below an amount since the account's last credit, a key about to expire — with
 * the fields its event carries, and the event as it is delivered and listed.
 */
import { amountFields } from "../money.ts";
import type { BudgetWindow } from "../billing/windows.ts";
import { accountOwner, keyOwner } from "../store/limits.ts";
import type { Alert, KeyRecord, LowBalance, NewAlert, SpentBudget } from "../store/store.ts";

/** An alert's public id (`alert_42`): the event's `id` and `x-switchyard-delivery`. */
export function alertId(id: number): string {
  return `alert_${id}`;
}

/** The store's id of a public alert id (`alert_42` or `42`), or null when it is not one. */
export function parseAlertId(text: string): number | null {
  const match = /^(?:alert_)?(\d{1,15})$/.exec(text);
  return match ? Number(match[1]) : null;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * A budget of `b` that reached `percent` in `window`, having settled `spent` there; `refused`: it
 * was raised because the budget refused a call that no longer fits in it (calls are held at their
 * most, so a budget refuses the last calls before its spend is exactly its amount).
 */
export function budgetAlert(
  b: SpentBudget,
  percent: number,
  window: BudgetWindow,
  spent: number,
  now: number,
  status: NewAlert["status"],
  refused = false,
): NewAlert {
  return {
    type: "budget.threshold",
    owner: b.owner === "key" ? keyOwner(b.keyId!) : accountOwner(b.accountId),
    period: b.period,
    windowStart: window.start,
    threshold: percent,
    accountId: b.accountId,
    keyId: b.keyId,
    payload: {
      account: b.accountName,
      key_id: b.keyId,
      key_name: b.keyName,
      owner: b.owner,
      period: b.period,
      threshold_percent: percent,
      ...amountFields("limit", b.amount),
      ...amountFields("spent", spent),
      window_start: iso(window.start),
      resets_at: Number.isFinite(window.end) ? iso(window.end) : null,
      refused,
    },
    createdAt: now,
    status,
  };
}

/** An account whose balance is below `below` nanoUSD since `low.since`. */
export function balanceAlert(
  low: LowBalance,
  below: number,
  now: number,
  status: NewAlert["status"],
): NewAlert {
  return {
    type: "balance.low",
    owner: accountOwner(low.accountId),
    period: "",
    windowStart: low.since,
    threshold: below,
    accountId: low.accountId,
    keyId: null,
    payload: {
      account: low.accountName,
      ...amountFields("threshold", below),
      ...amountFields("balance", low.balance),
      ...amountFields("held", low.held),
      since: iso(low.since),
    },
    createdAt: now,
    status,
  };
}

/** A key about to expire (once per key and expiry instant). */
export function expiryAlert(key: KeyRecord, now: number, status: NewAlert["status"]): NewAlert {
  return {
    type: "key.expiring",
    owner: keyOwner(key.id),
    period: "",
    windowStart: key.expiresAt!,
    threshold: 0,
    accountId: key.accountId,
    keyId: key.id,
    payload: {
      account: key.accountName,
      key_id: key.id,
      key_name: key.name,
      expires_at: iso(key.expiresAt!),
    },
    createdAt: now,
    status,
  };
}

const PERIOD_WORDS: Record<string, string> = {
  "5h": "5-hour",
  day: "daily",
  week: "weekly",
  month: "monthly",
  total: "lifetime",
};

/** One line for people (a chat message, the dashboard), from the event's own fields. */
export function messageOf(type: Alert["type"], p: Record<string, unknown>): string {
  const key = `Key ${p.key_name ?? p.key_id} (account ${p.account})`;
  switch (type) {
    case "budget.threshold": {
      const whose = p.owner === "key" ? key : `Account ${p.account}`;
      const resets = p.resets_at === null ? "it does not reset" : `it resets at ${p.resets_at}`;
      return `${whose}: ${
        PERIOD_WORDS[String(p.period)] ?? p.period
      } budget at ${p.threshold_percent}%` +
        ` (${p.spent_usd} of ${p.limit_usd} USD spent${
          p.refused ? "; a call it could not cover was refused" : ""
        }); ${resets}.`;
    }
    case "balance.low":
      return `Account ${p.account}: balance ${p.balance_usd} USD, below ${p.threshold_usd} USD.`;
    case "key.expiring":
      return `${key} expires at ${p.expires_at}.`;
  }
}

/** The event of an alert: `id`, `type`, `created_at`, its own fields, then a `message`. */
export function eventOf(alert: Alert): Record<string, unknown> {
  return {
    id: alertId(alert.id),
    type: alert.type,
    created_at: iso(alert.createdAt),
    ...alert.payload,
    message: messageOf(alert.type, alert.payload),
  };
}

/** The event as it is POSTed: the same bytes on every attempt. */
export function eventBody(alert: Alert): string {
  return JSON.stringify(eventOf(alert));
}
