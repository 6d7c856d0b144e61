/**
 * Money is kept as integer nano-dollars (1 USD = 1_000_000_000 nanoUSD) everywhere: in the store, in
 * the ledger and in price arithmetic. Decimal USD strings appear only at the edges (config file, CLI,
 * wire bodies). JS numbers hold integers exactly up to 2^53, about 9 million USD: a balance stays
 * below it (see `MAX_BALANCE`), while totals past it (a lifetime spend) are bigints (`Total`).
 */
/**
 * An exact integer amount (nanoUSD) or quantity as a store reads it: a number while it is a safe
 * integer, a bigint only beyond `Number.MAX_SAFE_INTEGER` (so `===` and JSON stay as they were for
 * every figure below 2^53). Lifetime spend and sums over many entries can pass 2^53 in a few years
 * of heavy use.
 */
export type Total = number | bigint;

/** nanoUSD in one USD. */
export const NANO_PER_USD = 1_000_000_000n;

/**
 * The most one credit (or debit) may add (or remove): 1,000,000 USD. Far above any top-up a
 * gateway's operator makes, yet a ninth of the most a balance may hold (`MAX_BALANCE`, about
 * 9,007,199 USD), so a mistyped amount (nanoUSD typed as USD, a few extra zeros) is refused on its
 * own rather than filling the balance; a larger top-up is several credits.
 */
export const MAX_CREDIT_USD = 1_000_000;
/** `MAX_CREDIT_USD` in nanoUSD. */
export const MAX_CREDIT = MAX_CREDIT_USD * 1_000_000_000;

const DECIMAL = /^([+-]?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * Parses a decimal USD amount (a JSON number or a string such as "12.5" or "1e-7") exactly into
 * integer nanoUSD. Returns an error string when the value has more than 9 decimal places or is out
 * of range, so that callers can report it in their own words.
 */
export function usdToNano(value: number | string): number | string {
  const nano = exactNano(value);
  if (typeof nano === "string") return nano;
  if (nano > BigInt(Number.MAX_SAFE_INTEGER) || nano < -BigInt(Number.MAX_SAFE_INTEGER)) {
    return TOO_LARGE;
  }
  return Number(nano);
}

const TOO_LARGE = "is too large";

/**
 * Parses a credit (negative: a debit) as `usdToNano` does, refusing, whatever its size, more than
 * `MAX_CREDIT_USD` either way with a message naming the limit.
 */
export function creditToNano(value: string): number | string {
  const nano = exactNano(value);
  if (typeof nano === "string" && nano !== TOO_LARGE) return nano;
  if (typeof nano === "string" || nano > BigInt(MAX_CREDIT) || nano < -BigInt(MAX_CREDIT)) {
    return `must be at most ${MAX_CREDIT_USD} USD per credit (a larger top-up is several credits)`;
  }
  return Number(nano);
}

/** A decimal USD amount as exact nanoUSD, of any size; an error string when it is not one. */
function exactNano(value: number | string): bigint | string {
  const text = typeof value === "number" ? numberToPlain(value) : value.trim();
  const match = DECIMAL.exec(text);
  if (!match) return "must be a decimal amount in USD";
  const [, sign, whole, fraction = "", exp = "0"] = match;
  let digits = whole + fraction;
  let scale = fraction.length - Number(exp); // value = digits * 10^-scale
  // Strip trailing zeros that only add precision.
  while (scale > 0 && digits.endsWith("0") && digits.length > 1) {
    digits = digits.slice(0, -1);
    scale--;
  }
  if (scale > 9) return "must have at most 9 decimal places (1 nanoUSD)";
  const significant = digits.replace(/^0+/, "");
  if (!significant) return 0n;
  // An exponent far past any amount would make the digits huge: it is too large either way.
  if (significant.length - scale > 40) return TOO_LARGE;
  const nano = BigInt(digits) * 10n ** BigInt(9 - scale);
  return sign === "-" ? -nano : nano;
}

function numberToPlain(n: number): string {
  if (!Number.isFinite(n)) return "NaN";
  return String(n); // may be exponent form ("1e-7"); the parser handles it
}

/** Formats integer nanoUSD as an exact decimal USD string with at least two decimals ("0.000000038"). */
export function nanoToUsd(nano: Total): string {
  const negative = nano < 0;
  const abs = negative ? -BigInt(nano) : BigInt(nano);
  const whole = abs / NANO_PER_USD;
  let fraction = (abs % NANO_PER_USD).toString().padStart(9, "0").replace(/0+$/, "");
  if (fraction.length < 2) fraction = fraction.padEnd(2, "0");
  return `${negative ? "-" : ""}${whole}.${fraction}`;
}

/**
 * An amount as the APIs show it: exact decimal USD beside integer nanoUSD (a bigint past 2^53,
 * which `jsonText` writes as its exact digits).
 */
export function amountFields(prefix: string, nano: Total): Record<string, string | Total> {
  return { [`${prefix}_usd`]: nanoToUsd(nano), [`${prefix}_nanousd`]: nano };
}
