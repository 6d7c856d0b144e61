/**
 * Keys and accounts as the CLI (`--json`) and the admin API show them: exact amounts in USD and
 * nanoUSD, instants as ISO text, a key's status as of now.
 */
import { nanoToUsd } from "../money.ts";
import type { Account, KeyLimits, KeyRecord } from "../store/store.ts";

/** Where a key stands now. */
export function keyStatus(k: KeyRecord, now = Date.now()): string {
  if (k.revokedAt !== null) return "revoked";
  if (k.disabledAt !== null) return "disabled";
  if (k.expiresAt !== null && now >= k.expiresAt) return "expired";
  return "active";
}

/** An instant as ISO text, null staying null. */
export const iso = (ms: number | null) => ms === null ? null : new Date(ms).toISOString();

/** Limits as the CLI and the APIs show them (amounts in USD and nanoUSD). */
export function limitsJson(l: KeyLimits) {
  return {
    budgets: (l.budgets ?? []).map((b) => ({
      period: b.period,
      usd: nanoToUsd(b.amount),
      nanousd: b.amount,
    })),
    models: l.models?.allow ?? null,
    deny_models: l.models?.deny ?? null,
    ...("tpm" in l || "maxConcurrent" in l || "ips" in l
      ? { tpm: l.tpm ?? null, max_concurrent: l.maxConcurrent ?? null, ips: l.ips ?? null }
      : {}),
  };
}

/** A key as the CLI and the admin API show it (never its secret). */
export function keyJson(k: KeyRecord, now = Date.now()) {
  return {
    id: k.id,
    account: k.accountName,
    name: k.name,
    prefix: k.prefix,
    status: keyStatus(k, now),
    rpm: k.rpm,
    ...limitsJson({ tpm: undefined, maxConcurrent: undefined, ips: undefined, ...k.limits }),
    strict: k.strict,
    metadata: k.metadata,
    expires_at: iso(k.expiresAt),
    last_used_at: iso(k.lastUsedAt),
    created_at: new Date(k.createdAt).toISOString(),
    disabled_at: iso(k.disabledAt),
    revoked_at: iso(k.revokedAt),
    previous_valid_until: k.previousUntil !== null && k.previousUntil > now
      ? iso(k.previousUntil)
      : null,
  };
}

/** An account as the CLI and the admin API show it (amounts exact: a bigint past 2^53). */
export function accountJson(a: Account) {
  return {
    name: a.name,
    balance_usd: nanoToUsd(a.balance),
    spent_usd: nanoToUsd(a.spent),
    balance_nanousd: a.balance,
    spent_nanousd: a.spent,
    created_at: new Date(a.createdAt).toISOString(),
    ...limitsJson(a.limits),
  };
}
