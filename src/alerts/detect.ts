/**
 * Deciding which alerts are due and raising them. A budget is judged in its row's own window — the
 * window its last settlement counted in, whatever the clock says now (so a settlement at a test's
 * instant is judged at that instant) — and a threshold is reached when the window's settled spend
 * is at least that share of the budget; a budget has also reached 100% when it refused a call that
 * would not fit even with no other call in flight. A balance is low below `alerts.balanceBelowUsd`, once per episode (since the account's last credit); a key
 * is about to expire within `alerts.expiringWithinHours`, once per expiry instant. The store's
 * insert decides that each is raised once; each new one is logged.
 */
import type { AlertSettings } from "../config/load.ts";
import { type BudgetWindow, windowOf } from "../billing/windows.ts";
import type { SpendNote } from "../billing/spend_notes.ts";
import { log } from "../log.ts";
import type { NewAlert, SpentBudget, Store } from "../store/store.ts";
import { alertId, balanceAlert, budgetAlert, expiryAlert } from "./events.ts";

/**
 * A window that ended longer ago than this is past alerting about: an alert is raised late only by
 * a check that was late (a restart, a store that was away), not for windows long gone.
 */
const STALE_MS = 3_600_000;

/** What the checks read: the settings, the budgets' time zone, and now. */
export interface Check {
  settings: AlertSettings;
  zone: string;
  now: number;
}

/** How a new alert is to be delivered: by the webhook, or not at all. */
function statusOf(settings: AlertSettings): NewAlert["status"] {
  return settings.webhookUrl ? "pending" : "unsent";
}

/** The window a budget row's spend counted in, or null when it is past alerting about. */
function windowOfRow(b: SpentBudget, check: Check): BudgetWindow | null {
  let window: BudgetWindow;
  try {
    window = windowOf(b.period, b.windowStart, check.zone);
  } catch {
    return null; // an instant out of range: nothing to say about it
  }
  return window.end + STALE_MS < check.now ? null : window;
}

/** The thresholds `b` has reached in its row's window. */
export function budgetAlerts(b: SpentBudget, check: Check): NewAlert[] {
  if (b.spent <= 0) return [];
  const window = windowOfRow(b, check);
  if (!window) return [];
  // In bigints: a large budget times 100 passes 2^53.
  const reached = (percent: number) => BigInt(b.spent) * 100n >= BigInt(b.amount) * BigInt(percent);
  return check.settings.budgetThresholds.filter(reached).map((percent) =>
    budgetAlert(b, percent, window, b.spent, check.now, statusOf(check.settings))
  );
}

/**
 * The 100% alert of the budget that refused a call (when 100 is a threshold), if that call would
 * not fit even with no other call in flight: what the window has settled leaves no more than the
 * room the call was refused in (`amount − spent ≤ room`). A call refused because other calls held
 * the budget then says nothing yet: they may settle for much less than they held.
 */
export function refusalAlert(
  rows: SpentBudget[],
  note: SpendNote,
  check: Check,
): NewAlert | null {
  const refused = note.refused;
  if (!refused || !check.settings.budgetThresholds.includes(100)) return null;
  const b = rows.find((row) =>
    row.period === refused.period && row.owner === refused.owner &&
    (row.owner === "key" ? row.keyId === note.keyId : row.accountId === note.accountId)
  );
  if (!b) return null;
  let window: BudgetWindow;
  try {
    window = windowOf(b.period, refused.at, check.zone);
  } catch {
    return null;
  }
  const spent = b.windowStart === window.start ? b.spent : 0;
  if (b.amount - spent > refused.room) return null;
  return budgetAlert(b, 100, window, spent, check.now, statusOf(check.settings), true);
}

/** What an alert is about, as one string (the store's unique key). */
const aboutOf = (a: NewAlert) => `${a.type}|${a.owner}|${a.period}|${a.windowStart}|${a.threshold}`;

/**
 * Alerts this process knows were raised (by it or another), so that a check does not ask the store
 * again about each of them; bounded (emptied when full: the store still decides).
 */
export class Raised {
  readonly #known = new Set<string>();
  constructor(readonly max = 100_000) {}

  has(alert: NewAlert): boolean {
    return this.#known.has(aboutOf(alert));
  }

  add(alert: NewAlert): void {
    if (this.#known.size >= this.max) this.#known.clear();
    this.#known.add(aboutOf(alert));
  }
}

/** Raises each alert (once: the store decides); logs and counts the new ones. */
export async function raise(store: Store, alerts: NewAlert[], known: Raised): Promise<number> {
  let raised = 0;
  for (const alert of alerts) {
    if (known.has(alert)) continue;
    const id = await store.raiseAlert(alert);
    known.add(alert);
    if (id === null) continue;
    raised++;
    const p = alert.payload;
    log("info", "alert raised", {
      alert_id: alertId(id),
      type: alert.type,
      account: p.account,
      key_id: alert.keyId ?? undefined,
      period: alert.period || undefined,
      threshold_percent: p.threshold_percent,
      threshold_usd: p.threshold_usd,
      expires_at: p.expires_at,
      delivery: alert.status,
    });
  }
  return raised;
}

/**
 * The alerts of the keys and accounts that just spent or were refused (their budgets, their
 * accounts' balances); resolves to how many were new.
 */
export async function checkNotes(
  store: Store,
  notes: SpendNote[],
  check: Check,
  known: Raised,
): Promise<number> {
  const { settings } = check;
  const keyIds = [...new Set(notes.map((n) => n.keyId))];
  const accountIds = [...new Set(notes.map((n) => n.accountId))];
  const alerts: NewAlert[] = [];
  if (settings.budgetThresholds.length) {
    const rows = await store.spentBudgets(0, { keyIds, accountIds });
    for (const b of rows) alerts.push(...budgetAlerts(b, check));
    for (const note of notes) {
      const alert = refusalAlert(rows, note, check);
      if (alert) alerts.push(alert);
    }
  }
  if (settings.balanceBelow !== null) {
    for (const low of await store.lowBalances(settings.balanceBelow, accountIds)) {
      alerts.push(balanceAlert(low, settings.balanceBelow, check.now, statusOf(settings)));
    }
  }
  return await raise(store, alerts, known);
}

/**
 * Every alert that is due: budgets at or past the lowest threshold, balances below the amount,
 * keys about to expire; resolves to how many were new.
 */
export async function sweep(store: Store, check: Check, known: Raised): Promise<number> {
  const { settings, now } = check;
  const alerts: NewAlert[] = [];
  if (settings.budgetThresholds.length) {
    for (const b of await store.spentBudgets(settings.budgetThresholds[0])) {
      alerts.push(...budgetAlerts(b, check));
    }
  }
  if (settings.balanceBelow !== null) {
    for (const low of await store.lowBalances(settings.balanceBelow)) {
      alerts.push(balanceAlert(low, settings.balanceBelow, now, statusOf(settings)));
    }
  }
  if (settings.expiringWithinMs > 0) {
    for (const key of await store.expiringKeys(now, now + settings.expiringWithinMs)) {
      alerts.push(expiryAlert(key, now, statusOf(settings)));
    }
  }
  return await raise(store, alerts, known);
}
