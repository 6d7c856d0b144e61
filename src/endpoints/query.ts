/**
 * Query parameters the usage routes share (`GET /v1/usage`, the admin API's): whole numbers in a
 * range, and the window of UTC days a `days` parameter names.
 */
import { GatewayError } from "../http/errors.ts";

/** An integer query parameter from 1 to `max`, `fallback` when absent; 400 naming it otherwise. */
export function countParam(url: URL, name: string, fallback: number, max: number): number {
  const text = url.searchParams.get(name);
  if (text === null) return fallback;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > max) {
    throw new GatewayError(400, `Invalid '${name}': must be an integer from 1 to ${max}.`, {
      param: name,
    });
  }
  return n;
}

/**
 * The start (ms since epoch) of the UTC day `days - 1` days before `now`'s: `days` days in all,
 * today's included.
 */
export function daysSince(days: number, now = Date.now()): number {
  const today = new Date(now);
  return Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - (days - 1));
}
