/**
 * Holds in the PostgreSQL store: the funds a call reserves before it is made — by a conditional
 * `UPDATE … WHERE balance - held >= amount`, and for a key or account with limits in a
 * transaction that locks the account, budget and key rows (`limits.ts` decides) — their
 * settlement, which moves the funds in the statement that settles the ledger row, only while the
 * row is held, so it happens once whichever replica gets there first; the holds of processes that
 * died; and video jobs, whose hold lasts until the job finishes. While the database is away,
 * settlements and submitted jobs wait in the spool (`postgres_spool.ts`).
 */
import type { BudgetWindows, Charge, PendingHold, VideoJob } from "./store.ts";
import { StoreUnavailable } from "./store.ts";
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
import { BUDGET_COLUMNS, cacheValues, toBudgetRow, toVideoJob } from "./rows.ts";
import { type PgConnection, REPORT_TIMEOUT_MS, type Tx } from "./postgres_connection.ts";
import type { PgOwners } from "./postgres_owners.ts";
import type { Deferred, Spool } from "./postgres_spool.ts";
import type { HoldsPart } from "./store_parts.ts";

/**
 * The holds and video jobs of the store on `c`, marked with the owner this process registered as
 * (`owners`); what cannot be written while the database is away waits in `spool`.
 */
export function postgresHolds(c: PgConnection, owners: PgOwners, spool: Spool): HoldsPart {
  const { sql } = c;
  const BUDGET = sql.unsafe(BUDGET_COLUMNS);

  /** The cache columns of a settlement (see `cacheValues`), as `SET` assignments. */
  const cacheSet = (charge: Charge) => {
    const [input, cached, write, write1h, saved, miss, missTokens, lost] = cacheValues(charge);
    return sql`input_tokens = ${input}, cached_tokens = ${cached},
      cache_write_tokens = ${write}, cache_write_1h_tokens = ${write1h},
      cache_saved = ${saved}::bigint, cache_miss = ${miss}, cache_miss_tokens = ${missTokens},
      cache_lost = ${lost}::bigint`;
  };

  /** Gives back what a limited hold counted (see `Store.settle`), in `tx`. */
  const giveBack = async (
    tx: Tx,
    mark: HoldMark,
    keyId: string,
    reserved: number,
    charge: Charge | null,
    windows: BudgetWindows,
  ): Promise<void> => {
    for (const { owner, period } of markedBudgets(mark)) {
      const [found] = await tx`
        SELECT ${BUDGET} FROM budgets WHERE owner = ${owner} AND period = ${period} FOR UPDATE`;
      if (!found) continue; // the budget was removed meanwhile
      const b = settledBudget(toBudgetRow(found), reserved, charge?.amount ?? 0, windows);
      await tx`UPDATE budgets SET held = ${b.held}, window_start = ${b.windowStart},
                      window_spent = ${b.windowSpent}
               WHERE owner = ${b.owner} AND period = ${b.period}`;
    }
    if (mark.c) {
      await tx`UPDATE keys SET in_flight = greatest(0, in_flight - 1) WHERE id = ${keyId}`;
    }
    const tokens = tokensBack(mark, charge);
    if (tokens) {
      await tx`UPDATE keys SET tpm_tokens = greatest(0, tpm_tokens + ${tokens.change})
               WHERE id = ${keyId} AND tpm_minute = ${tokens.minute}`;
    }
  };

  /**
   * Settles a limited hold in `tx` (false when it is not held): the ledger row, the account's,
   * then its budget rows and its key's — the order `reserveLimited` locks them in.
   */
  const settleLimited = async (
    tx: Tx,
    id: number,
    charge: Charge | null,
    windows: BudgetWindows,
  ): Promise<boolean> => {
    const now = Date.now();
    const [row] = charge
      ? await tx`
        UPDATE ledger SET status = 'settled', amount = ${charge.amount}::bigint,
                          units = ${c.json(charge.units)}, estimated = ${charge.estimated},
                          settled_at = ${now}, ${cacheSet(charge)}
        WHERE id = ${id} AND status = 'held' RETURNING account_id, reserved, key_id, limits`
      : await tx`
        DELETE FROM ledger WHERE id = ${id} AND status = 'held'
        RETURNING account_id, reserved, key_id, limits`;
    if (!row) return false;
    const amount = charge?.amount ?? 0;
    await tx`
      UPDATE accounts SET held = held - ${row.reserved}::bigint,
                          balance = balance - ${amount}::bigint, spent = spent + ${amount}::bigint
      WHERE id = ${row.account_id}`;
    const mark = markOf(row.limits);
    if (!mark) return true;
    await giveBack(tx, mark, String(row.key_id), Number(row.reserved), charge, windows);
    return true;
  };

  /** The one-statement settlement of a hold that counted nothing; false when there is none. */
  const settlePlain = async (id: number, charge: Charge | null): Promise<boolean> => {
    const now = Date.now();
    const [row] = charge
      ? await c.run(sql`
        WITH l AS (
          UPDATE ledger SET status = 'settled', amount = ${charge.amount}::bigint,
                            units = ${c.json(charge.units)},
                            estimated = ${charge.estimated}, settled_at = ${now},
                            ${cacheSet(charge)}
          WHERE id = ${id} AND status = 'held' AND limits IS NULL RETURNING account_id, reserved
        ), a AS (
          UPDATE accounts SET held = accounts.held - l.reserved,
                              balance = accounts.balance - ${charge.amount}::bigint,
                              spent = accounts.spent + ${charge.amount}::bigint
          FROM l WHERE accounts.id = l.account_id RETURNING 1
        )
        SELECT count(*) AS n FROM a`)
      : await c.run(sql`
        WITH l AS (
          DELETE FROM ledger WHERE id = ${id} AND status = 'held' AND limits IS NULL
          RETURNING account_id, reserved
        ), a AS (
          UPDATE accounts SET held = accounts.held - l.reserved
          FROM l WHERE accounts.id = l.account_id RETURNING 1
        )
        SELECT count(*) AS n FROM a`);
    return Number(row.n) === 1;
  };

  /**
   * One statement for a hold that counted nothing; a limited hold (found when that statement
   * settles nothing) in a transaction of its own (see `settleLimited`).
   */
  const settle = async (
    id: number,
    charge: Charge | null,
    windows?: BudgetWindows,
  ): Promise<boolean> => {
    if (await settlePlain(id, charge)) return true;
    return await c.run(
      sql.begin((tx) => settleLimited(tx, id, charge, windows ?? utcWindows(Date.now()))),
    );
  };

  const insertVideoJob = async (job: VideoJob): Promise<void> => {
    await c.run(sql`
      INSERT INTO video_jobs (id, upstream_id, account_id, key_id, ledger_id, model, provider,
                              upstream_key, rate, held_seconds, status, created_at)
      VALUES (${job.id}, ${job.upstreamId}, ${job.accountId}, ${job.keyId}, ${job.ledgerId},
              ${job.model}, ${job.provider}, ${job.upstreamKey ?? null}, ${job.rate},
              ${job.heldSeconds}, 'pending', ${job.createdAt})
      ON CONFLICT (id) DO NOTHING`);
  };

  /** A hold whose answer was lost with the connection may have been written: released later. */
  const releaseLater = (token: string) => (error: unknown): never => {
    // The call is refused (503), so whatever it holds is released once the database is back —
    // and once more if the statement lands after that release looked for it.
    if (error instanceof StoreUnavailable && error.mayHaveRun) {
      spool.defer({ token });
      error.late?.then((ran) => {
        if (ran) spool.defer({ token });
      });
    }
    throw error;
  };

  spool.writeWith(async (deferred: Deferred) => {
    if ("id" in deferred) {
      await settle(deferred.id, deferred.charge, deferred.windows);
      return;
    }
    if ("job" in deferred) {
      await insertVideoJob(deferred.job);
      return;
    }
    const [row] = await c.run(sql`
      SELECT id FROM ledger WHERE token = ${deferred.token} AND status = 'held'`);
    if (row) await settle(Number(row.id), null);
  });

  return {
    async available(accountId) {
      const [row] = await c.run(sql`
        SELECT least(balance - held, ${MAX_BALANCE}::bigint) AS available FROM accounts
        WHERE id = ${accountId}`);
      return row ? Number(row.available) : 0;
    },

    async holdsOutstanding() {
      const [row] = await c.run(sql`SELECT count(*) AS n FROM ledger WHERE status = 'held'`);
      return Number(row.n);
    },

    async budgets(keyId, accountId, windows) {
      const rows = await c.run(sql`
        SELECT ${BUDGET} FROM budgets
        WHERE owner IN (${keyId === null ? "" : keyOwner(keyId)}, ${accountOwner(accountId)})`);
      return budgetStates(rows.map(toBudgetRow), windows);
    },

    async reserve(h) {
      checkHold(h);
      const token = crypto.randomUUID();
      const [row] = await c.run(sql`
        WITH a AS (
          UPDATE accounts SET held = held + ${h.reserve}::bigint
          WHERE id = ${h.accountId}
            AND (${h.reserve}::bigint = 0 OR balance - held >= ${h.reserve})
          RETURNING id
        )
        INSERT INTO ledger (kind, status, request_id, key_id, account_id, endpoint, model,
                            provider, upstream_model, reserved, amount, estimate, owner, token,
                            created_at)
        SELECT 'charge', 'held', ${h.requestId}, ${h.keyId}, id, ${h.endpoint}, ${h.model},
               ${h.provider}, ${h.upstreamModel ?? null}, ${h.reserve}, 0,
               ${c.json(h.estimate)}, ${owners.id}, ${token}, ${Date.now()}
        FROM a RETURNING id`).catch(releaseLater(token));
      return row ? Number(row.id) : null;
    },

    /**
     * A limited hold, in one transaction: the account's row, then its budget rows and the key's
     * row are locked — in the order a limited settlement takes them too, so the two never
     * deadlock — the decision is `planHold`'s (see `limits.ts`), and the hold is written with
     * its mark.
     */
    async reserveLimited(h, at) {
      checkHold(h);
      const token = crypto.randomUUID();
      return await c.run(sql.begin(async (tx) => {
        const [account] = await tx`
          SELECT balance, held FROM accounts WHERE id = ${h.accountId} FOR UPDATE`;
        if (!account) return { refused: "balance", needed: h.reserve } as const;
        const rows = (await tx`
          SELECT ${BUDGET} FROM budgets
          WHERE owner IN (${keyOwner(h.keyId)}, ${accountOwner(h.accountId)})
          ORDER BY owner, period FOR UPDATE`).map(toBudgetRow);
        const [key] = await tx`
          SELECT limits, in_flight, tpm_minute, tpm_tokens FROM keys WHERE id = ${h.keyId}
          FOR UPDATE`;
        const plan = planHoldOn(h.reserve, account, key, rows, at);
        if ("refused" in plan) return plan;
        await tx`UPDATE accounts SET held = held + ${h.reserve}::bigint WHERE id = ${h.accountId}`;
        const [row] = await tx`
          INSERT INTO ledger (kind, status, request_id, key_id, account_id, endpoint, model,
                              provider, upstream_model, reserved, amount, estimate, owner, token,
                              created_at, limits)
          VALUES ('charge', 'held', ${h.requestId}, ${h.keyId}, ${h.accountId}, ${h.endpoint},
                  ${h.model}, ${h.provider}, ${h.upstreamModel ?? null}, ${h.reserve}, 0,
                  ${c.json(h.estimate)}, ${owners.id}, ${token}, ${Date.now()},
                  ${c.json(plan.mark)})
          RETURNING id`;
        for (const b of plan.budgets) {
          await tx`UPDATE budgets SET held = ${b.held}, window_start = ${b.windowStart},
                          window_spent = ${b.windowSpent}
                   WHERE owner = ${b.owner} AND period = ${b.period}`;
        }
        if (key && (plan.mark.c || plan.mark.t !== undefined)) {
          const counts = plan.counts;
          await tx`UPDATE keys SET in_flight = ${counts.inFlight},
                          tpm_minute = ${counts.tpmMinute}, tpm_tokens = ${counts.tpmTokens}
                   WHERE id = ${h.keyId}`;
        }
        return { id: Number(row.id), ...(plan.tokens ? { tokens: plan.tokens } : {}) };
      })).catch(releaseLater(token));
    },

    /**
     * Settles now, or — the database being away — queues the settlement (resolving true: it
     * will be written once, when the database is back).
     */
    async settle(id, charge, windows) {
      checkCharge(charge); // before anything is written, or queued
      const at = windows ?? utcWindows(Date.now());
      try {
        return await settle(id, charge, at);
      } catch (error) {
        if (!(error instanceof StoreUnavailable)) throw error;
        spool.defer({ id, charge, windows: at });
        return true;
      }
    },

    async pendingHolds() {
      const rows = await c.run(
        sql`
        SELECT l.id, l.account_id, l.estimate, l.owner FROM ledger l
        WHERE l.status = 'held' AND l.kind = 'charge'
          AND NOT EXISTS (SELECT 1 FROM video_jobs v WHERE v.ledger_id = l.id
                            AND v.status = 'pending')
        ORDER BY l.id`,
        REPORT_TIMEOUT_MS,
      );
      const gone = new Map<number, boolean>();
      for (const row of rows) {
        if (row.owner === null || Number(row.owner) === owners.id) continue;
        const owner = Number(row.owner);
        if (!gone.has(owner)) gone.set(owner, await owners.gone(owner));
      }
      return rows
        .filter((row) => row.owner === null || gone.get(Number(row.owner)))
        .map((row) => ({
          id: Number(row.id),
          accountId: Number(row.account_id),
          estimate: row.estimate as PendingHold["estimate"],
        }));
    },

    /**
     * Records the job; while the database is away, the record waits with the settlements (its
     * upstream job exists and its funds are held, so the client gets its id all the same).
     */
    async insertVideoJob(job) {
      checkVideoJob(job);
      try {
        await insertVideoJob(job);
      } catch (error) {
        if (!(error instanceof StoreUnavailable)) throw error;
        spool.defer({ job });
      }
    },

    async videoJob(id) {
      const [row] = await c.run(sql`SELECT * FROM video_jobs WHERE id = ${id}`);
      return row && toVideoJob(row);
    },

    async pendingVideoJobs(limit) {
      const rows = await c.run(sql`
        SELECT * FROM video_jobs WHERE status = 'pending' ORDER BY created_at LIMIT ${limit}`);
      return rows.map(toVideoJob);
    },

    /** One statement: the job, its ledger row and the account's funds move together, once. */
    async finishVideoJob(id, outcome, windows) {
      checkVideoOutcome(outcome);
      const done = outcome.status === "done";
      const amount = done ? outcome.charge?.amount ?? 0 : null;
      const now = Date.now();
      const [limited] = await c.run(sql`
        SELECT 1 FROM video_jobs j JOIN ledger l ON l.id = j.ledger_id
        WHERE j.id = ${id} AND j.status = 'pending' AND l.limits IS NOT NULL`);
      if (limited) {
        // A limited hold gives back what it counted, in one transaction with the job.
        return await c.run(sql.begin(async (tx) => {
          const [job] = await tx`
            UPDATE video_jobs SET status = ${outcome.status},
                   billed_seconds = ${done ? outcome.billedSeconds ?? 0 : null},
                   amount = ${amount}::bigint, result = ${outcome.result}, finished_at = ${now}
            WHERE id = ${id} AND status = 'pending' RETURNING ledger_id`;
          if (!job) return false;
          const charge = done ? outcome.charge! : null;
          await settleLimited(tx, Number(job.ledger_id), charge, windows ?? utcWindows(now));
          return true;
        }));
      }
      const finish = sql`
        UPDATE video_jobs SET status = ${outcome.status},
               billed_seconds = ${done ? outcome.billedSeconds ?? 0 : null},
               amount = ${amount}::bigint, result = ${outcome.result}, finished_at = ${now}
        WHERE id = ${id} AND status = 'pending' RETURNING ledger_id`;
      const [row] = done
        ? await c.run(sql`
          WITH j AS (${finish}), l AS (
            UPDATE ledger SET status = 'settled', amount = ${amount}::bigint,
                   units = ${c.json(outcome.charge?.units ?? [])},
                   estimated = ${outcome.charge?.estimated ?? false}, settled_at = ${now}
            WHERE id IN (SELECT ledger_id FROM j) AND status = 'held'
            RETURNING account_id, reserved
          ), a AS (
            UPDATE accounts SET held = accounts.held - l.reserved,
                                balance = accounts.balance - ${amount}::bigint,
                                spent = accounts.spent + ${amount}::bigint
            FROM l WHERE accounts.id = l.account_id RETURNING 1
          )
          SELECT (SELECT count(*) FROM j) AS n, (SELECT count(*) FROM a) AS moved`)
        : await c.run(sql`
          WITH j AS (${finish}), l AS (
            DELETE FROM ledger WHERE id IN (SELECT ledger_id FROM j) AND status = 'held'
            RETURNING account_id, reserved
          ), a AS (
            UPDATE accounts SET held = accounts.held - l.reserved
            FROM l WHERE accounts.id = l.account_id RETURNING 1
          )
          SELECT (SELECT count(*) FROM j) AS n, (SELECT count(*) FROM a) AS moved`);
      return Number(row.n) === 1;
    },
  };
}
