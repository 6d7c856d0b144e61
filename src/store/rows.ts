/**
 * Rows of either store's tables as the store interface's records, and the columns each reader
 * reads (the same names in SQLite and PostgreSQL).
 */
import type {
  Account,
  Alert,
  AlertStatus,
  AlertType,
  BudgetPeriod,
  CacheCharge,
  CacheUsageRow,
  Charge,
  DayUsage,
  KeyRecord,
  LedgerEntry,
  LowBalance,
  SpentBudget,
  StoredResponse,
  ThreadTurn,
  UpstreamObject,
  UsageSummary,
  VideoJob,
  VideoJobStatus,
} from "./store.ts";
import { toTotal } from "./amounts.ts";
import { accountLimitsOf, type BudgetRow, keyLimitsOf, metadataOf } from "./limits.ts";

/** A row as a driver gives it: column name to value. */
export type Row = Record<string, unknown>;

/** What `toAccount` reads, from `accounts`. */
export const ACCOUNT_COLUMNS = "id, name, balance, spent, held, created_at, limits";
/** What `toKey` reads, from `keys k` joined with their `accounts a`. */
export const KEY_COLUMNS = `k.id, k.account_id, a.name AS account_name, k.hash, k.prefix, k.rpm,
  k.created_at, k.revoked_at, k.name, k.metadata, k.expires_at, k.disabled_at, k.last_used_at,
  k.limits, a.limits AS account_limits, k.previous_hash, k.previous_until, k.strict`;
/** What `toBudgetRow` reads, from `budgets`. */
export const BUDGET_COLUMNS = "owner, period, amount, held, window_start, window_spent";
/** What `toLedgerEntry` reads, from `ledger l` joined with its `accounts a`. */
export const LEDGER_COLUMNS = `l.id, l.kind, l.status, a.name AS account, l.request_id, l.key_id,
  l.endpoint, l.model, l.provider, l.upstream_model, l.amount, l.units, l.estimated, l.note,
  l.created_at, l.settled_at, l.input_tokens, l.cached_tokens, l.cache_write_tokens,
  l.cache_write_1h_tokens, l.cache_saved, l.cache_miss, l.cache_miss_tokens, l.cache_lost`;
/** The sums `toCacheUsage` reads, of the ledger rows `l` of a group. */
export const CACHE_SUMS = `count(*) AS requests, sum(l.input_tokens) AS input_tokens,
  sum(l.cached_tokens) AS cached_tokens, sum(l.cache_write_tokens) AS cache_write_tokens,
  sum(l.cache_write_1h_tokens) AS cache_write_1h_tokens, sum(l.cache_saved) AS saved,
  sum(l.cache_miss_tokens) AS miss_tokens, sum(l.cache_lost) AS lost`;

/**
 * The cache columns a settlement writes, in the order `input_tokens, cached_tokens,
 * cache_write_tokens, cache_write_1h_tokens, cache_saved, cache_miss, cache_miss_tokens,
 * cache_lost` (a charge without its cache figures writes zeros).
 */
export function cacheValues(charge: Charge): [
  number,
  number,
  number,
  number,
  number,
  string | null,
  number,
  number,
] {
  const c = charge.cache;
  return [
    c?.inputTokens ?? 0,
    c?.cachedTokens ?? 0,
    c?.cacheWriteTokens ?? 0,
    c?.cacheWrite1hTokens ?? 0,
    c?.saved ?? 0,
    c?.miss?.cause ?? null,
    c?.miss?.tokens ?? 0,
    c?.miss?.lost ?? 0,
  ];
}
/** What `toAlert` reads, from `alerts`. */
export const ALERT_COLUMNS = `id, type, owner, period, window_start, threshold, account_id, key_id,
  payload, status, attempts, next_attempt_at, last_attempt_at, last_error, created_at,
  delivered_at`;

/** A nullable text column. */
export function text(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

function num(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}

export function toAccount(row: Row): Account {
  return {
    id: Number(row.id),
    name: String(row.name),
    balance: toTotal(row.balance),
    spent: toTotal(row.spent),
    held: toTotal(row.held),
    createdAt: Number(row.created_at),
    limits: accountLimitsOf(row.limits),
  };
}

export function toKey(row: Row): KeyRecord {
  return {
    id: String(row.id),
    accountId: Number(row.account_id),
    accountName: String(row.account_name),
    hash: new Uint8Array(row.hash as Uint8Array),
    prefix: String(row.prefix),
    rpm: num(row.rpm),
    createdAt: Number(row.created_at),
    revokedAt: num(row.revoked_at),
    name: text(row.name),
    metadata: metadataOf(row.metadata),
    expiresAt: num(row.expires_at),
    disabledAt: num(row.disabled_at),
    strict: row.strict === true || Number(row.strict) === 1,
    lastUsedAt: num(row.last_used_at),
    limits: keyLimitsOf(row.limits),
    accountLimits: accountLimitsOf(row.account_limits),
    previousHash: row.previous_hash ? new Uint8Array(row.previous_hash as Uint8Array) : null,
    previousUntil: num(row.previous_until),
  };
}

/** A budget row (see `limits.ts`). */
export function toBudgetRow(row: Row): BudgetRow {
  return {
    owner: String(row.owner),
    period: String(row.period) as BudgetPeriod,
    amount: Number(row.amount),
    held: Number(row.held),
    windowStart: Number(row.window_start),
    windowSpent: Number(row.window_spent),
  };
}

export function toStoredResponse(row: Row): StoredResponse {
  return {
    id: String(row.id),
    accountId: Number(row.account_id),
    previousId: text(row.previous_id),
    items: String(row.items),
    contextTokens: Number(row.context_tokens),
    createdAt: Number(row.created_at),
  };
}

export function toThreadTurn(row: Row): ThreadTurn {
  return {
    id: String(row.id),
    accountId: Number(row.account_id),
    previousId: text(row.previous_id),
    turn: String(row.turn),
    createdAt: Number(row.created_at),
  };
}

/** A group of `Store.cacheUsage` (its sums as `CACHE_SUMS` names them). */
export function toCacheUsage(row: Row): CacheUsageRow {
  return {
    day: String(row.day),
    keyId: text(row.key_id),
    model: String(row.model ?? ""),
    missCause: text(row.cache_miss),
    requests: Number(row.requests),
    inputTokens: toTotal(row.input_tokens),
    cachedTokens: toTotal(row.cached_tokens),
    cacheWriteTokens: toTotal(row.cache_write_tokens),
    cacheWrite1hTokens: toTotal(row.cache_write_1h_tokens),
    saved: toTotal(row.saved),
    missTokens: toTotal(row.miss_tokens),
    lost: toTotal(row.lost),
  };
}

/** A ledger row's cache figures; null when it recorded no input tokens and no miss. */
function cacheOf(row: Row): CacheCharge | null {
  const cause = text(row.cache_miss);
  const inputTokens = Number(row.input_tokens ?? 0);
  if (!inputTokens && cause === null) return null;
  return {
    inputTokens,
    cachedTokens: Number(row.cached_tokens),
    cacheWriteTokens: Number(row.cache_write_tokens),
    cacheWrite1hTokens: Number(row.cache_write_1h_tokens),
    saved: Number(row.cache_saved),
    miss: cause === null
      ? null
      : { cause, tokens: Number(row.cache_miss_tokens), lost: Number(row.cache_lost) },
  };
}

export function toDay(row: Row): DayUsage {
  return { day: String(row.day), requests: Number(row.requests), amount: toTotal(row.amount) };
}

export function toVideoJob(row: Row): VideoJob {
  return {
    id: String(row.id),
    upstreamId: String(row.upstream_id),
    accountId: Number(row.account_id),
    keyId: String(row.key_id),
    ledgerId: Number(row.ledger_id),
    model: String(row.model),
    provider: String(row.provider),
    upstreamKey: text(row.upstream_key),
    rate: Number(row.rate),
    heldSeconds: Number(row.held_seconds),
    status: String(row.status) as VideoJobStatus,
    billedSeconds: num(row.billed_seconds),
    amount: num(row.amount),
    result: text(row.result),
    createdAt: Number(row.created_at),
    finishedAt: num(row.finished_at),
  };
}

export function toUpstreamObject(row: Row): UpstreamObject {
  return {
    id: String(row.id),
    accountId: Number(row.account_id),
    kind: String(row.kind) as UpstreamObject["kind"],
    contextTokens: Number(row.context_tokens),
    provider: text(row.provider),
  };
}

/** An alert row (its payload as the driver gives it: JSON text, or parsed `jsonb`). */
export function toAlert(row: Row): Alert {
  const payload = json(row.payload);
  return {
    id: Number(row.id),
    type: String(row.type) as AlertType,
    owner: String(row.owner),
    period: String(row.period),
    windowStart: Number(row.window_start),
    threshold: Number(row.threshold),
    accountId: Number(row.account_id),
    keyId: text(row.key_id),
    payload: payload as Record<string, unknown>,
    createdAt: Number(row.created_at),
    status: String(row.status) as AlertStatus,
    attempts: Number(row.attempts),
    nextAttemptAt: num(row.next_attempt_at),
    lastAttemptAt: num(row.last_attempt_at),
    lastError: text(row.last_error),
    deliveredAt: num(row.delivered_at),
  };
}

/** A budget row with its key's and account's names (see `Store.spentBudgets`). */
export function toSpentBudget(row: Row): SpentBudget {
  const owner = String(row.owner);
  return {
    owner: owner.startsWith("key:") ? "key" : "account",
    keyId: text(row.key_id),
    keyName: text(row.key_name),
    accountId: Number(row.account_id),
    accountName: String(row.account_name),
    period: String(row.period) as BudgetPeriod,
    amount: Number(row.amount),
    spent: Number(row.window_spent),
    held: Number(row.held),
    windowStart: Number(row.window_start),
  };
}

/** An account below a balance (see `Store.lowBalances`). */
export function toLowBalance(row: Row): LowBalance {
  return {
    accountId: Number(row.id),
    accountName: String(row.name),
    balance: Number(row.balance),
    held: Number(row.held),
    since: Number(row.since),
  };
}

/** A JSON column as the driver gives it: text (SQLite), or parsed (`jsonb`). */
function json(value: unknown): unknown {
  return typeof value === "string" ? JSON.parse(value) : value;
}

/** A ledger entry (`estimated`: SQLite's 0 or 1, PostgreSQL's boolean). */
export function toLedgerEntry(row: Row): LedgerEntry {
  return {
    id: Number(row.id),
    kind: String(row.kind) as LedgerEntry["kind"],
    status: String(row.status) as LedgerEntry["status"],
    account: String(row.account),
    requestId: text(row.request_id),
    keyId: text(row.key_id),
    endpoint: text(row.endpoint),
    model: text(row.model),
    provider: text(row.provider),
    upstreamModel: text(row.upstream_model),
    amount: toTotal(row.amount),
    units: json(row.units) as LedgerEntry["units"],
    cache: cacheOf(row),
    estimated: Number(row.estimated) === 1,
    note: text(row.note),
    createdAt: Number(row.created_at),
    settledAt: num(row.settled_at),
  };
}

/**
 * An account's usage from its rows: the account, its settled calls, their sums by unit and by
 * model, and what its held calls' estimates hold by unit. Built from entries: a client-chosen
 * name (`__proto__`) stays an ordinary key.
 */
export function toUsage(
  account: Row,
  requests: Row,
  units: readonly Row[],
  models: readonly Row[],
  held: readonly Row[],
): UsageSummary {
  const byUnit = (rows: readonly Row[]) =>
    Object.fromEntries(
      rows.map((row) => [
        String(row.unit),
        { quantity: toTotal(row.quantity), amount: toTotal(row.amount) },
      ]),
    );
  return {
    account: toAccount(account),
    requests: Number(requests.n),
    byUnit: byUnit(units),
    byModel: Object.fromEntries(
      models.map((row) => [
        String(row.model),
        { requests: Number(row.requests), amount: toTotal(row.amount) },
      ]),
    ),
    heldByUnit: byUnit(held),
  };
}
