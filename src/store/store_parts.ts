/**
 * The store's methods by job. Each implementation puts its `Store` together from one part per job,
 * in modules named for it: accounts and keys (`sqlite_accounts.ts`, `postgres_accounts.ts`), holds
 * and video jobs (`…_holds.ts`), reports from the ledger (`…_reports.ts`), upstream objects and kept
 * conversations (`…_objects.ts`), Messages threads (`…_threads.ts`), alerts (`…_alerts.ts`);
 * PostgreSQL's conversations' placements (`postgres_affinity.ts`).
 */
import type { Store } from "./store.ts";

/** Accounts and keys: creating and crediting accounts, their limits, keys and their settings. */
export type AccountsPart = Pick<
  Store,
  | "ensureAccount"
  | "account"
  | "listAccounts"
  | "credit"
  | "insertKey"
  | "updateKey"
  | "rotateKey"
  | "touchKeys"
  | "updateAccountLimits"
  | "findKey"
  | "listKeys"
  | "revokeKey"
>;

/** Holds: funds reserved before a call, their settlement, and video jobs (held until done). */
export type HoldsPart = Pick<
  Store,
  | "available"
  | "holdsOutstanding"
  | "budgets"
  | "reserve"
  | "reserveLimited"
  | "settle"
  | "pendingHolds"
  | "insertVideoJob"
  | "videoJob"
  | "pendingVideoJobs"
  | "finishVideoJob"
>;

/** Reports from the ledger: usage, spend by day, the prompt cache's figures, the ledger's pages. */
export type ReportsPart = Pick<
  Store,
  "usage" | "usageByDay" | "totalUsageByDay" | "cacheUsage" | "ledgerPage"
>;

/** Upstream objects and kept conversations. */
export type ObjectsPart = Pick<
  Store,
  | "recordObjects"
  | "upstreamObject"
  | "pruneObjects"
  | "saveResponse"
  | "responseChain"
  | "pruneResponses"
>;

/** Messages threads the gateway holds: their turns, kept, walked back and pruned. */
export type ThreadsPart = Pick<Store, "saveThreadTurn" | "threadChain" | "pruneThreadTurns">;

/** Alerts, and the checks that find what to alert on. */
export type AlertsPart = Pick<
  Store,
  | "raiseAlert"
  | "alertsDue"
  | "markAlert"
  | "listAlerts"
  | "spentBudgets"
  | "lowBalances"
  | "expiringKeys"
>;

/** Where conversations' prompt caches are, for a store several hosts share. */
export type AffinityPart = Required<Pick<Store, "affinity" | "saveAffinity" | "pruneAffinity">>;
