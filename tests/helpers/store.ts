/**
 * The books of a gateway under test, read through the store's own interface (`src/store/store.ts`)
 * — not hand-written SQL against its schema: the SQLite file in the gateway's working directory,
 * or the PostgreSQL database it shares with its replicas.
 */
import { openStore } from "../../src/store/open.ts";
import { waitFor } from "./poll.ts";
import type { Account, LedgerEntry, Store } from "../../src/store/store.ts";

/**
 * Where a gateway keeps its store: its working directory (SQLite under `data/`), a SQLite file, or
 * a PostgreSQL URL.
 */
export type StoreAt = { dir: string } | { file: string } | string;

/** Opens the store at `where` (a reader beside the gateway: it owns no holds). */
export async function openTestStore(where: StoreAt): Promise<Store> {
  if (typeof where !== "string") {
    const dbPath = "file" in where ? where.file : `${where.dir}/data/switchyard.db`;
    return await openStore({ dbPath, dbUrl: null, dbPoolSize: 1 });
  }
  // PostgreSQL: a spool directory of its own (a reader never writes one), removed on close.
  const dir = await Deno.makeTempDir({ prefix: "switchyard-reader-" });
  const store = await openStore({ dbPath: `${dir}/switchyard.db`, dbUrl: where, dbPoolSize: 2 });
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  return store;
}

/** Runs `read` on the store at `where`, closing it after. */
export async function withStore<T>(where: StoreAt, read: (store: Store) => Promise<T>): Promise<T> {
  const store = await openTestStore(where);
  try {
    return await read(store);
  } finally {
    await store.close();
  }
}

/** Every ledger entry of the account (or of all), newest first, page by page. */
async function allEntries(store: Store, accountId?: number): Promise<LedgerEntry[]> {
  const entries: LedgerEntry[] = [];
  let before: number | undefined;
  for (;;) {
    const page = await store.ledgerPage({ accountId, before, limit: 1000 });
    entries.push(...page);
    if (page.length < 1000) return entries;
    before = page.at(-1)!.id;
  }
}

/** Every ledger entry (newest first), of one account or of all; of one request when asked. */
export function ledgerOf(
  where: StoreAt,
  filter: { account?: string; requestId?: string } = {},
): Promise<LedgerEntry[]> {
  return withStore(where, async (store) => {
    let accountId: number | undefined;
    if (filter.account !== undefined) {
      const account = await store.account(filter.account);
      if (!account) return [];
      accountId = account.id;
    }
    const entries = await allEntries(store, accountId);
    return filter.requestId === undefined
      ? entries
      : entries.filter((e) => e.requestId === filter.requestId);
  });
}

/** The settled ledger entry of a request, once it is (a stream settles as it ends). */
export async function settledEntry(where: StoreAt, requestId: string): Promise<LedgerEntry> {
  return await waitFor(async () => {
    const [entry] = await ledgerOf(where, { requestId });
    return entry?.status === "settled" && entry;
  }, { what: `the settlement of ${requestId}` });
}

/** An account and its ledger added up (amounts in nanoUSD, as numbers). */
export interface Books {
  balance: number;
  held: number;
  spent: number;
  /** The settled charges' sum, and their count. */
  charged: number;
  settled: number;
  /** Charges still held (calls in flight, or holds a crash left). */
  open: number;
  /** The credits' sum (negative credits included). */
  credited: number;
  entries: LedgerEntry[];
}

/** The books of `account` (which must exist). */
export function booksOf(where: StoreAt, account: string): Promise<Books> {
  return withStore(where, async (store) => {
    const row: Account | undefined = await store.account(account);
    if (!row) throw new Error(`no account named ${account}`);
    const entries = await allEntries(store, row.id);
    const charges = entries.filter((e) => e.kind === "charge");
    const settled = charges.filter((e) => e.status === "settled");
    const sum = (list: LedgerEntry[]) => list.reduce((total, e) => total + Number(e.amount), 0);
    return {
      balance: Number(row.balance),
      held: Number(row.held),
      spent: Number(row.spent),
      charged: sum(settled),
      settled: settled.length,
      open: charges.length - settled.length,
      credited: sum(entries.filter((e) => e.kind === "credit")),
      entries,
    };
  });
}
