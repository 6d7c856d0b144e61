/**
 * The admin API under `/admin/api/` (the admin token, see `auth/admin.ts`): the CLI's key and
 * account operations through the same code (`billing/accounts.ts`), an account's usage by day, unit
 * and model, and the ledger, newest first, a page at a time. Errors are JSON (OpenAI's shape); the
 * secret of a new key is in the answer that creates it and nowhere else.
 */
import type * as v from "valibot";
import type { Handler, RequestContext } from "../context.ts";
import { requireAdmin } from "../auth/admin.ts";
import { readJsonObject } from "../http/body.ts";
import { GatewayError } from "../http/errors.ts";
import { jsonResponse } from "../http/json.ts";
import { validate } from "../http/validate.ts";
import { amountFields } from "../money.ts";
import { byDayFields, byModelFields, byUnitFields } from "../billing/spend_report.ts";
import {
  createKey,
  creditAccount,
  rotateKey,
  updateAccount,
  updateKey,
} from "../billing/accounts.ts";
import { accountJson, keyJson } from "../billing/accounts_json.ts";
import { OperatorError, type Settings } from "../billing/key_settings.ts";
import { budgetJson } from "../billing/spend_report.ts";
import { cacheReport, cacheReportByKey, entryCacheJson } from "../billing/cache_report.ts";
import { budgetWindows } from "../billing/windows.ts";
import { sumTotals } from "../store/amounts.ts";
import type { Account, KeyRecord, LedgerEntry } from "../store/store.ts";
import {
  AccountChange,
  Credit,
  DEFAULT_DAYS,
  DEFAULT_PAGE,
  KeyChange,
  MAX_DAYS,
  MAX_PAGE,
  NewAccount,
  NewKey,
  Rotation,
} from "./admin_bodies.ts";
import { countParam, daysSince } from "./query.ts";

/** The API's settings as the CLI's (`Settings`): field by field, absent stays absent. */
function settingsOf(body: Partial<v.InferOutput<typeof KeyChange>>): Settings {
  const s: Settings = {};
  if (body.name !== undefined) s.name = body.name;
  if (body.metadata !== undefined) s.metadata = body.metadata;
  if (body.expires_in !== undefined) s.expires = body.expires_in;
  if (body.expires_at !== undefined) s.expires = body.expires_at;
  if (body.budgets !== undefined) s.budgets = body.budgets?.length ? body.budgets : null;
  if (body.models !== undefined) s.models = body.models;
  if (body.deny_models !== undefined) s.denyModels = body.deny_models;
  if (body.tpm !== undefined) s.tpm = body.tpm || null;
  if (body.max_concurrent !== undefined) s.maxConcurrent = body.max_concurrent || null;
  if (body.ips !== undefined) s.ips = body.ips;
  if (body.rpm !== undefined) s.rpm = body.rpm;
  if (body.disabled !== undefined) s.disabled = body.disabled;
  if (body.strict !== undefined) s.strict = body.strict;
  return s;
}

/** Runs an operator's operation (see `billing/accounts.ts`); its mistakes become 400s. */
async function operation<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof OperatorError) throw new GatewayError(400, error.message);
    throw error;
  }
}

/** The admin's handler: the token is checked first, for every admin route. */
function admin(handle: Handler): Handler {
  return (ctx) => {
    requireAdmin(ctx.req, ctx.services.config);
    return handle(ctx);
  };
}

async function accountNamed(ctx: RequestContext, name: string): Promise<Account> {
  const account = await ctx.services.store.account(name);
  if (!account) throw new GatewayError(404, `No account named "${name}".`);
  return account;
}

function entryJson(e: LedgerEntry) {
  return {
    id: e.id,
    kind: e.kind,
    status: e.status,
    account: e.account,
    request_id: e.requestId,
    key_id: e.keyId,
    endpoint: e.endpoint,
    model: e.model,
    provider: e.provider,
    upstream_model: e.upstreamModel,
    ...amountFields("amount", e.amount),
    units: e.units.map((u) => ({
      unit: u.unit,
      quantity: u.quantity,
      ...amountFields("amount", u.amount),
    })),
    cache: e.cache && entryCacheJson(e.cache),
    estimated: e.estimated,
    note: e.note,
    created_at: new Date(e.createdAt).toISOString(),
    settled_at: e.settledAt === null ? null : new Date(e.settledAt).toISOString(),
  };
}

/** `GET /admin/api/keys[?account=NAME]`: every key (never a secret or hash). */
export const listKeys: Handler = admin(async (ctx) => {
  const account = ctx.url.searchParams.get("account");
  const keys = (await ctx.services.store.listKeys()).filter((k) =>
    !account || k.accountName === account
  );
  return jsonResponse({ object: "list", data: keys.map((k) => keyJson(k)) });
});

/**
 * `POST /admin/api/keys` `{account, credit_usd?, name?, budgets?, models?, …}`: the secret is shown
 * this once.
 */
export const createKeyRoute: Handler = admin(async (ctx) => {
  const body = validate(NewKey, (await readJsonObject(ctx.req, ctx.services.config)).value);
  const created = await operation(() =>
    createKey(ctx.services.store, {
      ...settingsOf(body),
      account: body.account,
      creditUsd: body.credit_usd,
    })
  );
  return jsonResponse({ object: "key", ...created }, 201, { "cache-control": "no-store" });
});

/** The key `:id` (404 when none has it). */
async function keyNamed(ctx: RequestContext, id: string): Promise<KeyRecord> {
  const key = (await ctx.services.store.listKeys()).find((k) => k.id === id);
  if (!key) throw new GatewayError(404, `No key with id "${id}".`);
  return key;
}

/** A key as the admin API shows it, with its budgets and its account's as they stand now. */
async function keyView(ctx: RequestContext, key: KeyRecord) {
  const now = Date.now();
  const windows = budgetWindows(now, ctx.services.config.budgetTimeZone);
  const budgets = await ctx.services.store.budgets(key.id, key.accountId, windows);
  return { object: "key", ...keyJson(key, now), budget_states: budgets.map(budgetJson) };
}

/** `GET /admin/api/keys/:id`: one key, with where its budgets stand. */
export const getKey: Handler = admin(async (ctx) =>
  jsonResponse(await keyView(ctx, await keyNamed(ctx, ctx.params.id)))
);

/** `PATCH /admin/api/keys/:id`: changes a key's settings; `disabled` disables or enables it. */
export const updateKeyRoute: Handler = admin(async (ctx) => {
  await keyNamed(ctx, ctx.params.id);
  const body = validate(KeyChange, (await readJsonObject(ctx.req, ctx.services.config)).value);
  const key = await operation(() => updateKey(ctx.services.store, ctx.params.id, settingsOf(body)));
  return jsonResponse(await keyView(ctx, key));
});

/**
 * `POST /admin/api/keys/:id/rotate` `{grace_seconds?}`: a new secret for the same key (shown this
 * once); the old one keeps working for the grace period.
 */
export const rotateKeyRoute: Handler = admin(async (ctx) => {
  await keyNamed(ctx, ctx.params.id);
  const body = validate(Rotation, (await readJsonObject(ctx.req, ctx.services.config)).value);
  const rotated = await operation(() =>
    rotateKey(ctx.services.store, ctx.params.id, (body.grace_seconds ?? 0) * 1000)
  );
  return jsonResponse({ object: "key", ...rotated }, 200, { "cache-control": "no-store" });
});

/** `PATCH /admin/api/accounts/:name` `{budgets?, models?, deny_models?}`: an account's limits. */
export const updateAccountRoute: Handler = admin(async (ctx) => {
  await accountNamed(ctx, ctx.params.name);
  const body = validate(AccountChange, (await readJsonObject(ctx.req, ctx.services.config)).value);
  const account = await operation(() =>
    updateAccount(ctx.services.store, ctx.params.name, settingsOf(body))
  );
  const windows = budgetWindows(Date.now(), ctx.services.config.budgetTimeZone);
  const budgets = await ctx.services.store.budgets(null, account.id, windows);
  return jsonResponse({ ...accountJson(account), budget_states: budgets.map(budgetJson) });
});

/** `DELETE /admin/api/keys/:id`: revokes an active key (404 when none has the id). */
export const revokeKey: Handler = admin(async (ctx) => {
  const id = ctx.params.id;
  if (!(await ctx.services.store.revokeKey(id))) {
    throw new GatewayError(404, `No active key with id "${id}".`);
  }
  return jsonResponse({ object: "key", id, revoked: true });
});

/** `GET /admin/api/accounts`: every account with its balance, spend and held funds. */
export const listAccounts: Handler = admin(async (ctx) =>
  jsonResponse({
    object: "list",
    data: (await ctx.services.store.listAccounts()).map((a) => ({
      ...accountJson(a),
      ...amountFields("held", a.held),
    })),
  })
);

/** `POST /admin/api/accounts` `{name}`: creates the account (200 with it when it exists). */
export const createAccount: Handler = admin(async (ctx) => {
  const { name } = validate(NewAccount, (await readJsonObject(ctx.req, ctx.services.config)).value);
  const existed = (await ctx.services.store.account(name)) !== undefined;
  const account = await ctx.services.store.ensureAccount(name);
  return jsonResponse(accountJson(account), existed ? 200 : 201);
});

/** `POST /admin/api/accounts/:name/credit` `{usd}`: adds (negative: removes) balance. */
export const creditAccountRoute: Handler = admin(async (ctx) => {
  await accountNamed(ctx, ctx.params.name);
  const { usd } = validate(Credit, (await readJsonObject(ctx.req, ctx.services.config)).value);
  const account = await operation(() => creditAccount(ctx.services.store, ctx.params.name, usd));
  return jsonResponse(accountJson(account));
});

/**
 * `GET /admin/api/accounts/:name/usage[?days=30]`: spend by day, unit and model; the prompt cache's
 * figures of the window's days, by model, day and key.
 */
export const accountUsage: Handler = admin(async (ctx) => {
  const account = await accountNamed(ctx, ctx.params.name);
  const days = countParam(ctx.url, "days", DEFAULT_DAYS, MAX_DAYS);
  const { store } = ctx.services;
  const since = daysSince(days);
  const [summary, cache] = await Promise.all([
    store.usage(account.id),
    store.cacheUsage(since, account.id),
  ]);
  return jsonResponse({
    object: "usage",
    account: account.name,
    ...amountFields("balance", account.balance),
    ...amountFields("spent", account.spent),
    ...amountFields("held", account.held),
    requests: summary.requests,
    by_day: byDayFields(await store.usageByDay(account.id, since)),
    by_unit: byUnitFields(summary.byUnit),
    by_model: byModelFields(summary.byModel),
    cache: { ...cacheReport(cache), by_key: cacheReportByKey(cache) },
  });
});

/**
 * `GET /admin/api/usage[?days=30]`: every account's settled spend by UTC day (days without spend
 * are absent), from `since` (the first day's date) on, with the window's totals; the prompt
 * cache's figures of the same days, by model and day.
 */
export const totalUsage: Handler = admin(async (ctx) => {
  const days = countParam(ctx.url, "days", DEFAULT_DAYS, MAX_DAYS);
  const since = daysSince(days);
  const { store } = ctx.services;
  const [byDay, cache] = await Promise.all([
    store.totalUsageByDay(since),
    store.cacheUsage(since),
  ]);
  return jsonResponse({
    object: "usage",
    days,
    since: new Date(since).toISOString().slice(0, 10),
    requests: byDay.reduce((n, d) => n + d.requests, 0),
    ...amountFields("spent", sumTotals(byDay.map((d) => d.amount))),
    by_day: byDayFields(byDay),
    cache: cacheReport(cache),
  });
});

/**
 * `GET /admin/api/ledger[?account=NAME][&limit=N][&before=ID]`: entries newest first; `next`
 * is the `before` of the next page (null on the last).
 */
export const ledger: Handler = admin(async (ctx) => {
  const name = ctx.url.searchParams.get("account");
  const account = name === null ? undefined : await accountNamed(ctx, name);
  const limit = countParam(ctx.url, "limit", DEFAULT_PAGE, MAX_PAGE);
  const beforeText = ctx.url.searchParams.get("before");
  const before = beforeText === null
    ? undefined
    : countParam(ctx.url, "before", 0, Number.MAX_SAFE_INTEGER);
  // One more than asked tells whether there is a next page.
  const entries = await ctx.services.store.ledgerPage({
    accountId: account?.id,
    before,
    limit: limit + 1,
  });
  const page = entries.slice(0, limit);
  return jsonResponse({
    object: "list",
    data: page.map(entryJson),
    next: entries.length > limit ? page[page.length - 1].id : null,
  });
});
