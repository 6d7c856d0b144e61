/**
 * What an operator sets on a key or an account — name, metadata, expiry, budgets, model lists,
 * tokens per minute, calls in flight, addresses, strict mode — read and checked the same way for the CLI and
 * the admin API (each only turns its own syntax into `Settings`). Errors are `OperatorError`s
 * naming the setting; the admin API answers them as 400s.
 */
import { usdToNano } from "../money.ts";
import { parseBudget, parseBudgetPeriod } from "./windows.ts";
import { parseRange } from "../auth/ip_allow.ts";
import type {
  AccountLimits,
  Budget,
  BudgetPeriod,
  KeyLimits,
  KeyPatch,
  ModelAccess,
} from "../store/store.ts";

/**
 * A mistake in what an operator asked — a setting, a key or account that does not exist, a credit
 * past the bounds, a command line the CLI cannot read: printed without a stack trace (exit code 2),
 * answered 400 by the admin API.
 */
export class OperatorError extends Error {
  override name = "OperatorError";
}

/**
 * Settings as given: absent means unchanged; null (or an empty list) clears. Budgets are
 * `{usd, period}` pairs (USD a decimal string), expiry an instant or a duration from now.
 */
export interface Settings {
  name?: string | null;
  metadata?: Record<string, string> | null;
  /** ISO date or date-time, a duration from now (`30d`, `12h`, `2w`), or ms since the epoch. */
  expires?: string | number | null;
  budgets?: { usd: string; period: string }[] | null;
  /** Model ids and `*` patterns the key may call (none: every model). */
  models?: string[] | null;
  /** Model ids and `*` patterns it may not call. */
  denyModels?: string[] | null;
  tpm?: number | null;
  maxConcurrent?: number | null;
  ips?: string[] | null;
  rpm?: number | null;
  disabled?: boolean;
  /** Its translated calls refuse adaptations instead of making them (see `translate/adaptations.ts`). */
  strict?: boolean;
}

/** Bounds on what a key carries (every one of them is shown and stored). */
export const MAX_NAME = 64;
export const MAX_METADATA_PAIRS = 16;
export const MAX_METADATA_KEY = 64;
export const MAX_METADATA_VALUE = 256;
export const MAX_PATTERNS = 64;
export const MAX_IPS = 64;
/** The largest budget: the most an account may hold. */
const MAX_BUDGET_USD = "9007199.254740991";

const PRINTABLE = /^[^\p{Cc}\p{Cs}]*$/u;

function text(value: string, what: string, max: number): string {
  if (value.length < 1 || value.length > max || !PRINTABLE.test(value)) {
    throw new OperatorError(`${what} must be 1–${max} printable characters`);
  }
  return value;
}

function count(value: number, what: string, max: number): number {
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new OperatorError(`${what} must be an integer from 1 to ${max}`);
  }
  return value;
}

/** A budget from its `usd`/`period` pair. */
export function budgetOf(usd: string, period: string): Budget {
  const p = parseBudgetPeriod(period);
  if (!p) {
    throw new OperatorError(
      `a budget's period must be 5h, day, week, month or total (got "${period}")`,
    );
  }
  const nano = usdToNano(usd);
  if (typeof nano === "string" || nano <= 0) {
    throw new OperatorError(
      `a budget must be a positive USD amount, at most ${MAX_BUDGET_USD} (got "${usd}")`,
    );
  }
  return { period: p, amount: nano };
}

/** Budgets from the CLI's `AMOUNT/PERIOD` texts (`20/month`, `5/5h`); `none` clears them. */
export function budgetsFromText(texts: string[]): { usd: string; period: string }[] | null {
  if (texts.length === 1 && texts[0].trim().toLowerCase() === "none") return null;
  return texts.map((t) => {
    const parsed = parseBudget(t);
    if (typeof parsed === "string") throw new OperatorError(`--budget "${t}": ${parsed}`);
    return parsed;
  });
}

function budgets(list: { usd: string; period: string }[]): Budget[] | undefined {
  const out: Budget[] = [];
  const seen = new Set<BudgetPeriod>();
  for (const { usd, period } of list) {
    const budget = budgetOf(usd, period);
    if (seen.has(budget.period)) {
      throw new OperatorError(`one budget per period: ${budget.period} is given twice`);
    }
    seen.add(budget.period);
    out.push(budget);
  }
  return out.length ? out : undefined;
}

function patterns(list: string[], what: string): string[] | undefined {
  const out = list.map((p) => p.trim()).filter((p) => p);
  if (out.length > MAX_PATTERNS) {
    throw new OperatorError(`${what}: at most ${MAX_PATTERNS} entries`);
  }
  for (const p of out) {
    if (!/^[\x21-\x7e]{1,256}$/.test(p)) {
      throw new OperatorError(
        `${what}: "${p}" is not a model id or pattern (visible ASCII, * for any)`,
      );
    }
  }
  return out.length ? out : undefined;
}

/** Model ids and patterns from a comma-separated list (`gpt-5-mini,claude-haiku-*`). */
export function listFromText(value: string): string[] {
  return value.split(",").map((p) => p.trim()).filter((p) => p);
}

function addresses(list: string[]): string[] | undefined {
  const out = list.map((a) => a.trim()).filter((a) => a);
  if (out.length > MAX_IPS) throw new OperatorError(`addresses: at most ${MAX_IPS} entries`);
  for (const entry of out) {
    if (!parseRange(entry)) {
      throw new OperatorError(`"${entry}" is not an IPv4 or IPv6 address or CIDR range`);
    }
  }
  return out.length ? out : undefined;
}

const DURATION = /^(\d{1,6})\s*(m|h|d|w)$/;
const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** When a key expires: an instant (ISO, ms) or a duration from `now`; null: never. */
export function expiryOf(value: string | number | null, now: number): number | null {
  if (value === null) return null;
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new OperatorError("expiry must be a time");
    }
    return value;
  }
  const trimmed = value.trim();
  if (/^(never|none)$/i.test(trimmed)) return null;
  const duration = DURATION.exec(trimmed);
  if (duration) return now + Number(duration[1]) * UNIT_MS[duration[2]];
  // A date alone is the start of that day, UTC.
  const at = /^\d{4}-\d{2}-\d{2}$/.test(trimmed)
    ? Date.parse(`${trimmed}T00:00:00Z`)
    : /^\d{4}-\d{2}-\d{2}T/.test(trimmed)
    ? Date.parse(trimmed)
    : NaN;
  if (!Number.isFinite(at)) {
    throw new OperatorError(
      `expiry "${value}" must be a date (2027-01-31), a date-time (2027-01-31T18:00:00Z), a duration from now (30d, 12h, 2w) or never`,
    );
  }
  return at;
}

function metadata(value: Record<string, string>): Record<string, string> {
  const pairs = Object.entries(value);
  if (pairs.length > MAX_METADATA_PAIRS) {
    throw new OperatorError(`metadata: at most ${MAX_METADATA_PAIRS} pairs`);
  }
  const out: Record<string, string> = {};
  for (const [k, v] of pairs) {
    if (typeof v !== "string") throw new OperatorError(`metadata "${k}": values are strings`);
    out[text(k, "a metadata key", MAX_METADATA_KEY)] = text(
      v,
      `metadata "${k}"`,
      MAX_METADATA_VALUE,
    );
  }
  return out;
}

/** Strict mode from the CLI's `on`/`off` (also `true`/`false`). */
export function switchFromText(value: string, what: string): boolean {
  const text = value.trim().toLowerCase();
  if (text === "on" || text === "true") return true;
  if (text === "off" || text === "false") return false;
  throw new OperatorError(`${what} must be on or off (got "${value}")`);
}

/** Metadata from the CLI's `KEY=VALUE` texts. */
export function metadataFromText(texts: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const t of texts) {
    const at = t.indexOf("=");
    if (at < 1) throw new OperatorError(`--meta "${t}" must be KEY=VALUE`);
    out[t.slice(0, at)] = t.slice(at + 1);
  }
  return out;
}

function access(current: ModelAccess | undefined, s: Settings): ModelAccess | undefined {
  const allow = s.models === undefined
    ? current?.allow
    : s.models === null
    ? undefined
    : patterns(s.models, "models");
  const deny = s.denyModels === undefined
    ? current?.deny
    : s.denyModels === null
    ? undefined
    : patterns(s.denyModels, "denied models");
  return allow || deny ? { ...(allow ? { allow } : {}), ...(deny ? { deny } : {}) } : undefined;
}

/** Account limits after `s` (what `s` leaves out stays as in `current`). */
export function accountLimitsAfter(current: AccountLimits, s: Settings): AccountLimits {
  const out: AccountLimits = {};
  const b = s.budgets === undefined
    ? current.budgets
    : s.budgets === null
    ? undefined
    : budgets(s.budgets);
  if (b) out.budgets = b;
  const models = access(current.models, s);
  if (models) out.models = models;
  return out;
}

/** Key limits after `s` (what `s` leaves out stays as in `current`). */
export function keyLimitsAfter(current: KeyLimits, s: Settings): KeyLimits {
  const out: KeyLimits = accountLimitsAfter(current, s);
  const tpm = s.tpm === undefined
    ? current.tpm
    : s.tpm === null
    ? undefined
    : count(s.tpm, "tpm", 1e9);
  if (tpm) out.tpm = tpm;
  const max = s.maxConcurrent === undefined
    ? current.maxConcurrent
    : s.maxConcurrent === null
    ? undefined
    : count(s.maxConcurrent, "max-concurrent", 100_000);
  if (max) out.maxConcurrent = max;
  const ips = s.ips === undefined ? current.ips : s.ips === null ? undefined : addresses(s.ips);
  if (ips) out.ips = ips;
  return out;
}

/** The change `s` makes to a key whose limits are `current`, at `now`. */
export function keyPatchOf(s: Settings, current: KeyLimits, now: number): KeyPatch {
  const patch: KeyPatch = {};
  if (s.name !== undefined) patch.name = s.name === null ? null : text(s.name, "name", MAX_NAME);
  if (s.metadata !== undefined) patch.metadata = s.metadata === null ? {} : metadata(s.metadata);
  if (s.expires !== undefined) patch.expiresAt = expiryOf(s.expires, now);
  if (s.disabled !== undefined) patch.disabled = s.disabled;
  if (s.strict !== undefined) patch.strict = s.strict;
  if (s.rpm !== undefined) {
    if (s.rpm !== null && (!Number.isInteger(s.rpm) || s.rpm < 0 || s.rpm > 1_000_000)) {
      throw new OperatorError("rpm must be an integer from 0 (unlimited) to 1000000");
    }
    patch.rpm = s.rpm;
  }
  const limits = keyLimitsAfter(current, s);
  if (JSON.stringify(limits) !== JSON.stringify(current)) patch.limits = limits;
  return patch;
}
