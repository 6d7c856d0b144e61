/**
 * The storage interface: accounts, keys (hashes only) and the ledger. Amounts are integer nanoUSD.
 * `sqlite.ts` is the embedded implementation; a server database can take its place.
 */

export interface Account {
  id: number;
  name: string;
  /** Spendable balance in nanoUSD. */
  balance: number;
  /** Total charged so far, in nanoUSD. */
  spent: number;
  /** Reserved by calls in flight (holds), in nanoUSD. */
  held: number;
  createdAt: number;
}

export interface KeyRecord {
  id: string;
  accountId: number;
  accountName: string;
  /** SHA-256 of the key. */
  hash: Uint8Array;
  prefix: string;
  /** Per-key requests-per-minute override; null uses the configured default. */
  rpm: number | null;
  createdAt: number;
  revokedAt: number | null;
}

/** One priced quantity of a charge, e.g. 1200 `input_tokens` costing 3000 nanoUSD. */
export interface UnitLine {
  unit: string;
  quantity: number;
  amount: number;
}

/** A settled call: one ledger entry, written together with the balance change. */
export interface Charge {
  /** Internal id of the call; a second charge with the same id is ignored. */
  callId: string;
  requestId: string;
  keyId: string;
  accountId: number;
  endpoint: string;
  model: string;
  provider: string;
  units: UnitLine[];
  /** Total in nanoUSD; the sum of the unit lines. */
  amount: number;
  /** True when the usage was estimated because the upstream reported none. */
  estimated: boolean;
}

/**
 * Funds reserved for a call in flight. Written before the upstream call so a crash cannot lose
 * the charge: leftover holds are settled at startup on their `estimate`.
 */
export interface Hold {
  /** Also the call id of the charge that settles it. */
  id: string;
  accountId: number;
  keyId: string;
  requestId: string;
  endpoint: string;
  model: string;
  provider: string;
  /** nanoUSD reserved against the balance. */
  amount: number;
  /** What to charge if the process dies before settling: priced unit lines. */
  estimate: { units: UnitLine[]; amount: number };
  createdAt: number;
}

/** Spend of one account, for `GET /v1/usage`. */
export interface UsageSummary {
  account: Account;
  requests: number;
  byUnit: Record<string, { quantity: number; amount: number }>;
  byModel: Record<string, { requests: number; amount: number }>;
}

export interface Store {
  /** Finds or creates the account with this name. */
  ensureAccount(name: string): Account;
  account(name: string): Account | undefined;
  listAccounts(): Account[];
  /** Adds (or with a negative amount removes) balance, with a `credit` ledger entry. */
  credit(accountId: number, amount: number, note: string): Account;
  insertKey(key: Omit<KeyRecord, "accountName" | "revokedAt">): void;
  findKey(id: string): KeyRecord | undefined;
  listKeys(): KeyRecord[];
  /** Marks a key revoked; false when no such active key exists. */
  revokeKey(id: string): boolean;
  /** Records a charge exactly once; returns false when `callId` was already charged. */
  charge(charge: Charge): boolean;
  /** Reserves `hold.amount` if the available balance (balance − held) covers it. */
  reserve(hold: Hold): boolean;
  /**
   * Removes the hold and, when `charge` is given, records it in the same transaction. Returns
   * false (and changes nothing) when the hold was already settled.
   */
  settle(holdId: string, charge: Charge | null): boolean;
  /** Holds left by calls that never settled (after a crash). */
  pendingHolds(): Hold[];
  usage(accountId: number): UsageSummary;
  close(): void;
}
