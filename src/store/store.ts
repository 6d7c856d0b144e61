/**
 * The storage interface: accounts, keys (hashes only) and the ledger. Amounts are integer nanoUSD
 * (totals past 2^53 are bigints: `Total`, see `money.ts`). `sqlite.ts` is the embedded
 * implementation, `postgres.ts` the one several hosts can share. What is written is checked at
 * the boundary, and totals are read exactly (see `amounts.ts`).
 */
import type { Total } from "../money.ts";
export type { Total };
export * from "./records.ts";
import type {
  Account,
  AccountLimits,
  AffinityRecord,
  Alert,
  AlertOutcome,
  Awaitable,
  BudgetState,
  BudgetWindows,
  CacheUsageRow,
  ChainBound,
  Charge,
  DayUsage,
  HoldLimits,
  KeyPatch,
  KeyRecord,
  LedgerEntry,
  LimitedHold,
  LimitRefusal,
  LowBalance,
  NewAlert,
  NewHold,
  NewKey,
  PendingHold,
  RateDecision,
  SpentBudget,
  StoredResponse,
  ThreadTurn,
  UpstreamObject,
  UsageSummary,
  VideoJob,
  VideoOutcome,
} from "./records.ts";

/** How a process serves from its store (see `Store.prepareForServing`). */
export interface Serving {
  /** Several serving threads share the store (`serve --workers N`, N > 1). */
  shared: boolean;
  /** Hears of a failure of the store's checkpoints (SQLite), on whichever thread they run. */
  onError?: (message: string) => void;
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
  insertKey(key: NewKey): Promise<void>;
  /** Changes a key (not a revoked one); the key after, or undefined when there is none. */
  updateKey(id: string, patch: KeyPatch): Promise<KeyRecord | undefined>;
  /**
   * Gives a key a new secret (its hash and prefix) and keeps the old one valid until
   * `previousUntil` (null: not at all); false when there is no such active key.
   */
  rotateKey(id: string, hash: Uint8Array, prefix: string, previousUntil: number | null): Promise<
    boolean
  >;
  /** Records when keys were last used (written without waking any key cache). */
  touchKeys(used: ReadonlyMap<string, number>): Promise<void>;
  /** Sets an account's limits; the account after, or undefined when there is none. */
  updateAccountLimits(name: string, limits: AccountLimits): Promise<Account | undefined>;
  /** The budgets of a key and its account as they stand at the instant `windows` are of. */
  budgets(keyId: string | null, accountId: number, windows: BudgetWindows): Promise<BudgetState[]>;
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
   * `reserve` for a call whose key or account has limits: the hold must also fit in every budget
   * of the key and of the account (what their window settled + what calls hold + this hold ≤ the
   * budget), in the key's calls in flight and in its tokens per minute — all decided in the one
   * write that takes the hold, so concurrent calls, threads and replicas cannot overshoot. The
   * entry remembers what it counted, so its settlement gives back exactly that.
   */
  reserveLimited(hold: NewHold, limits: HoldLimits): Promise<LimitedHold | LimitRefusal>;
  /**
   * Settles a held entry exactly once: with `charge`, it becomes the call's charge; with null
   * (the call failed), it is removed unbilled. A limited hold gives back what it counted — its
   * hold to each budget (the charge counting in the window of `windows`, the settlement's
   * instant, default now in UTC), its place among the key's calls in flight, the difference
   * between its tokens and those charged to the minute it was held in. Resolves, once committed,
   * to false when the entry was already settled.
   */
  settle(id: number, charge: Charge | null, windows?: BudgetWindows): Promise<boolean>;
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
  finishVideoJob(id: string, outcome: VideoOutcome, windows?: BudgetWindows): Promise<boolean>;
  /**
   * Records the upstream objects an answer created, all in one write (group-committed with the
   * call's settlement): all of them or, when one is refused, none. The first account to record an
   * id keeps it (within `objects` too: the first of an id is the one kept).
   */
  recordObjects(objects: readonly UpstreamObject[]): Promise<void>;
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
  /** Keeps a turn of a Messages thread (an id already kept is left as it is). */
  saveThreadTurn(turn: ThreadTurn): Promise<void>;
  /**
   * The kept turn `id` and the ones it continued, newest first, as far back as `bound` allows (one
   * turn past the byte bound, so the caller can tell it was reached); [] when `id` is not kept.
   * Whose they are is the caller's to check.
   */
  threadChain(id: string, bound: ChainBound): Promise<ThreadTurn[]>;
  /** Forgets thread turns kept before `before` (ms since epoch); returns how many. */
  pruneThreadTurns(before: number): Promise<number>;
  usage(accountId: number): Promise<UsageSummary>;
  /** Settled spend per UTC day from `since` (ms since epoch) on, oldest first. */
  usageByDay(accountId: number, since: number): Promise<DayUsage[]>;
  /** Settled spend of every account per UTC day from `since` (ms since epoch) on, oldest first. */
  totalUsageByDay(since: number): Promise<DayUsage[]>;
  /**
   * The prompt cache's figures of settled calls created from `since` (ms since epoch) on, summed
   * per UTC day, model and miss cause: of one account, per key, when `accountId` is given; else of
   * every account (`keyId` null), in that order (calls without a miss before a cause's). Calls
   * whose charge recorded no input tokens are left out.
   */
  cacheUsage(since: number, accountId?: number): Promise<CacheUsageRow[]>;
  /**
   * Ledger entries, newest first: at most `limit`, with ids below `before` when given (the next
   * page), of one account when given.
   */
  ledgerPage(page: { accountId?: number; before?: number; limit: number }): Promise<LedgerEntry[]>;
  /**
   * Raises an alert unless the same one (its type, owner, period, window and threshold) was raised
   * before: resolves to its id when it is new, null when it was not — the one decision that makes
   * an alert once, whichever thread, process or replica raises it.
   */
  raiseAlert(alert: NewAlert): Promise<number | null>;
  /** Pending alerts whose next delivery is due at `now`, the longest due first, at most `limit`. */
  alertsDue(now: number, limit: number): Promise<Alert[]>;
  /** Records a delivery of a pending alert; false when it was not pending. */
  markAlert(id: number, outcome: AlertOutcome): Promise<boolean>;
  /**
   * Alerts, newest first: at most `limit`, with ids below `before` when given (the next page), of
   * one account when given.
   */
  listAlerts(page: { limit: number; before?: number; accountId?: number }): Promise<Alert[]>;
  /**
   * Budgets whose row's window has settled at least `percent` of their amount (0: every budget),
   * of active keys and of accounts; of only these keys' and accounts' when `of` is given.
   */
  spentBudgets(
    percent: number,
    of?: { keyIds: string[]; accountIds: number[] },
  ): Promise<SpentBudget[]>;
  /** Accounts whose balance is below `amount` nanoUSD (of only `accountIds` when given). */
  lowBalances(amount: number, accountIds?: number[]): Promise<LowBalance[]>;
  /** Keys neither revoked nor disabled that expire after `after` and by `until` (ms). */
  expiringKeys(after: number, until: number): Promise<KeyRecord[]>;
  /**
   * A store shared by several hosts counts requests per minute itself, for the key as a whole
   * (absent: each process counts its own, see `auth/ratelimit.ts`). Counts one request of `keyId`
   * when allowed.
   */
  countRequest?(keyId: string, limit: number): Promise<RateDecision>;
  /**
   * A store shared by several hosts keeps where conversations' prompt caches are, for every
   * replica (absent: a process's serving threads share them in memory only). `affinity` reads
   * conversation `id`'s placement (undefined when it has none, or one past its expiry), and
   * `saveAffinity` replaces it.
   */
  affinity?(id: string): Promise<AffinityRecord | undefined>;
  saveAffinity?(id: string, record: AffinityRecord): Promise<void>;
  /** Forgets placements that expired before `before` (ms since the epoch); returns how many. */
  pruneAffinity?(before: number): Promise<number>;
  /**
   * Whether this process should run the once-only background work now (video poller, recovery,
   * pruning) — on a store shared by several hosts, one of them at a time; absent: always.
   */
  leading?(): Promise<boolean>;
  /** Why the store cannot be reached now (for `/readyz`), or null when it can. */
  unreachable?(): string | null;
  /**
   * Called once by a serving process, before its serving threads open their own connections:
   * starts the store's own upkeep while it serves (SQLite: the log's checkpoints, on a thread of
   * their own when `serving.shared`, else on this one), and returns what the threads need to
   * share the store (SQLite: the process's write lock, when shared). `serving.onError` hears of a
   * failure of that upkeep.
   */
  prepareForServing?(serving: Serving): SharedArrayBuffer | undefined;
  close(): Promise<void> | void;
}
