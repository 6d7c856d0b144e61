/**
 * The chains both stores keep — Responses conversations the gateway holds itself
 * (`stored_responses`) and Messages threads (`thread_turns`): rows that each link to the row they
 * continued, walked back from the newest within a bound. The walk is one recursive query, written
 * here once for both tables and both dialects.
 */

/** A table of linked rows (`id`, `previous_id`): its name, what the byte bound counts, what is read. */
export interface ChainTable {
  readonly table: string;
  /** The column whose length the byte bound counts. */
  readonly payload: string;
  /** The columns read of each row (see `rows.ts`). */
  readonly columns: readonly string[];
}

/** Kept Responses answers (see `Store.responseChain`, `toStoredResponse`). */
export const RESPONSES: ChainTable = {
  table: "stored_responses",
  payload: "items",
  columns: ["id", "account_id", "previous_id", "items", "context_tokens", "created_at"],
};

/** Kept Messages turns (see `Store.threadChain`, `toThreadTurn`). */
export const THREADS: ChainTable = {
  table: "thread_turns",
  payload: "turn",
  columns: ["id", "account_id", "previous_id", "turn", "created_at"],
};

/**
 * The query that walks back from a row while within the bounds (one step past the byte bound, so
 * the caller can tell it was reached), newest first. Its parameters, numbered in the dialect's
 * way: the id to start from, the most steps, the bytes.
 */
export function chainQuery(chain: ChainTable, dialect: "sqlite" | "postgres"): string {
  const [id, steps, bytes] = dialect === "sqlite" ? ["?1", "?2", "?3"] : ["$1", "$2", "$3"];
  // PostgreSQL's length() is an integer; the running sum may pass it.
  const length = dialect === "sqlite"
    ? `length(${chain.payload})`
    : `length(${chain.payload})::bigint`;
  const { table, payload } = chain;
  return `WITH RECURSIVE chain (id, previous_id, n, bytes) AS (
      SELECT id, previous_id, 1, ${length} FROM ${table} WHERE id = ${id}
      UNION ALL
      SELECT r.id, r.previous_id, c.n + 1, c.bytes + length(r.${payload})
      FROM chain c JOIN ${table} r ON r.id = c.previous_id
      WHERE c.n < ${steps} AND c.bytes <= ${bytes}
    )
    SELECT ${chain.columns.map((column) => `r.${column}`).join(", ")}
    FROM chain c JOIN ${table} r ON r.id = c.id ORDER BY c.n`;
}
