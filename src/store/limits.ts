/**
 * The limits of keys and accounts as both stores keep them (pure): the JSON of a key's or an
 * account's `limits` column, and the decision a limited hold is taken on — the same in SQLite and
 * PostgreSQL, so both are held to one rule. A budget's state is one row per (owner, period):
 * what calls hold against it, and what its current window has settled (`window_start`,
 * `window_spent`: a settlement in a later window starts that window's count afresh, so a window
 * resets by itself — no job, no timer). A hold's ledger entry remembers what it counted
 * (`HoldMark`), so its settlement gives back exactly that. A key's settings after a change are
 * worked out here too (`patchedKey`), for both stores to write.
 */
import type {
  AccountLimits,
  Budget,
  BudgetPeriod,
  BudgetState,
  BudgetWindows,
  HoldLimits,
  KeyLimits,
  KeyPatch,
  KeyRecord,
  LimitRefusal,
  ModelAccess,
} from "./store.ts";
import { BUDGET_PERIODS } from "./store.ts";
import { toTotal } from "./amounts.ts";

type Json = Record<string, unknown>;

/** A budget row: whose (`key:<id>`, `account:<id>`), its period and limit, and its counts. */
export interface BudgetRow {
  owner: string;
  period: BudgetPeriod;
  amount: number;
  held: number;
  windowStart: number;
  windowSpent: number;
}

/** What a limited hold counted, kept with its ledger entry (JSON). */
export interface HoldMark {
  /** The budget rows it holds against: `<owner>|<period>`. */
  b: string[];
  /** 1 when it counts among its key's calls in flight. */
  c?: 1;
  /** Tokens it holds against its key's tokens per minute, in minute `m`. */
  t?: number;
  m?: number;
}

/** The budget row owner of a key or an account. */
export const keyOwner = (id: string) => `key:${id}`;
export const accountOwner = (id: number) => `account:${id}`;

const strings = (value: unknown): string[] | undefined =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : undefined;

const positive = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : undefined;

function budgetsOf(value: unknown): Budget[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const out: Budget[] = [];
  for (const item of value) {
    const b = item as Json;
    if (BUDGET_PERIODS.includes(b?.period as BudgetPeriod) && positive(b.amount) !== undefined) {
      out.push({ period: b.period as BudgetPeriod, amount: b.amount as number });
    }
  }
  return out.length ? out : undefined;
}

function accessOf(value: unknown): ModelAccess | undefined {
  const v = (value ?? {}) as Json;
  const allow = strings(v.allow);
  const deny = strings(v.deny);
  return allow || deny ? { ...(allow ? { allow } : {}), ...(deny ? { deny } : {}) } : undefined;
}

/** An account's limits from its column (null or unreadable: none). */
export function accountLimitsOf(text: unknown): AccountLimits {
  const v = parse(text);
  const budgets = budgetsOf(v.budgets);
  const models = accessOf(v.models);
  return { ...(budgets ? { budgets } : {}), ...(models ? { models } : {}) };
}

/** A key's limits from its column (null or unreadable: none). */
export function keyLimitsOf(text: unknown): KeyLimits {
  const v = parse(text);
  const tpm = positive(v.tpm);
  const maxConcurrent = positive(v.maxConcurrent);
  const ips = strings(v.ips);
  return {
    ...accountLimitsOf(v),
    ...(tpm ? { tpm } : {}),
    ...(maxConcurrent ? { maxConcurrent } : {}),
    ...(ips?.length ? { ips } : {}),
  };
}

function parse(text: unknown): Json {
  if (text && typeof text === "object") return text as Json;
  if (typeof text !== "string" || !text) return {};
  try {
    const value = JSON.parse(text);
    return value && typeof value === "object" ? value : {};
  } catch {
    return {};
  }
}

/** Limits as their column holds them (null when there are none). */
export function limitsText(limits: KeyLimits | AccountLimits): string | null {
  return Object.keys(limits).length ? JSON.stringify(limits) : null;
}

/** String pairs from the metadata column. */
export function metadataOf(text: unknown): Record<string, string> {
  const v = parse(text);
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(v)) if (typeof value === "string") out[key] = value;
  return out;
}

/** Whether a key (with its account) has limits that only a limited hold can keep. */
export function needsLimitedHold(key: KeyLimits, account: AccountLimits): boolean {
  return !!(key.budgets || account.budgets || key.tpm || key.maxConcurrent);
}

/** What a budget's current window has spent, at the instant of `windows`. */
export function spentNow(row: BudgetRow, windows: BudgetWindows): number {
  return row.windowStart === windows[row.period].start ? row.windowSpent : 0;
}

/** Budget rows in the order they are checked and shown: the key's, then the account's, shortest first. */
function byOrder(a: BudgetRow, b: BudgetRow): number {
  const order = (row: BudgetRow) =>
    (row.owner.startsWith("key:") ? 0 : 10) + BUDGET_PERIODS.indexOf(row.period);
  return order(a) - order(b);
}

/** The state of each budget row at the instant of `windows` (see `byOrder`). */
export function budgetStates(rows: BudgetRow[], windows: BudgetWindows): BudgetState[] {
  return [...rows].sort(byOrder).map((row) => ({
    owner: row.owner.startsWith("key:") ? "key" : "account",
    period: row.period,
    amount: row.amount,
    spent: spentNow(row, windows),
    held: row.held,
    windowStart: windows[row.period].start,
    resetsAt: windows[row.period].end,
  }));
}

/** A key's calls in flight and tokens this minute, as its row holds them. */
export interface KeyCounts {
  inFlight: number;
  tpmMinute: number;
  tpmTokens: number;
}

/** What a limited hold writes once it is allowed. */
export interface HoldPlan {
  mark: HoldMark;
  /** Each budget row after the hold: its window rolled to now, the hold added. */
  budgets: BudgetRow[];
  /** The key's counts after the hold. */
  counts: KeyCounts;
  /** The key's tokens this minute, when it has a limit (for the rate-limit headers). */
  tokens?: { limit: number; used: number; resetsAt: number };
}

/**
 * Decides a limited hold of `reserve` nanoUSD (pure): refused — naming the first limit it does
 * not fit in: the balance, a budget (key's before account's, shortest period first), the key's
 * calls in flight, its tokens per minute — or the writes that take it.
 */
export function planHold(
  reserve: number,
  available: number,
  key: KeyLimits,
  rows: BudgetRow[],
  counts: KeyCounts,
  at: HoldLimits,
): HoldPlan | LimitRefusal {
  if (reserve > 0 && available < reserve) return { refused: "balance", needed: reserve };
  const budgets: BudgetRow[] = [];
  for (const row of [...rows].sort(byOrder)) {
    const window = at.windows[row.period];
    const spent = spentNow(row, at.windows);
    if (spent + row.held + reserve > row.amount) {
      return {
        refused: "budget",
        owner: row.owner.startsWith("key:") ? "key" : "account",
        period: row.period,
        amount: row.amount,
        room: Math.max(0, row.amount - spent - row.held),
        resetsAt: window.end,
      };
    }
    budgets.push({
      ...row,
      held: row.held + reserve,
      windowStart: window.start,
      windowSpent: spent,
    });
  }
  if (key.maxConcurrent && counts.inFlight >= key.maxConcurrent) {
    return { refused: "concurrency", limit: key.maxConcurrent };
  }
  const used = counts.tpmMinute === at.minute ? counts.tpmTokens : 0;
  const resetsAt = at.minute + 60_000;
  if (key.tpm && used + at.tokens > key.tpm) {
    return { refused: "tpm", limit: key.tpm, resetsAt, tooLarge: at.tokens > key.tpm };
  }
  const mark: HoldMark = { b: budgets.map((row) => `${row.owner}|${row.period}`) };
  if (key.maxConcurrent) mark.c = 1;
  if (key.tpm) {
    mark.t = at.tokens;
    mark.m = at.minute;
  }
  return {
    mark,
    budgets,
    counts: {
      inFlight: counts.inFlight + (key.maxConcurrent ? 1 : 0),
      tpmMinute: key.tpm ? at.minute : counts.tpmMinute,
      tpmTokens: key.tpm ? used + at.tokens : counts.tpmTokens,
    },
    ...(key.tpm ? { tokens: { limit: key.tpm, used: used + at.tokens, resetsAt } } : {}),
  };
}

/**
 * `planHold` on the rows a limited hold reads: the account's (`balance`, `held`), the key's
 * (`limits`, `in_flight`, `tpm_minute`, `tpm_tokens`; undefined when there is none) and the
 * budget rows of both.
 */
export function planHoldOn(
  reserve: number,
  account: Record<string, unknown>,
  key: Record<string, unknown> | undefined,
  rows: BudgetRow[],
  at: HoldLimits,
): HoldPlan | LimitRefusal {
  const available = Number(toTotal(account.balance)) - Number(toTotal(account.held));
  return planHold(reserve, available, keyLimitsOf(key?.limits), rows, {
    inFlight: Number(key?.in_flight ?? 0),
    tpmMinute: Number(key?.tpm_minute ?? 0),
    tpmTokens: Number(key?.tpm_tokens ?? 0),
  }, at);
}

/** A hold's mark from its ledger column (null: the hold counted nothing). */
export function markOf(text: unknown): HoldMark | null {
  if (text === null || text === undefined || text === "") return null;
  const v = parse(text);
  return { b: strings(v.b) ?? [], ...v } as HoldMark;
}

/**
 * A budget row after a settlement at the instant of `windows`: the hold given back, the charge
 * counted in the settlement's window (in the row's window when that is later — another process
 * already rolled it — so nothing is lost to clocks that differ by a moment).
 */
export function settledBudget(
  row: BudgetRow,
  reserved: number,
  amount: number,
  windows: BudgetWindows,
): BudgetRow {
  const start = windows[row.period].start;
  const windowStart = Math.max(row.windowStart, start);
  const spent = row.windowStart === windowStart ? row.windowSpent : 0;
  return {
    ...row,
    held: Math.max(0, row.held - reserved),
    windowStart,
    windowSpent: spent + amount,
  };
}

/** The budget rows a hold's mark names, owner and period, in the order they are locked. */
export function markedBudgets(mark: HoldMark): { owner: string; period: string }[] {
  return [...mark.b].sort().map((name) => {
    const at = name.lastIndexOf("|");
    return { owner: name.slice(0, at), period: name.slice(at + 1) };
  });
}

/**
 * How a settlement corrects its key's tokens of the minute its hold counted them in: by the tokens
 * charged less those held (null: the hold counted none).
 */
export function tokensBack(
  mark: HoldMark,
  charge: { units: { unit: string; quantity: number }[] } | null,
): { change: number; minute: number } | null {
  if (mark.t === undefined || mark.m === undefined) return null;
  const used = charge ? chargedTokens(charge.units) : 0;
  return { change: used - mark.t, minute: mark.m };
}

/** Tokens a charge counts against a tokens-per-minute limit: its token lines. */
export function chargedTokens(units: { unit: string; quantity: number }[]): number {
  let tokens = 0;
  for (const line of units) if (line.unit.includes("_tokens")) tokens += line.quantity;
  return tokens;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * The windows of an instant in UTC, for a settlement given no windows of its own (the caller's
 * time zone is `billing/windows.ts`'s business): 5-hour blocks from the epoch, UTC days, ISO weeks
 * from Monday, calendar months.
 */
export function utcWindows(at: number): BudgetWindows {
  const block = 5 * HOUR;
  const day = Math.floor(at / DAY) * DAY;
  // 1970-01-01 was a Thursday: Monday is three days later in the week's count.
  const monday = day - ((Math.floor(at / DAY) + 3) % 7) * DAY;
  const date = new Date(at);
  const month = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
  return {
    "5h": { start: Math.floor(at / block) * block, end: Math.floor(at / block) * block + block },
    day: { start: day, end: day + DAY },
    week: { start: monday, end: monday + 7 * DAY },
    month: { start: month, end: Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) },
    total: { start: 0, end: Infinity },
  };
}

/** A key's settings after `patch` (what it leaves out stays as `key` has it), at `now`. */
export function patchedKey(key: KeyRecord, patch: KeyPatch, now: number) {
  return {
    name: patch.name === undefined ? key.name : patch.name,
    metadata: patch.metadata ?? key.metadata,
    expiresAt: patch.expiresAt === undefined ? key.expiresAt : patch.expiresAt,
    disabledAt: patch.disabled === undefined
      ? key.disabledAt
      : patch.disabled
      ? key.disabledAt ?? now
      : null,
    rpm: patch.rpm === undefined ? key.rpm : patch.rpm,
    limits: patch.limits ?? key.limits,
    strict: patch.strict ?? key.strict,
  };
}
