/**
 * Settlement, exactly once. A call's answer ends with the settle step (one of the steps the relay
 * runs, see `relay.ts`): released unbilled when the client was told the call failed, charged what
 * its answer used, or — when that could not be worked out (a fault in the gateway) — the estimate
 * recorded with its hold, as a crash would be.
 *
 * And the call lifecycle's one safety net: everything a request opens that holds money or a
 * socket — its bills (holds) and its upstream requests — is kept in the request's scope, and when
 * the request ends (`server.ts` closes the scope once the response is ready, or once it failed),
 * nothing stays open whatever way out the request took, an exception included:
 *
 * - the request failed (it threw, or its response is an error): every bill still open is released
 *   unbilled — whatever the client is told failed costs it nothing — and every upstream request is
 *   aborted, which closes its connection and body;
 * - the request answered: a whole answer's bill is settled now (see `settleOnAnswer`), before the
 *   response is returned; a bill its response's stream owns is that stream's to settle (when the
 *   relay's stream ends); any other bill still open is a gateway fault, logged, and settled on the
 *   estimate recorded with its hold (what a crash would charge).
 */
import type { Bill, BillScope } from "../billing/ledger.ts";
import type { RequestContext, RequestScope } from "../context.ts";
import { log } from "../log.ts";
import type { StepOf } from "./call.ts";

/** The settle step: the bill of a call's answer settled or released once the call ended. */
export const settleStep: StepOf = ({ bill, stream, call }) => ({
  before() {
    // A stream's bill is its relay's to end, not the request's.
    if (stream) bill.toStream();
  },
  async after(end) {
    if (end.outcome === "released") return await bill.release();
    if (end.outcome === "charged") {
      // A whole answer's settlement that fails is logged by the scope that runs it.
      if (!stream) return await bill.settle(end.charged, end.prices);
      try {
        return await bill.settle(end.charged, end.prices);
      } catch (error) {
        end = { outcome: "recorded", error };
      }
    }
    log("error", "settling a stream failed: charged its recorded estimate", {
      request_id: call.ctx.requestId,
      error: String(end.error),
    });
    await bill.settleRecorded();
  },
});

/** The bills and upstream requests of one request (see the module's doc). */
export class CallScope implements BillScope, RequestScope {
  readonly #bills: Bill[] = [];
  readonly #upstreams: AbortController[] = [];
  /** Settlements that wait for the request's outcome (see `settleOnAnswer`). */
  readonly #settlements = new Map<Bill, (answered: boolean) => Promise<void>>();

  constructor(private readonly requestId: string) {}

  /** Keeps a bill opened for this request. */
  hold(bill: Bill): void {
    this.#bills.push(bill);
  }

  /** Keeps an upstream request's controller: aborting it ends the request and its body. */
  upstream(abort: AbortController): void {
    this.#upstreams.push(abort);
  }

  /**
   * Ends `bill` with `settle` once the request ends: `answered`, it is to be settled; if the request
   * failed after all (its response cannot be sent), released instead. For answers read whole.
   */
  settleOnAnswer(bill: Bill, settle: (answered: boolean) => Promise<void>): void {
    this.#settlements.set(bill, settle);
  }

  /**
   * Ends what the request left open (see the module's doc); `failed`: the client is told the call
   * failed. Resolves once every bill it ends is committed; never throws.
   */
  async close(failed: boolean): Promise<void> {
    const ending: Promise<void>[] = [];
    for (const bill of this.#bills) {
      if (!bill.open) continue;
      const settle = this.#settlements.get(bill);
      if (settle) {
        ending.push(settle(!failed));
      } else if (failed) {
        ending.push(bill.release());
      } else if (bill.owner === "request") {
        log("error", "a call's hold outlived its request: settled on its recorded estimate", {
          request_id: this.requestId,
          ledger_id: bill.id,
        });
        ending.push(bill.settleRecorded());
      }
    }
    if (failed) { for (const abort of this.#upstreams) abort.abort(); }
    for (const outcome of await Promise.allSettled(ending)) {
      if (outcome.status === "rejected") {
        log("error", "ending a call's hold failed", {
          request_id: this.requestId,
          error: String(outcome.reason),
        });
      }
    }
  }
}

/** The request's scope, made on first use. */
export function scopeOf(ctx: RequestContext): CallScope {
  if (ctx.scope instanceof CallScope) return ctx.scope;
  const scope = new CallScope(ctx.requestId);
  ctx.scope = scope;
  return scope;
}
