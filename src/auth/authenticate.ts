/**
 * Authentication per route scheme (spec §5): which header carries the key, and the lookup of the
 * key in the store on every request, so a revoked key stops working at once.
 */
import { GatewayError } from "../http/errors.ts";
import type { AccountLimits, KeyLimits, KeyRecord, Store } from "../store/store.ts";
import { needsLimitedHold } from "../store/limits.ts";
import { addressAllowed } from "./ip_allow.ts";
import { hashKey, keyIdOf, timingSafeEqual } from "./keys.ts";

/**
 * `bearer`: `Authorization: Bearer` (the `/v1` family); `anthropic`: `x-api-key` or Bearer
 * (`/v1/messages`); `goog`: `x-goog-api-key` only (`/v1beta`); `any`: whichever of the three a
 * client sends — `x-goog-api-key`, then `x-api-key`, then Bearer — on the paths several
 * protocols share (`GET /v1/models`); `none`: public.
 */
export type AuthScheme = "bearer" | "anthropic" | "goog" | "any" | "none";

/** Who is calling: the key and its account, with the key's effective RPM (0 = unlimited). */
export interface Principal {
  keyId: string;
  accountId: number;
  accountName: string;
  rpm: number;
  /** The key's limits, and its account's. */
  limits: KeyLimits;
  accountLimits: AccountLimits;
  /** Its calls' holds must be limited ones (budgets, calls in flight, tokens per minute). */
  limited: boolean;
  /** Its translated calls refuse adaptations (strict mode, see `translate/adaptations.ts`). */
  strict: boolean;
}

const MISSING: Record<Exclude<AuthScheme, "none">, string> = {
  bearer: "Missing API key: send it in the Authorization header as `Bearer <key>`.",
  anthropic:
    "Missing API key: send it in the x-api-key header (or as `Authorization: Bearer <key>`).",
  goog: "Missing API key: send it in the x-goog-api-key header.",
  any:
    "Missing API key: send it as `Authorization: Bearer <key>` (or in the x-api-key or x-goog-api-key header).",
};

const QUERY_KEY =
  "API keys in the `key` query parameter are not accepted here: send the key in the x-goog-api-key header instead.";

/** The key text presented in the way `scheme` allows; throws 401 when there is none. */
export function presentedKey(req: Request, url: URL, scheme: Exclude<AuthScheme, "none">): string {
  const headers = req.headers;
  let key: string | undefined;
  if (scheme === "goog" || scheme === "any") key = headers.get("x-goog-api-key")?.trim();
  if (!key && (scheme === "anthropic" || scheme === "any")) {
    key = headers.get("x-api-key")?.trim();
  }
  if (!key && scheme !== "goog") {
    const auth = headers.get("authorization");
    const match = auth ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
    key = match?.[1];
  }
  if (!key && (scheme === "goog" || scheme === "any") && url.searchParams.has("key")) {
    throw new GatewayError(401, QUERY_KEY);
  }
  if (!key) throw new GatewayError(401, MISSING[scheme]);
  return key;
}

const DUMMY_HASH = new Uint8Array(32);

/** Where and when a key is presented (for its address allowlist and its expiry). */
export interface Presented {
  /** The client's address (the connection's). */
  address?: string;
  /** Now, ms since the epoch (the request's clock). */
  now: number;
}

/**
 * Looks the key up and checks it in constant time — its secret, or a rotated key's previous one
 * within its grace period; 401 for unknown, revoked, disabled or expired keys, 403 for an address
 * outside the key's allowlist. Answers at once when the store has the key in memory.
 */
export function authenticate(
  store: Store,
  key: string,
  defaultRpm: number,
  presented: Presented = { now: Date.now() },
): Principal | Promise<Principal> {
  const id = keyIdOf(key);
  const record = id ? store.findKey(id) : undefined;
  return record instanceof Promise
    ? record.then((found) => principalOf(found, key, defaultRpm, presented))
    : principalOf(record, key, defaultRpm, presented);
}

function principalOf(
  record: KeyRecord | undefined,
  key: string,
  defaultRpm: number,
  presented: Presented,
): Principal {
  const hash = hashKey(key);
  const current = timingSafeEqual(hash, record?.hash ?? DUMMY_HASH);
  const previous = timingSafeEqual(hash, record?.previousHash ?? DUMMY_HASH) &&
    record?.previousUntil != null && presented.now < record.previousUntil;
  if (!record || !(current || previous)) throw new GatewayError(401, "Invalid API key.");
  if (record.revokedAt !== null) throw new GatewayError(401, "This API key has been revoked.");
  if (record.disabledAt !== null) {
    throw new GatewayError(401, "This API key is disabled.", { code: "key_disabled" });
  }
  if (record.expiresAt !== null && presented.now >= record.expiresAt) {
    throw new GatewayError(
      401,
      `This API key expired at ${new Date(record.expiresAt).toISOString()}.`,
      { code: "key_expired" },
    );
  }
  const ips = record.limits.ips;
  if (ips && !addressAllowed(ips, presented.address)) {
    throw new GatewayError(403, "This API key may not be used from this address.", {
      code: "address_not_allowed",
    });
  }
  return {
    keyId: record.id,
    accountId: record.accountId,
    accountName: record.accountName,
    rpm: record.rpm ?? defaultRpm,
    limits: record.limits,
    accountLimits: record.accountLimits,
    limited: needsLimitedHold(record.limits, record.accountLimits),
    strict: record.strict,
  };
}
