/**
 * The operator commands: keys and accounts, run against the same store file as the server (the
 * server sees changes at once). Each returns the text to print; errors are `CliError`.
 */
import { mintKey, mintKeyFor } from "../auth/keys.ts";
import { accountLimitsAfter, CliError, keyPatchOf, type Settings } from "./key_settings.ts";
import { creditToNano, nanoToUsd } from "../billing/money.ts";
import { CreditRefused, MAX_BALANCE } from "../store/amounts.ts";
import type { Account, KeyLimits, KeyRecord, Store } from "../store/store.ts";

export { CliError };

export interface CreateKeyOptions extends Settings {
  account: string;
  creditUsd?: string;
}

const ACCOUNT_NAME = /^[\w.@-]{1,64}$/;

/** `keys create`: makes the account if needed, adds the credit, mints the key with its settings. */
export async function createKey(store: Store, o: CreateKeyOptions, now = Date.now()) {
  if (!ACCOUNT_NAME.test(o.account)) {
    throw new CliError("--account must be 1–64 characters of letters, digits, _ . @ -");
  }
  const patch = keyPatchOf(o, {}, now);
  const credit = o.creditUsd === undefined ? 0 : parseUsd(o.creditUsd, "--credit");
  let account = await store.ensureAccount(o.account);
  if (credit) account = await credited(store, account, credit, "keys create --credit");
  const key = mintKey();
  await store.insertKey({
    id: key.id,
    accountId: account.id,
    hash: key.hash,
    prefix: key.prefix,
    rpm: patch.rpm ?? null,
    createdAt: now,
    name: patch.name ?? null,
    metadata: patch.metadata,
    expiresAt: patch.expiresAt ?? null,
    limits: patch.limits,
  });
  return {
    key: key.secret,
    id: key.id,
    account: account.name,
    rpm: patch.rpm ?? null,
    balance_usd: nanoToUsd(account.balance),
  };
}

/** `keys update ID`: changes a key's settings (what is not given stays). */
export async function updateKey(store: Store, id: string, s: Settings, now = Date.now()) {
  const current = (await store.listKeys()).find((k) => k.id === id);
  if (!current || current.revokedAt !== null) throw new CliError(`no active key with id ${id}`);
  const key = await store.updateKey(id, keyPatchOf(s, current.limits, now));
  if (!key) throw new CliError(`no active key with id ${id}`);
  return key;
}

/**
 * `keys rotate ID`: a new secret for the same key (its id, limits and history); the old one
 * still works for `graceMs` (0: not at all).
 */
export async function rotateKey(store: Store, id: string, graceMs = 0, now = Date.now()) {
  if (!Number.isSafeInteger(graceMs) || graceMs < 0 || graceMs > 366 * 86_400_000) {
    throw new CliError("the grace period must be from 0 to 366 days");
  }
  const minted = mintKeyFor(id);
  if (!minted) throw new CliError(`not a key id: ${id}`);
  const rotated = await store.rotateKey(
    id,
    minted.hash,
    minted.prefix,
    graceMs ? now + graceMs : null,
  );
  if (!rotated) throw new CliError(`no active key with id ${id}`);
  return {
    key: minted.secret,
    id,
    previous_valid_until: graceMs ? new Date(now + graceMs).toISOString() : null,
  };
}

/** `accounts update NAME`: an account's budgets and model lists (what is not given stays). */
export async function updateAccount(store: Store, name: string, s: Settings): Promise<Account> {
  const account = await store.account(name);
  if (!account) throw new CliError(`no account named "${name}"`);
  const updated = await store.updateAccountLimits(name, accountLimitsAfter(account.limits, s));
  if (!updated) throw new CliError(`no account named "${name}"`);
  return updated;
}

/** Where a key stands now. */
export function keyStatus(k: KeyRecord, now = Date.now()): string {
  if (k.revokedAt !== null) return "revoked";
  if (k.disabledAt !== null) return "disabled";
  if (k.expiresAt !== null && now >= k.expiresAt) return "expired";
  return "active";
}

const iso = (ms: number | null) => ms === null ? null : new Date(ms).toISOString();

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

export function keyJson(k: KeyRecord, now = Date.now()) {
  return {
    id: k.id,
    account: k.accountName,
    name: k.name,
    prefix: k.prefix,
    status: keyStatus(k, now),
    rpm: k.rpm,
    ...limitsJson({ tpm: undefined, maxConcurrent: undefined, ips: undefined, ...k.limits }),
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

/** A key in the CLI's table: its main columns. */
export function keyRow(k: KeyRecord, now = Date.now()) {
  const limits = k.limits;
  return {
    id: k.id,
    account: k.accountName,
    name: k.name,
    status: keyStatus(k, now),
    budgets: (limits.budgets ?? []).map((b) => `${nanoToUsd(b.amount)}/${b.period}`).join(" ") ||
      null,
    models: limits.models?.allow?.join(",") ?? null,
    expires_at: iso(k.expiresAt),
    last_used_at: iso(k.lastUsedAt),
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
    budgets: (a.limits.budgets ?? []).map((b) => ({
      period: b.period,
      usd: nanoToUsd(b.amount),
      nanousd: b.amount,
    })),
    models: a.limits.models?.allow ?? null,
    deny_models: a.limits.models?.deny ?? null,
  };
}

/** `accounts credit NAME USD`: adds (or, negative, removes) balance on an existing account. */
export async function creditAccount(store: Store, name: string, usd: string): Promise<Account> {
  const account = await store.account(name);
  if (!account) throw new CliError(`no account named "${name}"`);
  const amount = parseUsd(usd, "the amount", true);
  return await credited(store, account, amount, "accounts credit");
}

/**
 * Credits `amount` nanoUSD; a balance it would take past the most an account may hold, or (a
 * debit) below what calls in flight hold, is a `CliError` saying so.
 */
async function credited(
  store: Store,
  account: Account,
  amount: number,
  note: string,
): Promise<Account> {
  try {
    return await store.credit(account.id, amount, note);
  } catch (error) {
    if (!(error instanceof CreditRefused)) throw error;
    const usd = (nano: bigint | number) => `${nanoToUsd(nano)} USD`;
    if (amount > 0) {
      throw new CliError(
        `a credit of ${usd(amount)} would take the balance of account "${account.name}" to ${
          usd(BigInt(error.balance) + BigInt(amount))
        }, past the most an account may hold (${usd(MAX_BALANCE)})`,
      );
    }
    throw new CliError(
      `a debit of ${usd(-amount)} is more than account "${account.name}" has available (${
        usd(BigInt(error.balance) - BigInt(error.held))
      }: a balance of ${usd(error.balance)}, ${usd(error.held)} of it held by calls in flight)`,
    );
  }
}

function parseUsd(text: string, what: string, allowNegative = false): number {
  const nano = creditToNano(text);
  if (typeof nano === "string") throw new CliError(`${what} ${nano}, got "${text}"`);
  if (nano === 0 || (nano < 0 && !allowNegative)) {
    throw new CliError(`${what} must be a ${allowNegative ? "non-zero" : "positive"} USD amount`);
  }
  return nano;
}

/** Renders rows as an aligned text table. */
export function table(rows: Record<string, unknown>[]): string {
  if (!rows.length) return "(none)";
  const columns = Object.keys(rows[0]);
  const cells = rows.map((r) => columns.map((c) => r[c] === null ? "-" : String(r[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)));
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i])).join("  ").trimEnd();
  return [line(columns), ...cells.map(line)].join("\n");
}
