/**
 * Money is kept as integer nano-dollars (1 USD = 1_000_000_000 nanoUSD) everywhere: in the store, in
 * the ledger and in price arithmetic. Decimal USD strings appear only at the edges (config file, CLI,
 * wire bodies). JS numbers hold integers exactly up to 2^53, about 9 million USD: a balance stays
 * below it (see `MAX_BALANCE`), while totals past it (a lifetime spend) are bigints (`Total`).
 */
import type { Total } from "../store/store.ts";

/** nanoUSD in one USD. */
export const NANO_PER_USD = 1_000_000_000n;

const DECIMAL = /^([+-]?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * Parses a decimal USD amount (a JSON number or a string such as "12.5" or "1e-7") exactly into
 * integer nanoUSD. Returns an error string when the value has more than 9 decimal places or is out
 * of range, so that callers can report it in their own words.
 */
export function usdToNano(value: number | string): number | string {
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
  const nano = BigInt(digits) * 10n ** BigInt(9 - scale);
  const signed = sign === "-" ? -nano : nano;
  if (signed > BigInt(Number.MAX_SAFE_INTEGER) || signed < -BigInt(Number.MAX_SAFE_INTEGER)) {
    return "is too large";
  }
  return Number(signed);
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
