/**
 * The billing engine's stateful half: hold funds before the call (402 when the available balance
 * cannot cover the hold), settle exactly once after it, release when the call failed.
 */
import type { Principal } from "../auth/authenticate.ts";
import type { ResolvedModel } from "../catalog/catalog.ts";
import { GatewayError } from "../http/errors.ts";
import { nanoToUsd } from "./money.ts";
import { inputTotal, price, type Usage } from "./price.ts";
import type { Store } from "../store/store.ts";
import { log } from "../log.ts";
import { tokensForBytes } from "./estimate.ts";
import { recordCharge } from "../metrics/gateway.ts";

export interface OpenBill {
  principal: Principal;
  requestId: string;
  endpoint: string;
  model: ResolvedModel;
  /** nanoUSD to hold while the call runs (an upper bound on its cost). */
  reserve: number;
  /**
   * The usage charged when nothing better is known — a crash, an unreadable answer, a stream cut
   * before the upstream reported anything: the typical input estimate, or the units asked for.
   */
  estimate: Usage;
  /** Input tokens held: an estimate of the input never exceeds it. */
  inputBound?: number;
  /** The output cap the call runs under, per answer: an estimate never exceeds it × `choices`. */
  outputCap?: number;
  /** Answers asked for at once (chat `n`, Gemini `candidateCount`). */
  choices?: number;
}

/** The 402 for a call the available balance cannot cover. */
export function insufficientBalance(principal: Principal, needed: number): GatewayError {
  return new GatewayError(
    402,
    `Insufficient balance: this call needs ${
      nanoToUsd(needed)
    } USD available on account ${principal.accountName}. Add credit and retry.`,
  );
}

/** Calls of this process holding funds now (a draining server waits for them). */
let inFlight = 0;

/** How many calls of this process hold funds now. */
export function billsInFlight(): number {
  return inFlight;
}

/** A call in flight with funds reserved; settle or release it exactly once. */
export class Bill {
  #done = false;
  constructor(
    private readonly store: Store,
    /** The call's ledger entry (durable: a crash from here on charges its estimate). */
    readonly id: number,
    private readonly call: OpenBill,
  ) {
    inFlight++;
  }

  /** Marks the bill done; false when it already was. */
  #finish(): boolean {
    if (this.#done) return false;
    this.#done = true;
    inFlight--;
    return true;
  }

  /**
   * Charges `usage` (estimated when the upstream did not report it) and resolves once the charge
   * is committed; later calls are no-ops. `prices` replaces the model's when the answer itself
   * decides the rate (an image's size and quality).
   */
  async settle(usage: Usage, estimated = false, prices = this.call.model.prices): Promise<void> {
    if (!this.#finish()) return;
    const charge = price(usage, prices);
    const settled = await this.store.settle(this.id, { ...charge, estimated });
    if (!settled) log("warn", "ledger entry was already settled", { ledger_id: this.id });
    else recordCharge(this.call.model.id, this.call.principal.accountName, usage, charge.amount);
  }

  /** Settles on the estimate plus `outputTokens` (an answer whose usage could not be read). */
  settleEstimate(outputTokens: number): Promise<void> {
    return this.settle(this.#estimated(null, outputTokens), true);
  }

  /**
   * What a stream is charged (settle it with the result). Its final usage, when it arrived, is the
   * charge. A stream that ended before — the client went away, the upstream cut it, a time limit
   * or a drain — is charged the larger of what the upstream reported and what was relayed: input
   * as reported (else the estimate), output at least the relayed bytes' estimate (never past the
   * cap × answers), units at least as asked; marked as an estimate.
   */
  relayedCharge(
    reported: Usage | null,
    complete: boolean,
    outputBytes: number,
  ): { usage: Usage; estimated: boolean } {
    if (complete && reported) return { usage: reported, estimated: false };
    return { usage: this.#estimated(reported, tokensForBytes(outputBytes)), estimated: true };
  }

  /**
   * The size of the conversation a call ends, for the hold of a call that continues it: exact when
   * the upstream reported it all, else the input as reported (or its bound) and the output charged.
   */
  contextTokens(reported: Usage | null, complete: boolean, charged: Usage): number {
    if (complete && reported) return inputTotal(reported) + reported.outputTokens;
    const input = reported && inputTotal(reported) > 0
      ? inputTotal(reported)
      : this.call.inputBound ?? inputTotal(charged);
    return input + charged.outputTokens;
  }

  #estimated(reported: Usage | null, outputTokens: number): Usage {
    const { estimate, outputCap, inputBound, choices } = this.call;
    const u: Usage = { ...(reported ?? estimate) };
    if (inputTotal(u) === 0) u.inputTokens = Math.min(estimate.inputTokens, inputBound ?? Infinity);
    const room = (outputCap ?? Infinity) * (choices ?? 1) - u.imageOutputTokens;
    u.outputTokens = Math.max(u.outputTokens, Math.min(outputTokens, Math.max(0, room)));
    u.images = Math.max(u.images, estimate.images);
    u.videoSeconds = Math.max(u.videoSeconds, estimate.videoSeconds);
    u.searchCalls = Math.max(u.searchCalls, estimate.searchCalls);
    return u;
  }

  /** Removes the reservation without charging (the call failed). */
  async release(): Promise<void> {
    if (!this.#finish()) return;
    await this.store.settle(this.id, null);
  }
}

/**
 * Holds `call.reserve` for a call; rejects with 402 when the available balance cannot cover it.
 * Resolves once the held entry is durable (it is written with the event-loop turn's other writes),
 * so the upstream call may start: a crash from then on cannot lose its charge.
 */
export async function openBill(store: Store, call: OpenBill): Promise<Bill> {
  if (!Number.isSafeInteger(call.reserve) || call.reserve < 0) {
    throw new Error(`a hold must be a whole, non-negative amount (got ${call.reserve})`);
  }
  const id = await store.reserve({
    requestId: call.requestId,
    keyId: call.principal.keyId,
    accountId: call.principal.accountId,
    endpoint: call.endpoint,
    model: call.model.id,
    provider: call.model.provider.name,
    upstreamModel: call.model.upstreamId,
    reserve: call.reserve,
    estimate: price(call.estimate, call.model.prices),
  });
  if (id === null) throw insufficientBalance(call.principal, call.reserve);
  return new Bill(store, id, call);
}

/** Settles entries left held by a crash on their recorded estimate. Resolves to how many. */
export async function recoverHolds(store: Store): Promise<number> {
  const holds = await store.pendingHolds();
  for (const h of holds) await store.settle(h.id, { ...h.estimate, estimated: true });
  return holds.length;
}
