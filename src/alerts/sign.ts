/**
 * The signature of a delivery, as Stripe signs its webhooks: `t=<unix seconds>,v1=<hex>`, where
 * the hex is HMAC-SHA256 of `<t>.<body>` keyed with `alerts.secret`. A receiver recomputes it over
 * the raw body, compares in constant time, and refuses a `t` too far from its clock (a replay).
 */
import { hmacSha256 } from "../sha256.ts";

/** The `x-switchyard-signature` of `body` sent at `seconds` (unix time). */
export function signature(secret: string, body: string, seconds: number): string {
  const v1 = hmacSha256(secret, `${seconds}.${body}`).toHex();
  return `t=${seconds},v1=${v1}`;
}
