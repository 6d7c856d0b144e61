/**
 * What the store keeps, as its interface (`store.ts`) reads and writes it: accounts, keys and their
 * limits, budgets, holds and charges, the ledger and usage reports, video jobs, upstream objects
 * and thread turns, alerts, conversations' placements — plain records, no behaviour but the error
 * a store throws while it cannot be reached.
 */
import type { Total } from "../money.ts";

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
  /** What the operator limits the account's keys to, together. */
  limits: AccountLimits;
}

/** A budget's window kind: 5-hour blocks, calendar days, weeks, months, or the whole lifetime. */
export type BudgetPeriod = "5h" | "day" | "week" | "month" | "total";

/** The budget periods, shortest first. */
export const BUDGET_PERIODS: readonly BudgetPeriod[] = ["5h", "day", "week", "month", "total"];

/** A budget: at most `amount` nanoUSD charged per window of `period`. */
export interface Budget {
  period: BudgetPeriod;
  amount: number;
}

/** Which models may be called: ids and `*` patterns allowed (none listed: all) and denied. */
export interface ModelAccess {
  allow?: string[];
  deny?: string[];
}

/** What an operator limits an account to (beyond its balance). */
export interface AccountLimits {
  /** At most one per period. */
  budgets?: Budget[];
  models?: ModelAccess;
}

/** What an operator limits a key to (beyond its account's limits and its requests per minute). */
export interface KeyLimits extends AccountLimits {
  /** Tokens per minute (input and output; held when a call starts, corrected when it ends). */
  tpm?: number;
  /** Calls in flight at most (calls that hold funds: a video job until it finishes). */
  maxConcurrent?: number;
  /** Addresses the key may be used from: IPv4/IPv6 addresses and CIDR ranges. */
  ips?: string[];
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
  /** A name for people (`intern-2026`). */
  name: string | null;
  /** Free-form string pairs the operator keeps with the key. */
  metadata: Record<string, string>;
  /** When the key stops working (ms since the epoch); null: never. */
  expiresAt: number | null;
  /** When it was disabled (it may be enabled again); null: enabled. */
  disabledAt: number | null;
  /** Its translated calls refuse to adapt what the target cannot express exactly (strict mode). */
  strict: boolean;
  /** When it was last used (kept to about a minute). */
  lastUsedAt: number | null;
  limits: KeyLimits;
  /** The account's own limits (read with the key, so a call needs one lookup). */
  accountLimits: AccountLimits;
  /** A rotated key's previous secret (its hash), still accepted until `previousUntil`. */
  previousHash: Uint8Array | null;
  previousUntil: number | null;
}

/** A key as it is created: what the store does not default. */
export type NewKey =
  & Pick<KeyRecord, "id" | "accountId" | "hash" | "prefix" | "rpm" | "createdAt">
  & Partial<Pick<KeyRecord, "name" | "metadata" | "expiresAt" | "limits" | "strict">>;

/** A change to a key: only the fields given change. */
export interface KeyPatch {
  name?: string | null;
  metadata?: Record<string, string>;
  expiresAt?: number | null;
  /** true: disable now (it stays disabled); false: enable. */
  disabled?: boolean;
  rpm?: number | null;
  limits?: KeyLimits;
  strict?: boolean;
}

/**
 * The windows a budget can be counted in at one instant, one per period (`total`: from the epoch,
 * never ending): computed by the caller (see `billing/windows.ts`), so the store keeps no clock
 * or time zone of its own.
 */
export type BudgetWindows = Record<BudgetPeriod, { start: number; end: number }>;

/** A budget as it stands: its limit, what its current window has spent and what calls hold. */
export interface BudgetState extends Budget {
  owner: "key" | "account";
  /** Settled in the current window, nanoUSD. */
  spent: number;
  /** Held by calls in flight, nanoUSD. */
  held: number;
  /** The current window: when it began and when it resets (ms since the epoch). */
  windowStart: number;
  resetsAt: number;
}

/**
 * The instant a limited hold is taken at (see `Store.reserveLimited`); the limits themselves are
 * read in the write, as the key and account have them then.
 */
export interface HoldLimits {
  /** The windows of this instant. */
  windows: BudgetWindows;
  /** The minute this instant is in (ms since the epoch, a multiple of 60,000). */
  minute: number;
  /** Tokens the call holds against the key's tokens per minute (input bound + output cap). */
  tokens: number;
}

/** Why a limited hold was refused. */
export type LimitRefusal =
  | { refused: "balance"; needed: number }
  | {
    refused: "budget";
    owner: "key" | "account";
    period: BudgetPeriod;
    amount: number;
    /** What the budget can still hold now (nanoUSD): a smaller call may fit. */
    room: number;
    resetsAt: number;
  }
  | { refused: "tpm"; limit: number; resetsAt: number; tooLarge: boolean }
  | { refused: "concurrency"; limit: number };

/** A limited hold taken: its entry, and the key's tokens this minute when it has a limit. */
export interface LimitedHold {
  id: number;
  tokens?: { limit: number; used: number; resetsAt: number };
}

/** One priced quantity of a charge, e.g. 1200 `input_tokens` costing 3000 nanoUSD. */
export interface UnitLine {
  unit: string;
  quantity: number;
  amount: number;
}

/**
 * A miss of the prompt cache the gateway caused (see `billing/cache.ts`): why, how many input
 * tokens the call would have read from the cache, and the money that estimate lost (nanoUSD).
 */
export interface CacheMissRecord {
  cause: string;
  tokens: number;
  lost: number;
}

/**
 * What a charge says of the prompt cache (see `billing/cache.ts`): the call's input tokens, those
 * read from the cache and those written to it (5-minute and 1-hour lifetimes), what the reads
 * saved (nanoUSD), and a miss the gateway caused (null: none known).
 */
export interface CacheCharge {
  /** Every input token of the call: uncached, read and written. */
  inputTokens: number;
  cachedTokens: number;
  cacheWriteTokens: number;
  cacheWrite1hTokens: number;
  /** The cached tokens at the input rate minus what they cost, nanoUSD. */
  saved: number;
  miss: CacheMissRecord | null;
}

/** What a call is charged: unit lines and their total. */
export interface Charge {
  units: UnitLine[];
  /** Total in nanoUSD; the sum of the unit lines. */
  amount: number;
  /** True when the usage was estimated because the upstream reported none. */
  estimated: boolean;
  /** What the prompt cache did for the call (absent: nothing known, as for a crash's estimate). */
  cache?: CacheCharge;
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

/**
 * The prompt cache's figures of settled calls summed over one UTC day, model and miss cause (and
 * key, see `Store.cacheUsage`). Amounts in nanoUSD.
 */
export interface CacheUsageRow {
  /** `YYYY-MM-DD` (UTC). */
  day: string;
  /** The calling key; null when the rows are not per key. */
  keyId: string | null;
  model: string;
  /** The cause of the misses the gateway caused, summed in this row; null: calls without one. */
  missCause: string | null;
  requests: number;
  inputTokens: Total;
  cachedTokens: Total;
  cacheWriteTokens: Total;
  cacheWrite1hTokens: Total;
  saved: Total;
  /** Input tokens the calls would have read but for the gateway. */
  missTokens: Total;
  lost: Total;
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
  /** What the prompt cache did for the call; null when its charge recorded no input tokens. */
  cache: CacheCharge | null;
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

/**
 * An upstream object (a stored response, a container, an item of a stored response) and the
 * account whose call created it.
 */
export interface UpstreamObject {
  id: string;
  accountId: number;
  kind: "response" | "container" | "item";
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
 * One turn of a Messages thread the gateway holds itself (its upstream could not): what the turn
 * added — its messages and the answer as canonical messages, and for the turn that created the
 * thread the system prompt and tools it keeps (JSON) — under the answer's id, linked to the answer
 * it continued.
 */
export interface ThreadTurn {
  id: string;
  accountId: number;
  previousId: string | null;
  /** JSON of what the turn added (see `pipeline/threads.ts`). */
  turn: string;
  createdAt: number;
}

/** What an alert is about: a budget's threshold, a low balance, a key about to expire. */
export type AlertType = "budget.threshold" | "balance.low" | "key.expiring";

/**
 * Where an alert's delivery stands: `pending` (to be delivered, or retried at `nextAttemptAt`),
 * `delivered`, `failed` (given up after its last retry), `unsent` (no webhook was configured when it
 * was raised: it is logged and listed only).
 */
export type AlertStatus = "pending" | "delivered" | "failed" | "unsent";

/**
 * An alert as it is raised. What it is about — `type`, `owner`, `period`, `windowStart`,
 * `threshold` — is unique: raising the same alert again (another thread, process or replica, a
 * later check) does nothing, so each is raised once.
 */
export interface NewAlert {
  type: AlertType;
  /** Whose: `key:<id>` or `account:<id>` (see `limits.ts`). */
  owner: string;
  /** A budget's period; "" for the other types. */
  period: string;
  /**
   * The instant it is about (ms since the epoch): a budget's window start, the start of a low
   * balance's episode (the account's last credit), a key's expiry.
   */
  windowStart: number;
  /** A budget's percent, a balance's amount (nanoUSD); 0 for expiry. */
  threshold: number;
  accountId: number;
  keyId: string | null;
  /** The event's own fields (what is delivered besides `id`, `type` and `created_at`). */
  payload: Record<string, unknown>;
  createdAt: number;
  /** `pending` when a webhook will deliver it (its first attempt at `createdAt`), else `unsent`. */
  status: "pending" | "unsent";
}

/** An alert as the store keeps it, with its delivery state. */
export interface Alert extends Omit<NewAlert, "status"> {
  id: number;
  status: AlertStatus;
  /** Deliveries tried so far. */
  attempts: number;
  /** When the next delivery is due (pending only). */
  nextAttemptAt: number | null;
  lastAttemptAt: number | null;
  /** Why the last delivery failed (never the webhook's address or the secret). */
  lastError: string | null;
  deliveredAt: number | null;
}

/** How one delivery of a pending alert went (each counts as an attempt). */
export type AlertOutcome =
  | { status: "delivered"; at: number }
  /** Failed; tried again at `nextAttemptAt`. */
  | { status: "pending"; at: number; error: string; nextAttemptAt: number }
  /** Failed for the last time. */
  | { status: "failed"; at: number; error: string };

/**
 * A budget as its row stands — in the window its last settlement or hold counted in, whatever the
 * clock says now — with the names an alert shows.
 */
export interface SpentBudget extends Budget {
  owner: "key" | "account";
  /** The key's id and name (a key's budget only). */
  keyId: string | null;
  keyName: string | null;
  accountId: number;
  accountName: string;
  /** Settled in the row's window, nanoUSD. */
  spent: number;
  held: number;
  /** The start of the row's window (ms since the epoch). */
  windowStart: number;
}

/** An account whose balance is below an amount, and since when it has been (its last credit). */
export interface LowBalance {
  accountId: number;
  accountName: string;
  balance: number;
  held: number;
  /** The account's last credit (or debit), or its creation when it has none: ms since the epoch. */
  since: number;
}

/**
 * The store cannot be reached now (a server database is down or cut off): a new call is refused
 * with 503 in the client's protocol, never served unbilled.
 */
export class StoreUnavailable extends Error {
  override name = "StoreUnavailable";
  /** The statement may have run all the same (the connection was lost while it was out). */
  readonly mayHaveRun: boolean;
  /**
   * A statement that did not answer in time is still out: this resolves when it answers after
   * all — true once it has run (committed), false when it failed — so what it wrote can be undone
   * then. It never rejects.
   */
  readonly late: Promise<boolean> | undefined;

  constructor(
    message: string,
    options: { mayHaveRun?: boolean; late?: Promise<boolean> } = {},
  ) {
    super(message);
    this.mayHaveRun = options.mayHaveRun ?? false;
    this.late = options.late;
  }
}

/** A value, or a promise of it: what a store answers at once from memory when it can. */
export type Awaitable<T> = T | Promise<T>;

/**
 * How far back `responseChain` (and `threadChain`) walks: at most `steps` answers and about `bytes`
 * of items.
 */
export interface ChainBound {
  steps: number;
  bytes: number;
}

/**
 * Where a conversation's prompt cache is, as replicas share it (see `pipeline/affinity.ts`): the
 * deployment (its name) and upstream key (its id) that served it last, and until when.
 */
export interface AffinityRecord {
  deployment: string;
  key: string;
  /** When the provider's cache runs out (ms since the epoch). */
  expiresAt: number;
}

/** A key's requests per minute: may one more be made, and what is left (`countRequest`). */
export interface RateDecision {
  allowed: boolean;
  /** 0 when unlimited. */
  limit: number;
  remaining: number;
  /** Milliseconds until one more request is allowed (0 when one is already allowed). */
  resetMs: number;
}
