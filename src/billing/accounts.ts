/**
 * The operations on keys and accounts an operator makes, through the CLI (`main.ts`) or the admin
 * API (`endpoints/admin.ts`) alike: create, change and rotate a key, change an account's limits,
 * credit an account. Each checks what it is given (see `key_settings.ts`) and throws an
 * `OperatorError` saying what is wrong.
 */
import { mintKey, mintKeyFor } from "../auth/keys.ts";
import { accountLimitsAfter, keyPatchOf, OperatorError, type Settings } from "./key_settings.ts";
import { creditToNano, nanoToUsd } from "../money.ts";
import { CreditRefused, MAX_BALANCE } from "../store/amounts.ts";
import type { Account, Store } from "../store/store.ts";

/** What `createKey` is given: the account, an opening credit (USD) and the key's settings. */
export interface CreateKeyOptions extends Settings {
  account: string;
  creditUsd?: string;
}

const ACCOUNT_NAME = /^[\w.@-]{1,64}$/;

/** `keys create`: makes the account if needed, adds the credit, mints the key with its settings. */
export async function createKey(store: Store, o: CreateKeyOptions, now = Date.now()) {
  if (!ACCOUNT_NAME.test(o.account)) {
    throw new OperatorError("--account must be 1–64 characters of letters, digits, _ . @ -");
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
    strict: patch.strict ?? false,
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
  if (!current || current.revokedAt !== null) {
    throw new OperatorError(`no active key with id ${id}`);
  }
  const key = await store.updateKey(id, keyPatchOf(s, current.limits, now));
  if (!key) throw new OperatorError(`no active key with id ${id}`);
  return key;
}

/**
 * `keys rotate ID`: a new secret for the same key (its id, limits and history); the old one
 * still works for `graceMs` (0: not at all).
 */
export async function rotateKey(store: Store, id: string, graceMs = 0, now = Date.now()) {
  if (!Number.isSafeInteger(graceMs) || graceMs < 0 || graceMs > 366 * 86_400_000) {
    throw new OperatorError("the grace period must be from 0 to 366 days");
  }
  const minted = mintKeyFor(id);
  if (!minted) throw new OperatorError(`not a key id: ${id}`);
  const rotated = await store.rotateKey(
    id,
    minted.hash,
    minted.prefix,
    graceMs ? now + graceMs : null,
  );
  if (!rotated) throw new OperatorError(`no active key with id ${id}`);
  return {
    key: minted.secret,
    id,
    previous_valid_until: graceMs ? new Date(now + graceMs).toISOString() : null,
  };
}

/** `accounts update NAME`: an account's budgets and model lists (what is not given stays). */
export async function updateAccount(store: Store, name: string, s: Settings): Promise<Account> {
  const account = await store.account(name);
  if (!account) throw new OperatorError(`no account named "${name}"`);
  const updated = await store.updateAccountLimits(name, accountLimitsAfter(account.limits, s));
  if (!updated) throw new OperatorError(`no account named "${name}"`);
  return updated;
}

/** `accounts credit NAME USD`: adds (or, negative, removes) balance on an existing account. */
export async function creditAccount(store: Store, name: string, usd: string): Promise<Account> {
  const account = await store.account(name);
  if (!account) throw new OperatorError(`no account named "${name}"`);
  const amount = parseUsd(usd, "the amount", true);
  return await credited(store, account, amount, "accounts credit");
}

/**
 * Credits `amount` nanoUSD; a balance it would take past the most an account may hold, or (a
 * debit) below what calls in flight hold, is a `OperatorError` saying so.
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
      throw new OperatorError(
        `a credit of ${usd(amount)} would take the balance of account "${account.name}" to ${
          usd(BigInt(error.balance) + BigInt(amount))
        }, past the most an account may hold (${usd(MAX_BALANCE)})`,
      );
    }
    throw new OperatorError(
      `a debit of ${usd(-amount)} is more than account "${account.name}" has available (${
        usd(BigInt(error.balance) - BigInt(error.held))
      }: a balance of ${usd(error.balance)}, ${usd(error.held)} of it held by calls in flight)`,
    );
  }
}

function parseUsd(text: string, what: string, allowNegative = false): number {
  const nano = creditToNano(text);
  if (typeof nano === "string") throw new OperatorError(`${what} ${nano}, got "${text}"`);
  if (nano === 0 || (nano < 0 && !allowNegative)) {
    throw new OperatorError(
      `${what} must be a ${allowNegative ? "non-zero" : "positive"} USD amount`,
    );
  }
  return nano;
}
