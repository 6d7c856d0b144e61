/**
 * `GET /admin/api/alerts[?limit=N][&before=ID][&account=NAME]` (the admin token): alerts newest
 * first, a page at a time, each as its event is (or would be) delivered — `id`, `type`,
 * `created_at`, `account`, its own fields, `message` — with its delivery state beside; `next` is
 * the `before` of the next page (null on the last).
 */
import type { Handler } from "../context.ts";
import { requireAdmin } from "../auth/admin.ts";
import { GatewayError } from "../http/errors.ts";
import { jsonResponse } from "../http/json.ts";
import { alertId, eventOf, parseAlertId } from "../alerts/events.ts";
import type { Alert } from "../store/store.ts";

/** Alerts per page at most, and by default. */
const MAX_PAGE = 500;
const DEFAULT_PAGE = 100;

const iso = (ms: number | null) => ms === null ? null : new Date(ms).toISOString();

/** An alert as the admin API shows it: its event's fields, then its delivery state. */
export function alertJson(a: Alert) {
  return {
    ...eventOf(a),
    key_id: a.keyId,
    status: a.status,
    attempts: a.attempts,
    next_attempt_at: iso(a.nextAttemptAt),
    last_attempt_at: iso(a.lastAttemptAt),
    last_error: a.lastError,
    delivered_at: iso(a.deliveredAt),
  };
}

function badParam(name: string, rule: string): GatewayError {
  return new GatewayError(400, `Invalid '${name}': ${rule}.`, { param: name });
}

/** `GET /admin/api/alerts`: see the module's note. */
export const listAlerts: Handler = async (ctx) => {
  requireAdmin(ctx.req, ctx.services.config);
  const query = ctx.url.searchParams;
  const limitText = query.get("limit");
  const limit = limitText === null ? DEFAULT_PAGE : Number(limitText);
  if (limitText !== null && (!/^\d+$/.test(limitText) || limit < 1 || limit > MAX_PAGE)) {
    throw badParam("limit", `must be an integer from 1 to ${MAX_PAGE}`);
  }
  const beforeText = query.get("before");
  const before = beforeText === null ? undefined : parseAlertId(beforeText);
  if (before === null) throw badParam("before", "must be an alert id such as alert_42");
  const name = query.get("account");
  let accountId: number | undefined;
  if (name !== null) {
    const account = await ctx.services.store.account(name);
    if (!account) throw new GatewayError(404, `No account named "${name}".`);
    accountId = account.id;
  }
  // One more than asked tells whether there is a next page.
  const alerts = await ctx.services.store.listAlerts({ limit: limit + 1, before, accountId });
  const page = alerts.slice(0, limit);
  return jsonResponse({
    object: "list",
    data: page.map(alertJson),
    next: alerts.length > limit ? alertId(page[page.length - 1].id) : null,
  });
};
