/**
 * The billing engine's stateful half: reserve before the call (402 when the available balance
 * cannot cover the estimate), settle exactly once after it, release when the call failed.
 */
import type { Principal } from "../auth/authenticate.ts";
import type { ResolvedModel } from "../catalog/catalog.ts";
import { GatewayError } from "../http/errors.ts";
import { nanoToUsd } from "./money.ts";
import { emptyUsage, price, type Usage } from "./price.ts";
import type { Store } from "../store/store.ts";
import { log } from "../log.ts";

/** Output tokens reserved when the request sets no output cap. */
export const DEFAULT_RESERVED_OUTPUT_TOKENS = 1024;

/**
 * Input tokens estimated from a request body: one token per four characters, rounded up. Used for the
 * reservation, for crash recovery and for cut streams whose upstream reported nothing.
 */
export function estimateInputTokens(bodyChars: number): number {
  return Math.ceil(bodyChars / 4);
}

export interface OpenBill {
  principal: Principal;
  requestId: string;
  endpoint: string;
  model: ResolvedModel;
  /** Estimated input tokens of the request. */
  inputTokens: number;
  /** The request's output cap, if it has one. */
  maxOutputTokens?: number;
}

/** A call in flight with funds reserved; settle or release it exactly once. */
export class Bill {
  #done = false;
  constructor(
    private readonly store: Store,
    readonly id: string,
    private readonly call: OpenBill,
  ) {}

  /** Charges `usage` (estimated when the upstream reported none); later calls are no-ops. */
  settle(usage: Usage, estimated = false): void {
    if (this.#done) return;
    this.#done = true;
    const { units, amount } = price(usage, this.call.model.prices);
    const settled = this.store.settle(this.id, {
      callId: this.id,
      requestId: this.call.requestId,
      keyId: this.call.principal.keyId,
      accountId: this.call.principal.accountId,
      endpoint: this.call.endpoint,
      model: this.call.model.id,
      provider: this.call.model.provider.name,
      units,
      amount,
      estimated,
    });
    if (!settled) log("warn", "bill settled twice", { call_id: this.id });
  }

  /** Settles on the input estimate plus `outputTokens` (for streams cut before any usage). */
  settleEstimate(outputTokens: number): void {
    this.settle({ ...emptyUsage(), inputTokens: this.call.inputTokens, outputTokens }, true);
  }

  /** Releases the reservation without charging (the call failed). */
  release(): void {
    if (this.#done) return;
    this.#done = true;
    this.store.settle(this.id, null);
  }
}

/** Reserves funds for a call; throws 402 when the available balance cannot cover them. */
export function openBill(store: Store, call: OpenBill): Bill {
  const input = { ...emptyUsage(), inputTokens: call.inputTokens };
  const crashEstimate = price(input, call.model.prices);
  const reserved = price(
    { ...input, outputTokens: call.maxOutputTokens ?? DEFAULT_RESERVED_OUTPUT_TOKENS },
    call.model.prices,
  ).amount;
  const id = `call_${crypto.randomUUID().replaceAll("-", "")}`;
  const ok = store.reserve({
    id,
    accountId: call.principal.accountId,
    keyId: call.principal.keyId,
    requestId: call.requestId,
    endpoint: call.endpoint,
    model: call.model.id,
    provider: call.model.provider.name,
    amount: reserved,
    estimate: crashEstimate,
    createdAt: Date.now(),
  });
  if (!ok) {
    throw new GatewayError(
      402,
      `Insufficient balance: this call needs up to ${
        nanoToUsd(reserved)
      } USD available on account ${call.principal.accountName}. Add credit and retry.`,
    );
  }
  return new Bill(store, id, call);
}

/** Settles holds left by a crash on their recorded estimate. Returns how many. */
export function recoverHolds(store: Store): number {
  const holds = store.pendingHolds();
  for (const h of holds) {
    store.settle(h.id, {
      callId: h.id,
      requestId: h.requestId,
      keyId: h.keyId,
      accountId: h.accountId,
      endpoint: h.endpoint,
      model: h.model,
      provider: h.provider,
      units: h.estimate.units,
      amount: h.estimate.amount,
      estimated: true,
    });
  }
  return holds.length;
}
