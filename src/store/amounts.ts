/**
 * Amounts at the store's boundary. What is written — nanoUSD amounts and unit quantities — is
 * checked before any statement runs, identically for both stores: a safe non-negative integer
 * (a credit may be negative), and a charge's amount is the sum of its unit lines; anything else is
 * refused with an `AmountError`, so no float, NaN or out-of-range value ever reaches SQL (where
 * SQLite would keep a float and PostgreSQL's `bigint` would overflow).
 *
 * What is read back — balances and the totals of many entries (lifetime spend, usage by unit,
 * model or day) — is exact at any size: a `Total` is a number while it is a safe integer (below
 * 2^53), a bigint beyond. The stores' columns are 64-bit, so an account's lifetime spend may
 * reach 2^63 − 1 nanoUSD (about 9.2 billion USD).
 */
import type {
  CacheCharge,
  Charge,
  NewHold,
  Total,
  UnitLine,
  VideoJob,
  VideoOutcome,
} from "./store.ts";

/**
 * The most nanoUSD an account may hold, 2^53 − 1 (about 9,007,199.25 USD): a credit that would
 * take a balance past it is refused, so balances and holds stay safe integers.
 */
export const MAX_BALANCE = Number.MAX_SAFE_INTEGER;

/**
 * A value the store refuses to write, before any statement runs: not a safe integer (a float,
 * NaN, ±Infinity, past 2^53 − 1), negative where it may not be, or a charge whose amount is not
 * the sum of its unit lines. Nothing was written.
 */
export class AmountError extends RangeError {
  override name = "AmountError";
}

/**
 * A credit (or debit) refused because of the balance it would leave: past `MAX_BALANCE`, or — a
 * debit — below the funds held by calls in flight (the balance may not go below what they may
 * still charge). Nothing was written. Amounts in nanoUSD.
 */
export class CreditRefused extends AmountError {
  override name = "CreditRefused";
  constructor(
    readonly accountId: number,
    readonly amount: number,
    readonly balance: Total,
    readonly held: Total,
  ) {
    super(
      amount >= 0
        ? `a credit of ${amount} nanoUSD to account ${accountId} would take its balance of ${balance} nanoUSD past the most an account may hold (${MAX_BALANCE} nanoUSD)`
        : `a debit of ${-amount} nanoUSD from account ${accountId} is more than it has available (balance ${balance} nanoUSD, of which ${held} held by calls in flight)`,
    );
  }
}

/** A driver's integer — a number, a bigint or decimal text (a PostgreSQL `numeric`) — as a Total. */
export function toTotal(value: unknown): Total {
  if (typeof value === "number") {
    // A float can only come from a row written before the boundary checks: the integer nearest.
    return Number.isSafeInteger(value) || !Number.isFinite(value)
      ? value
      : normal(BigInt(Math.round(value)));
  }
  if (typeof value === "bigint") return normal(value);
  if (value === null || value === undefined) return 0;
  const text = String(value);
  // Up to 15 digits (every id, time and amount in practice) is a safe integer: no bigint needed.
  if (SHORT_INTEGER.test(text)) return Number(text);
  return /^-?\d+$/.test(text) ? normal(BigInt(text)) : toTotal(Number(text));
}

const SHORT_INTEGER = /^-?\d{1,15}$/;

/** A bigint as a Total: a number when it is a safe integer. */
function normal(value: bigint): Total {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= BigInt(Number.MIN_SAFE_INTEGER)
    ? Number(value)
    : value;
}

/** The exact sum of Totals. */
export function sumTotals(values: Iterable<Total>): Total {
  let sum = 0n;
  for (const value of values) sum += BigInt(value);
  return normal(sum);
}

/** Throws unless `value` is a safe integer of at least `min`. */
function whole(what: string, value: unknown, min = 0): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value)) {
    throw new AmountError(
      `${what} must be a whole number from ${min} to ${Number.MAX_SAFE_INTEGER}, got ${
        describe(value)
      }`,
    );
  }
  if (value < min) throw new AmountError(`${what} must be at least ${min}, got ${value}`);
  return value;
}

function describe(value: unknown): string {
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  return value === undefined ? "nothing" : typeof value;
}

/** Checks unit lines and that `amount` is their sum (within the safe integers). */
function lines(what: string, units: readonly UnitLine[], amount: unknown): void {
  if (!Array.isArray(units)) throw new AmountError(`${what}: its units must be a list`);
  let sum = 0;
  for (const [i, line] of units.entries()) {
    if (typeof line?.unit !== "string" || !line.unit) {
      throw new AmountError(`${what}: line ${i} has no unit name`);
    }
    whole(`${what}: the quantity of ${line.unit}`, line.quantity);
    sum += whole(`${what}: the amount of ${line.unit}`, line.amount);
    if (!Number.isSafeInteger(sum)) {
      throw new AmountError(`${what}: its lines add up past ${Number.MAX_SAFE_INTEGER} nanoUSD`);
    }
  }
  whole(`${what}: its amount`, amount);
  if (amount !== sum) {
    throw new AmountError(`${what}: its amount (${amount}) is not the sum of its lines (${sum})`);
  }
}

/** The longest miss cause the store keeps (they are names: `failover`, `key_rotation`, …). */
const MAX_CAUSE = 64;

/**
 * A charge's cache figures: whole, non-negative counts and amounts, reads and writes within the
 * input, and a miss's cause a short name.
 */
function cacheFigures(cache: CacheCharge): void {
  const what = "a charge's cache figures";
  const input = whole(`${what}: input tokens`, cache.inputTokens);
  const used = whole(`${what}: cached tokens`, cache.cachedTokens) +
    whole(`${what}: cache write tokens`, cache.cacheWriteTokens) +
    whole(`${what}: 1-hour cache write tokens`, cache.cacheWrite1hTokens);
  if (used > input) {
    throw new AmountError(`${what}: ${used} tokens read and written, past the ${input} input`);
  }
  whole(`${what}: saved`, cache.saved);
  if (cache.miss === null) return;
  const cause = cache.miss?.cause;
  if (typeof cause !== "string" || !cause || cause.length > MAX_CAUSE) {
    throw new AmountError(`${what}: a miss's cause must be a name of 1 to ${MAX_CAUSE} characters`);
  }
  whole(`${what}: a miss's tokens`, cache.miss.tokens);
  whole(`${what}: a miss's loss`, cache.miss.lost);
}

/**
 * A charge to settle a hold on: whole, non-negative lines, the amount their sum, and valid cache
 * figures when it has them.
 */
export function checkCharge(charge: Charge | null): void {
  if (charge === null) return;
  lines("a charge", charge.units, charge.amount);
  if (charge.cache !== undefined) cacheFigures(charge.cache);
}

/** A hold: a whole, non-negative reserve, and a valid estimate. */
export function checkHold(hold: NewHold): void {
  whole("a hold's reserve", hold.reserve);
  lines("a hold's estimate", hold.estimate?.units, hold.estimate?.amount);
}

/** A credit: a whole amount of at most `MAX_BALANCE` either way (the balance is checked apart). */
export function checkCredit(amount: number): void {
  whole("a credit", amount, -MAX_BALANCE);
}

/** A new video job: a whole rate and whole seconds held. */
export function checkVideoJob(job: VideoJob): void {
  whole("a video job's rate", job.rate);
  whole("a video job's seconds held", job.heldSeconds);
}

/** A finished video job: whole seconds billed, and a valid charge when it is done. */
export function checkVideoOutcome(outcome: VideoOutcome): void {
  if (outcome.status !== "done") return;
  if (outcome.billedSeconds !== undefined) {
    whole("a video job's seconds billed", outcome.billedSeconds);
  }
  checkCharge(outcome.charge ?? null);
}

/** A token count kept with an upstream object or a conversation step. */
export function checkTokens(what: string, tokens: number): void {
  whole(`${what}'s context tokens`, tokens);
}
