/**
 * The storage interface: accounts, keys (hashes only) and the ledger. Amounts are integer nanoUSD.
 * `sqlite.ts` is the embedded implementation, `postgres.ts` the one several hosts can share. What
 * is written is checked at the boundary, and totals are read exactly (see `amounts.ts`).
 */
import type { RateDecision } from "../auth/ratelimit.ts";

/**
 * An exact integer amount (nanoUSD) or quantity as a store reads it: a number while it is a safe
 * integer, a bigint only beyond `Number.MAX_SAFE_INTEGER` (so `===` and JSON stay as they were for
 * every figure below 2^53). Lifetime spend and sums over many entries can pass 2^53 in a few years
 * of heavy use.
 */
export type Total = number | bigint;

export interface Account {
  id: number;
  name: string;
  /**
   * Spendable balance in nanoUSD: at most `MAX_BALANCE` (credits past it are refused), so a safe
   * integer — a bigint only in a store credited past it before the bound.
   */
  balance: Total;
  /** Total charged so far, in nanoUSD (may pass 2^53 over an account's life). */
  spent: Total;
  /** Reserved by calls in flight (holds), in nanoUSD; never more than the balance. */
  held: Total;
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

/** What a call is charged: unit lines and their total. */
export interface Charge {
  units: UnitLine[];
  /** Total in nanoUSD; the sum of the unit lines. */
  amount: number;
  /** True when the usage was estimated because the upstream reported none. */
  estimated: boolean;
}

/**
 * A call about to be made. Reserving writes its ledger entry in state `held` before the upstream
 * call, so a crash cannot lose the charge: entries still held at startup are settled on
 * `estimate`.
 */
export interface NewHold {
  requestId: string;
  keyId: string;
  accountId: number;
  endpoint: string;
  model: string;
  provider: string;
  /** The model id sent upstream. */
  upstreamModel?: string;
  /** nanoUSD reserved against the balance while the call runs. */
  reserve: number;
  /** What to charge if the process dies before settling. */
  estimate: { units: UnitLine[]; amount: number };
}

/** A ledger entry left in state `held` (found after a crash). */
export interface PendingHold {
  id: number;
  accountId: number;
  estimate: { units: UnitLine[]; amount: number };
}

/** Spend of one account, for `GET /v1/usage`. */
export interface UsageSummary {
  account: Account;
  requests: number;
  byUnit: Record<string, { quantity: Total; amount: Total }>;
  byModel: Record<string, { requests: number; amount: Total }>;
  /** Calls still held (in flight, or video jobs not finished), by unit of their estimate. */
  heldByUnit: Record<string, { quantity: Total; amount: Total }>;
}

/** Settled spend of one UTC day. */
export interface DayUsage {
  /** `YYYY-MM-DD` (UTC). */
  day: string;
  requests: number;
  amount: Total;
}

/** One ledger entry as the admin API lists it. */
export interface LedgerEntry {
  id: number;
  kind: "charge" | "credit";
  status: "held" | "settled";
  account: string;
  requestId: string | null;
  keyId: string | null;
  endpoint: string | null;
  model: string | null;
  provider: string | null;
  /** The model id the upstream served the call as (null before migration 11, and for credits). */
  upstreamModel: string | null;
  /** nanoUSD: a safe integer for every entry written since the boundary checks. */
  amount: Total;
  /** The charge's lines (`[]` for credits and held entries). */
  units: UnitLine[];
  estimated: boolean;
  note: string | null;
  createdAt: number;
  settledAt: number | null;
}

export type VideoJobStatus = "pending" | "done" | "failed" | "expired";

/** An asynchronous video job: the client's handle on an upstream job and on its held funds. */
export interface VideoJob {
  /** The `request_id` the client polls. */
  id: string;
  upstreamId: string;
  accountId: number;
  keyId: string;
  /** The job's ledger entry, held from submission until the job finishes. */
  ledgerId: number;
  /** The model id the client asked for. */
  model: string;
  provider: string;
  /** The id (hash prefix) of the upstream key it was submitted with; its polls use that key. */
  upstreamKey?: string | null;
  /** Price per generated second, nanoUSD, fixed at submission. */
  rate: number;
  /** Seconds held at submission. */
  heldSeconds: number;
  status: VideoJobStatus;
  /** Seconds charged once done. */
  billedSeconds: number | null;
  /** nanoUSD charged once done. */
  amount: number | null;
  /** The upstream's final answer (JSON text), once finished. */
  result: string | null;
  createdAt: number;
  finishedAt: number | null;
}

/** How a pending job ended. `charge` is required for `done` and ignored otherwise. */
export interface VideoOutcome {
  status: Exclude<VideoJobStatus, "pending">;
  billedSeconds?: number;
  charge?: Charge;
  result: string;
}

/** An upstream object (a stored response, a container) and the account whose call created it. */
export interface UpstreamObject {
  id: string;
  accountId: number;
  kind: "response" | "container";
  /** For a response: the tokens of the conversation it ends (its input and output). */
  contextTokens: number;
  /** The provider (config name) that holds it; null for objects recorded before migration 12. */
  provider?: string | null;
}

/**
 * One answer of a Responses conversation the gateway keeps itself (its upstream could not): the
 * call's own input and its answer, as canonical messages (JSON), linked to the answer it
 * continued.
 */
export interface StoredResponse {
  id: string;
  accountId: number;
  previousId: string | null;
  /** JSON of the canonical messages this call added: its input, then its answer. */
  items: string;
  /** Tokens of the whole conversation it ends (input and output). */
  contextTokens: number;
  createdAt: number;
}

/**
 * The store cannot be reached now (a server database is down or cut off): a new call is refused
 * with 503 in the client's protocol, never served unbilled.
 */
export class StoreUnavailable extends Error {
  override name = "StoreUnavailable";
  /** The statement may have run all the same (the connection was lost while it was out). */
  readonly mayHaveRun: boolean;

  constructor(message: string, options: { mayHaveRun?: boolean } = {}) {
    super(message);
    this.mayHaveRun = options.mayHaveRun ?? false;
  }
}

/** A value, or a promise of it: what a store answers at once from memory when it can. */
export type Awaitable<T> = T | Promise<T>;

/** How far back `responseChain` walks: at most `steps` answers and about `bytes` of items. */
export interface ChainBound {
  steps: number;
  bytes: number;
}

/**
 * The storage interface, implemented by the embedded SQLite store (`sqlite.ts`) and the
 * PostgreSQL store (`postgres.ts`). Reads and writes resolve asynchronously (a server database
 * answers over the network); `findKey` answers at once when the key is cached.
 */
export interface Store {
  /** Finds or creates the account with this name. */
  ensureAccount(name: string): Promise<Account>;
  account(name: string): Promise<Account | undefined>;
  listAccounts(): Promise<Account[]>;
  /**
   * Adds (or with a negative amount removes) balance, with a `credit` ledger entry. Rejects with
   * `CreditRefused` (see `amounts.ts`) when the balance would pass `MAX_BALANCE` or a debit would
   * take it below the funds held, and with `AmountError` when `amount` is not a safe integer.
   */
  credit(accountId: number, amount: number, note: string): Promise<Account>;
  insertKey(key: Omit<KeyRecord, "accountName" | "revokedAt">): Promise<void>;
  /**
   * The key with this id. Cached in memory: every change to a key anywhere (another thread,
   * process or replica, the CLI) drops the cache before the next lookup, or within a second.
   */
  findKey(id: string): Awaitable<KeyRecord | undefined>;
  listKeys(): Promise<KeyRecord[]>;
  /** Marks a key revoked; false when no such active key exists. */
  revokeKey(id: string): Promise<boolean>;
  /** Calls holding funds now, every process's (held ledger entries). */
  holdsOutstanding(): Promise<number>;
  /** The account's available balance (balance − held), nanoUSD, at most `MAX_BALANCE`. */
  available(accountId: number): Promise<number>;
  /*
   * The hot-path writes below are group-committed: writes made in the same event-loop turn share
   * one transaction, committed when the turn ends; each resolves once committed. Each rejects
   * with `AmountError` (see `amounts.ts`), before any statement runs, when an amount or quantity
   * it is given is not a safe non-negative integer or a charge's amount is not the sum of its
   * lines.
   */
  /**
   * Reserves `hold.reserve` if the available balance (balance − held) covers it, writing the
   * call's ledger entry as `held`. Resolves, once durable, to the entry's id, or null when the
   * available balance did not cover the hold.
   */
  reserve(hold: NewHold): Promise<number | null>;
  /**
   * Settles a held entry exactly once: with `charge`, it becomes the call's charge; with null
   * (the call failed), it is removed unbilled. Resolves, once committed, to false when the entry
   * was already settled.
   */
  settle(id: number, charge: Charge | null): Promise<boolean>;
  /**
   * Entries left `held` by calls that never settled (after a crash). Holds of unfinished video
   * jobs are not among them: those jobs go on after a restart.
   */
  pendingHolds(): Promise<PendingHold[]>;
  /** Records a submitted video job (its hold already reserved); resolves once durable. */
  insertVideoJob(job: VideoJob): Promise<void>;
  videoJob(id: string): Promise<VideoJob | undefined>;
  /** Unfinished jobs, oldest first. */
  pendingVideoJobs(limit: number): Promise<VideoJob[]>;
  /**
   * Finishes a pending job exactly once, in one transaction with its ledger entry: `done`
   * settles the hold on `charge`, `failed`/`expired` release it. Resolves, once committed, to
   * false when the job had already finished (another poll got there first).
   */
  finishVideoJob(id: string, outcome: VideoOutcome): Promise<boolean>;
  /**
   * Records an upstream object an answer created (group-committed with the call's settlement).
   * The first account to record an id keeps it.
   */
  recordObject(object: UpstreamObject): Promise<void>;
  upstreamObject(id: string): Promise<UpstreamObject | undefined>;
  /** Forgets objects recorded before `before` (ms since epoch); returns how many. */
  pruneObjects(before: number): Promise<number>;
  /** Keeps a conversation step (group-committed with the call's settlement). */
  saveResponse(response: StoredResponse): Promise<void>;
  /**
   * The kept answer `id` and the ones it continued, newest first, as far back as `bound` allows
   * (one step past the byte bound, so the caller can tell it was reached); [] when `id` is not
   * kept. Whose they are is the caller's to check.
   */
  responseChain(id: string, bound: ChainBound): Promise<StoredResponse[]>;
  /** Forgets conversation steps kept before `before` (ms since epoch); returns how many. */
  pruneResponses(before: number): Promise<number>;
  usage(accountId: number): Promise<UsageSummary>;
  /** Settled spend per UTC day from `since` (ms since epoch) on, oldest first. */
  usageByDay(accountId: number, since: number): Promise<DayUsage[]>;
  /** Settled spend of every account per UTC day from `since` (ms since epoch) on, oldest first. */
  totalUsageByDay(since: number): Promise<DayUsage[]>;
  /**
   * Ledger entries, newest first: at most `limit`, with ids below `before` when given (the next
   * page), of one account when given.
   */
  ledgerPage(page: { accountId?: number; before?: number; limit: number }): Promise<LedgerEntry[]>;
  /**
   * A store shared by several hosts counts requests per minute itself, for the key as a whole
   * (absent: each process counts its own, see `auth/ratelimit.ts`). Counts one request of `keyId`
   * when allowed.
   */
  countRequest?(keyId: string, limit: number): Promise<RateDecision>;
  /**
   * Whether this process should run the once-only background work now (video poller, recovery,
   * pruning) — on a store shared by several hosts, one of them at a time; absent: always.
   */
  leading?(): Promise<boolean>;
  /** Why the store cannot be reached now (for `/readyz`), or null when it can. */
  unreachable?(): string | null;
  /**
   * Called once by a serving process, before its serving threads open their own connections:
   * starts the store's own helper thread, if it has one (SQLite: the checkpointer), and returns
   * what the threads need to share the store (SQLite: the process's write lock). `onError` hears
   * of a failure of the helper thread.
   */
  prepareForServing?(onError?: (message: string) => void): SharedArrayBuffer | undefined;
  close(): Promise<void> | void;
}
