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
 * Input tokens estimated from a request body: one token per four characters, rounded up. Used for
 * the reservation, for crash recovery and for cut streams whose upstream reported nothing.
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
  /**
   * For calls billed by images, video seconds or calls instead of tokens: the usage to reserve,
   * and the usage charged when no better figure exists (a crash, an unreadable answer).
   */
  units?: { reserve: Usage; estimate: Usage };
}

/** A call in flight with funds reserved; settle or release it exactly once. */
export class Bill {
  #done = false;
  constructor(
    private readonly store: Store,
    /** The call's ledger entry. */
    readonly id: number,
    private readonly call: OpenBill,
    /** Resolves when the held entry is durable; await it before relaying the upstream's answer. */
    readonly durable: Promise<void>,
  ) {}

  /**
   * Charges `usage` (estimated when the upstream reported none) and resolves once the charge is
   * committed; later calls are no-ops. `prices` replaces the model's when the answer itself
   * decides the rate (an image's size and quality).
   */
  async settle(usage: Usage, estimated = false, prices = this.call.model.prices): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    const settled = await this.store.settle(this.id, { ...price(usage, prices), estimated });
    if (!settled) log("warn", "ledger entry was already settled", { ledger_id: this.id });
  }

  /**
   * Settles on the input estimate plus `outputTokens` (for streams cut before any usage), or on
   * the unit estimate of a call not billed by tokens.
   */
  settleEstimate(outputTokens: number): Promise<void> {
    if (this.call.units) return this.settle(this.call.units.estimate, true);
    return this.settle({ ...emptyUsage(), inputTokens: this.call.inputTokens, outputTokens }, true);
  }

  /** Removes the reservation without charging (the call failed). */
  async release(): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    await this.store.settle(this.id, null);
  }
}

/**
 * Reserves funds for a call; throws 402 when the available balance cannot cover them. The held
 * ledger entry commits within this event-loop turn: await `bill.durable` together with the
 * upstream call, before relaying its answer.
 */
export function openBill(store: Store, call: OpenBill): Bill {
  const input = call.units?.estimate ?? { ...emptyUsage(), inputTokens: call.inputTokens };
  const reserve = price(
    call.units?.reserve ??
      { ...input, outputTokens: call.maxOutputTokens ?? DEFAULT_RESERVED_OUTPUT_TOKENS },
    call.model.prices,
  ).amount;
  const { id, committed } = store.reserve({
    requestId: call.requestId,
    keyId: call.principal.keyId,
    accountId: call.principal.accountId,
    endpoint: call.endpoint,
    model: call.model.id,
    provider: call.model.provider.name,
    reserve,
    estimate: price(input, call.model.prices),
  });
  if (id === null) {
    throw new GatewayError(
      402,
      `Insufficient balance: this call needs up to ${
        nanoToUsd(reserve)
      } USD available on account ${call.principal.accountName}. Add credit and retry.`,
    );
  }
  return new Bill(store, id, call, committed);
}

/** Settles entries left held by a crash on their recorded estimate. Resolves to how many. */
export async function recoverHolds(store: Store): Promise<number> {
  const holds = store.pendingHolds();
  for (const h of holds) await store.settle(h.id, { ...h.estimate, estimated: true });
  return holds.length;
}
