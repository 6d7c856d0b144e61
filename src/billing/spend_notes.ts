/**
 * Who just spent (a call of theirs settled) or was refused by a budget: noted on the request path —
 * one map entry, nothing awaited, nothing read — and handed to whoever listens (the alerts, see
 * `alerts/watch.ts`) every `BATCH_MS`. A serving thread hands its notes to the main
 * thread (`serve/worker.ts`), which passes them on as its own (`passNotes`). With no listener in
 * the thread, nothing is kept. Notes past `MAX_NOTES` in one batch are dropped: the listener's
 * periodic sweep finds what they were about all the same, only later.
 */
import type { BudgetPeriod, LimitRefusal } from "../store/store.ts";

/** One key (and its account) that spent, or whose call a budget refused. */
export interface SpendNote {
  keyId: string;
  accountId: number;
  /**
   * The budget that refused the call — the key's or its account's — the call's instant, and the
   * room the budget had left then (nanoUSD: its amount less what was settled and held).
   */
  refused?: { owner: "key" | "account"; period: BudgetPeriod; at: number; room: number };
}

/** The key and account a note is about (a request's principal). */
export interface Spender {
  keyId: string;
  accountId: number;
}

/** Notes kept per batch at most. */
const MAX_NOTES = 1_000;

/**
 * How long notes gather before they are handed on: a key that spends often is one note a batch,
 * and a serving thread posts one message a batch, not one per event-loop turn.
 */
const BATCH_MS = 10;

let listener: ((notes: SpendNote[]) => void) | null = null;
let pending = new Map<string, SpendNote>();

function add(id: string, note: SpendNote): void {
  if (!pending.size) setTimeout(flush, BATCH_MS);
  if (pending.size < MAX_NOTES || pending.has(id)) pending.set(id, note);
}

function flush(): void {
  if (!pending.size) return;
  const notes = [...pending.values()];
  pending = new Map();
  listener?.(notes);
}

/** Notes that `who` spent (a call settled). */
export function noteSpent(who: Spender): void {
  if (listener) add(who.keyId, { keyId: who.keyId, accountId: who.accountId });
}

/** Notes that a budget refused a call of `who` at the instant `at` (other refusals are not noted). */
export function noteRefused(who: Spender, refusal: LimitRefusal, at: number): void {
  if (!listener || refusal.refused !== "budget") return;
  const { owner, period, room } = refusal;
  add(`${who.keyId}|${owner}|${period}`, {
    keyId: who.keyId,
    accountId: who.accountId,
    refused: { owner, period, at, room },
  });
}

/** Hands this thread's notes to `receive` from now on; returns what stops it. */
export function listenForSpending(receive: (notes: SpendNote[]) => void): () => void {
  listener = receive;
  return () => {
    if (listener === receive) listener = null;
  };
}

/** Passes on notes another thread made, as this thread's own. */
export function passNotes(notes: SpendNote[]): void {
  listener?.(notes);
}
