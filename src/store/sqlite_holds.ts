/**
 * Holds in the SQLite store: the funds a call reserves before it is made — against the balance,
 * and for a key or account with limits against its budgets, calls in flight and tokens per minute
 * (`limits.ts` decides) — their settlement, exactly once, into the call's charge, the holds left
 * by processes that died, and video jobs, whose hold lasts until the job finishes. A held ledger
 * row moves the account's funds itself (its triggers, see the schema).
 */
import type { BudgetWindows, Charge, NewHold } from "./store.ts";
import {
  checkCharge,
  checkHold,
  checkVideoJob,
  checkVideoOutcome,
  MAX_BALANCE,
} from "./amounts.ts";
import {
  accountOwner,
  budgetStates,
  type HoldMark,
  keyOwner,
  markedBudgets,
  markOf,
  planHoldOn,
  settledBudget,
  tokensBack,
  utcWindows,
} from "./limits.ts";
import {
  ACCOUNT_COLUMNS,
  BUDGET_COLUMNS,
  cacheValues,
  type Row,
  toBudgetRow,
  toVideoJob,
} from "./rows.ts";
import { answer, type SqliteConnection } from "./sqlite_connection.ts";
import type { HoldsPart } from "./store_parts.ts";

/** The holds and video jobs of the store on `c`. */
export function sqliteHolds(c: SqliteConnection): HoldsPart {
  const s = c.prepare({
    accountById: `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`,
    available: `SELECT min(balance - held, ${MAX_BALANCE}) AS available FROM accounts WHERE id = ?`,
    // The available balance is checked and the row written in one statement (the trigger
    // `ledger_hold` reserves); a zero hold is always taken.
    hold: `INSERT INTO ledger (kind, status, request_id, key_id, account_id, endpoint, model,
                           provider, reserved, amount, estimate, created_at, owner,
                           upstream_model)
       SELECT 'charge', 'held', ?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8, ?9, ?10, ?11 FROM accounts
       WHERE id = ?3 AND ?7 >= 0 AND (?7 = 0 OR balance - held >= ?7)`,
    // A limited hold: the limits were checked in the same write (see `reserveLimited`).
    holdMarked: `INSERT INTO ledger (kind, status, request_id, key_id, account_id, endpoint, model,
                           provider, reserved, amount, estimate, created_at, owner,
                           upstream_model, limits)
       SELECT 'charge', 'held', ?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8, ?9, ?10, ?11, ?12
       FROM accounts WHERE id = ?3 AND ?7 >= 0 AND (?7 = 0 OR balance - held >= ?7)`,
    // What a limited hold counted comes back with its settlement (null for the others).
    settleHold: `UPDATE ledger SET status = 'settled', amount = ?, units = ?, estimated = ?,
                         settled_at = ?, input_tokens = ?, cached_tokens = ?,
                         cache_write_tokens = ?, cache_write_1h_tokens = ?, cache_saved = ?,
                         cache_miss = ?, cache_miss_tokens = ?, cache_lost = ?
       WHERE id = ? AND status = 'held' RETURNING limits, reserved, key_id`,
    deleteHold:
      `DELETE FROM ledger WHERE id = ? AND status = 'held' RETURNING limits, reserved, key_id`,
    budgetRows: `SELECT ${BUDGET_COLUMNS} FROM budgets WHERE owner IN (?, ?)`,
    budgetRow: `SELECT ${BUDGET_COLUMNS} FROM budgets WHERE owner = ? AND period = ?`,
    putBudget: `UPDATE budgets SET held = ?, window_start = ?, window_spent = ?
       WHERE owner = ? AND period = ?`,
    keyCounts: `SELECT limits, in_flight, tpm_minute, tpm_tokens FROM keys WHERE id = ?`,
    putKeyCounts: `UPDATE keys SET in_flight = ?, tpm_minute = ?, tpm_tokens = ? WHERE id = ?`,
    leaveFlight: `UPDATE keys SET in_flight = max(0, in_flight - 1) WHERE id = ?`,
    correctTokens:
      `UPDATE keys SET tpm_tokens = max(0, tpm_tokens + ?) WHERE id = ? AND tpm_minute = ?`,
    holds: `SELECT id, account_id, estimate, owner FROM ledger INDEXED BY ledger_held
       WHERE kind = 'charge' AND status = 'held'
         AND id NOT IN (SELECT ledger_id FROM video_jobs WHERE status = 'pending')
       ORDER BY id`,
    heldCount: `SELECT count(*) AS n FROM ledger INDEXED BY ledger_held WHERE status = 'held'`,
    insertVideoJob: `INSERT INTO video_jobs (id, upstream_id, account_id, key_id, ledger_id, model,
                               provider, rate, held_seconds, status, created_at, upstream_key)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
    videoJob: `SELECT * FROM video_jobs WHERE id = ?`,
    pendingVideoJobs:
      `SELECT * FROM video_jobs WHERE status = 'pending' ORDER BY created_at LIMIT ?`,
    finishVideoJob: `UPDATE video_jobs SET status = ?, billed_seconds = ?, amount = ?, result = ?,
                             finished_at = ?
       WHERE id = ? AND status = 'pending' RETURNING ledger_id`,
  }, ["accountById"]);

  /** A hold's ledger row, as the `hold` statement takes it (`holdMarked`: its mark after). */
  const holdRow = (h: NewHold) =>
    [
      h.requestId,
      h.keyId,
      h.accountId,
      h.endpoint,
      h.model,
      h.provider,
      h.reserve,
      JSON.stringify(h.estimate),
      Date.now(),
      c.owner,
      h.upstreamModel ?? null,
    ] as const;

  /** Gives back what a limited hold counted (see `Store.settle`). */
  const giveBack = (
    mark: HoldMark,
    keyId: string,
    reserved: number,
    charge: Charge | null,
    windows = utcWindows(Date.now()),
  ): void => {
    const amount = charge?.amount ?? 0;
    for (const { owner, period } of markedBudgets(mark)) {
      const found = s.budgetRow.get(owner, period) as Row | undefined;
      if (!found) continue; // the budget was removed meanwhile
      const after = settledBudget(toBudgetRow(found), reserved, amount, windows);
      s.putBudget.run(after.held, after.windowStart, after.windowSpent, after.owner, after.period);
    }
    if (mark.c) s.leaveFlight.run(keyId);
    const tokens = tokensBack(mark, charge);
    if (tokens) s.correctTokens.run(tokens.change, keyId, tokens.minute);
  };

  /**
   * One statement (the row's triggers move the funds, see migration 8), and for a limited hold
   * what it counted given back (see `limits.ts`).
   */
  const settle = (id: number, charge: Charge | null, windows?: BudgetWindows): boolean => {
    const row = (charge
      ? s.settleHold.get(
        charge.amount,
        JSON.stringify(charge.units),
        charge.estimated ? 1 : 0,
        Date.now(),
        ...cacheValues(charge),
        id,
      )
      : s.deleteHold.get(id)) as Row | undefined;
    if (!row) return false;
    const mark = markOf(row.limits);
    if (mark) giveBack(mark, String(row.key_id), Number(row.reserved), charge, windows);
    return true;
  };

  return {
    available: (accountId) =>
      answer(() => {
        const row = s.available.get(accountId) as Row | undefined;
        return row ? Number(row.available) : 0;
      }),

    holdsOutstanding: () => answer(() => Number((s.heldCount.get() as Row).n)),

    budgets: (keyId, accountId, windows) =>
      answer(() => {
        const rows = s.budgetRows.all(
          keyId === null ? "" : keyOwner(keyId),
          accountOwner(accountId),
        ) as Row[];
        return budgetStates(rows.map(toBudgetRow), windows);
      }),

    // The two writes of every call: their promise is the write's own (no async frame around it).
    reserve: (h) =>
      answer(() => {
        checkHold(h);
        return c.write(() => {
          const written = s.hold.run(...holdRow(h));
          return Number(written.changes) === 1 ? Number(written.lastInsertRowid) : null;
        });
      }),

    async reserveLimited(h, at) {
      checkHold(h);
      return await c.write(() => {
        const account = s.accountById.get(h.accountId) as Row | undefined;
        const key = s.keyCounts.get(h.keyId) as Row | undefined;
        if (!account) return { refused: "balance", needed: h.reserve } as const;
        const rows = (s.budgetRows.all(keyOwner(h.keyId), accountOwner(h.accountId)) as Row[])
          .map(toBudgetRow);
        const plan = planHoldOn(h.reserve, account, key, rows, at);
        if ("refused" in plan) return plan;
        const written = s.holdMarked.run(...holdRow(h), JSON.stringify(plan.mark));
        if (Number(written.changes) !== 1) {
          return { refused: "balance", needed: h.reserve } as const;
        }
        for (const row of plan.budgets) {
          s.putBudget.run(row.held, row.windowStart, row.windowSpent, row.owner, row.period);
        }
        if (key && (plan.mark.c || plan.mark.t !== undefined)) {
          const counts = plan.counts;
          s.putKeyCounts.run(counts.inFlight, counts.tpmMinute, counts.tpmTokens, h.keyId);
        }
        return {
          id: Number(written.lastInsertRowid),
          ...(plan.tokens ? { tokens: plan.tokens } : {}),
        };
      }, true);
    },

    settle: (id, charge, windows) =>
      answer(() => {
        checkCharge(charge);
        return c.write(() => settle(id, charge, windows));
      }),

    /**
     * Held entries whose owner is gone: no owner (older rows), or an owner whose lock can be
     * taken (its process died). The holds of live processes — this one's included — are left
     * alone.
     */
    pendingHolds: () =>
      answer(() => {
        const alive = new Map<string, boolean>();
        const gone = (owner: unknown): boolean => {
          if (owner === null) return true;
          const id = String(owner);
          if (id === c.owner) return false;
          if (!alive.has(id)) alive.set(id, c.locks?.alive(id) ?? false);
          return !alive.get(id);
        };
        const holds = (s.holds.all() as Row[]).filter((row) => gone(row.owner));
        c.locks?.sweep(new Set([...alive].filter(([, live]) => live).map(([id]) => id)));
        return holds.map((row) => ({
          id: Number(row.id),
          accountId: Number(row.account_id),
          estimate: JSON.parse(String(row.estimate)),
        }));
      }),

    async insertVideoJob(job) {
      checkVideoJob(job);
      await c.write(() =>
        s.insertVideoJob.run(
          job.id,
          job.upstreamId,
          job.accountId,
          job.keyId,
          job.ledgerId,
          job.model,
          job.provider,
          job.rate,
          job.heldSeconds,
          job.createdAt,
          job.upstreamKey ?? null,
        )
      );
    },

    videoJob: (id) =>
      answer(() => {
        const row = s.videoJob.get(id) as Row | undefined;
        return row && toVideoJob(row);
      }),

    pendingVideoJobs: (limit) =>
      answer(() => (s.pendingVideoJobs.all(limit) as Row[]).map(toVideoJob)),

    async finishVideoJob(id, outcome, windows) {
      checkVideoOutcome(outcome);
      return await c.write(() => {
        const done = outcome.status === "done";
        const row = s.finishVideoJob.get(
          outcome.status,
          done ? outcome.billedSeconds ?? 0 : null,
          done ? outcome.charge?.amount ?? 0 : null,
          outcome.result,
          Date.now(),
          id,
        ) as Row | undefined;
        if (!row) return false;
        settle(Number(row.ledger_id), done ? outcome.charge! : null, windows);
        return true;
      }, true);
    },
  };
}
