/**
 * The operator commands: keys and accounts, run against the same store file as the server (the
 * server sees changes at once). Each returns the text to print; errors are `CliError`.
 */
import { mintKey } from "../auth/keys.ts";
import { creditToNano, nanoToUsd } from "../billing/money.ts";
import { CreditRefused, MAX_BALANCE } from "../store/amounts.ts";
import type { Account, KeyRecord, Store } from "../store/store.ts";

/** A usage or input mistake, printed without a stack trace (exit code 2). */
export class CliError extends Error {
  override name = "CliError";
}

export interface CreateKeyOptions {
  account: string;
  rpm?: number;
  creditUsd?: string;
}

/** `keys create`: makes the account if needed, adds the credit, mints the key. */
export async function createKey(store: Store, o: CreateKeyOptions) {
  if (!/^[\w.@-]{1,64}$/.test(o.account)) {
    throw new CliError("--account must be 1–64 characters of letters, digits, _ . @ -");
  }
  if (o.rpm !== undefined && (!Number.isInteger(o.rpm) || o.rpm < 0 || o.rpm > 1_000_000)) {
    throw new CliError("--rpm must be an integer from 0 (unlimited) to 1000000");
  }
  const credit = o.creditUsd === undefined ? 0 : parseUsd(o.creditUsd, "--credit");
  let account = await store.ensureAccount(o.account);
  if (credit) account = await credited(store, account, credit, "keys create --credit");
  const key = mintKey();
  await store.insertKey({
    id: key.id,
    accountId: account.id,
    hash: key.hash,
    prefix: key.prefix,
    rpm: o.rpm ?? null,
    createdAt: Date.now(),
  });
  return {
    key: key.secret,
    id: key.id,
    account: account.name,
    rpm: o.rpm ?? null,
    balance_usd: nanoToUsd(account.balance),
  };
}

export function keyJson(k: KeyRecord) {
  return {
    id: k.id,
    account: k.accountName,
    prefix: k.prefix,
    rpm: k.rpm,
    created_at: new Date(k.createdAt).toISOString(),
    revoked_at: k.revokedAt === null ? null : new Date(k.revokedAt).toISOString(),
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
