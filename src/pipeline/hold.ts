/**
 * A call's hold, from the moment it is taken to the moment it is settled — the money of one call.
 *
 * Admission: a call at one deployment is held before it is sent. A token-billed call's hold is
 * planned from what the request asks (see `billing/reserve.ts`) — refused with a 400 naming the
 * field for what the catalog does not price (a service tier, a hosted tool), with a 402 when the
 * available balance cannot cover the smallest call, with a 429 when a budget, the key's tokens per
 * minute or its calls in flight refuse it — and a unit-billed call (images, search) holds what it
 * asks for. The hold is taken in the request's scope (below), so nothing outlives the request
 * that took it.
 *
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
import type { RequestContext, RequestScope } from "../context.ts";
import type { ResolvedModel } from "../catalog/catalog.ts";
import { GatewayError } from "../http/errors.ts";
import { type HostedTool, isBaseTier, price } from "../billing/price.ts";
import {
  Bill,
  type BillScope,
  insufficientBalance,
  LimitRefused,
  type OpenBill,
  openBill,
  tokenHeaders,
} from "../billing/ledger.ts";
import { type Plan, planTokenCall, type TokenRequest } from "../billing/reserve.ts";
import { log } from "../log.ts";
import { faultPoint } from "../test_hooks.ts";
import type { Call, CallEnd, StepOf } from "./call.ts";

/** A call admitted at one deployment: its hold, and the output cap to send when one was imposed. */
export interface Admitted {
  bill: Bill;
  /** The output cap the gateway imposed (the balance or a budget covers no more), if any. */
  sentCap?: number;
}

/**
 * Takes the hold of `call` at its model's prices (the token headers of a key with a token limit
 * set on the request), or throws the error the client should see.
 */
export async function admit(call: Call): Promise<Admitted> {
  const { ctx, model } = call;
  const identity = {
    scope: scopeOf(ctx),
    principal: ctx.principal!,
    requestId: ctx.requestId,
    endpoint: call.endpoint,
    model,
    now: ctx.now,
    zone: ctx.services.config.budgetTimeZone,
  };
  const hold = call.tokens ? await holdTokens(ctx, model, call.tokens, identity) : undefined;
  const bill: Bill = hold?.bill ?? await openBill(ctx.services.store, {
    ...identity,
    reserve: price(call.unitsHold ?? call.units!, model.prices).amount,
    estimate: call.units!,
    units: call.unitsHold ?? call.units!,
  });
  if (bill.tokens) ctx.headers = { ...ctx.headers, ...tokenHeaders(bill.tokens, ctx.now()) };
  faultPoint(ctx.req, "held");
  return { bill, sentCap: hold?.plan.sendCap ? hold.plan.cap : undefined };
}

/** Throws 400 for a tier or hosted tool the model's prices do not cover. */
export function requirePriced(model: ResolvedModel, request: TokenRequest): void {
  const prices = model.prices;
  if (!prices) return;
  const tier = request.serviceTier;
  if (tier && !isBaseTier(tier) && !prices.tiers.has(tier)) {
    const offered = ["default", ...prices.tiers.keys()].join(", ");
    throw new GatewayError(
      400,
      `Invalid '${
        request.tierField ?? "service_tier"
      }': the service tier \`${tier}\` is not offered for \`${model.id}\` on this gateway (offered: ${offered}).`,
      { param: request.tierField ?? "service_tier", code: "unsupported_value" },
    );
  }
  for (const use of request.tools) {
    if (use.tools.some((tool) => prices.tools.has(tool))) continue;
    throw new GatewayError(
      400,
      `Invalid '${use.field}': the hosted tool \`${
        use.tools[0]
      }\` is not priced for \`${model.id}\` on this gateway, so it cannot be used through it.`,
      { param: use.field, code: "unsupported_value" },
    );
  }
}

/** A token-billed call's hold: the ledger entry and the plan it was made on. */
interface TokenHold {
  bill: Bill;
  plan: Extract<Plan, { ok: true }>;
}

/**
 * Plans and takes the hold of a token-billed call, or throws the 400/402 the client should see.
 * The full hold is tried first; only when the balance cannot cover it is the available balance
 * read, to run the call under the largest output cap it does cover (should another call take the
 * balance in between, that hold is refused too: 402).
 */
async function holdTokens(
  ctx: RequestContext,
  model: ResolvedModel,
  request: TokenRequest,
  bill: Omit<OpenBill, "reserve" | "estimate" | "inputBound" | "outputCap" | "choices">,
): Promise<TokenHold> {
  requirePriced(model, request);
  const hostedTools = request.tools.length ? hostedToolsOf(request) : NO_TOOLS;
  const { config, store } = ctx.services;
  const call = { ...request, hostedTools };
  const open = (plan: Extract<Plan, { ok: true }>) =>
    openBill(store, {
      ...bill,
      reserve: plan.reserve,
      estimate: plan.estimate,
      inputBound: plan.inputBound,
      outputCap: plan.cap,
      choices: request.choices,
    });
  const full = planTokenCall(model, call, Infinity, config.defaultMaxOutputTokens);
  if (!full.ok) throw new Error("a plan without a balance limit cannot fail");
  let refused = await open(full).catch(refusalOf);
  if (refused instanceof Bill) return { bill: refused, plan: full };
  // What the balance and the budgets can still hold: the call may go under a smaller output cap.
  let room = await store.available(bill.principal.accountId);
  for (let tries = 0; tries < MAX_CAPPED_TRIES; tries++) {
    if (refused && refused.refusal.refused === "budget") {
      room = Math.min(room, refused.refusal.room);
    }
    const capped = planTokenCall(model, call, room, config.defaultMaxOutputTokens);
    if (!capped.ok) {
      if (refused && refused.refusal.refused === "budget") throw refused;
      throw insufficientBalance(bill.principal, capped.needed);
    }
    const next = await open(capped).catch(refusalOf);
    if (next instanceof Bill) return { bill: next, plan: capped };
    if (!next) throw insufficientBalance(bill.principal, capped.reserve);
    refused = next;
  }
  throw refused ?? insufficientBalance(bill.principal, full.reserve);
}

/** The hosted tools a call offers, with the most calls each may make. */
function hostedToolsOf(request: TokenRequest): Map<HostedTool, number> {
  const tools = new Map<HostedTool, number>();
  for (const use of request.tools) {
    for (const tool of use.tools) tools.set(tool, (tools.get(tool) ?? 0) + use.calls);
  }
  return tools;
}

/** A call's hosted tools when it names none (read only). */
const NO_TOOLS: ReadonlyMap<HostedTool, number> = new Map();

/** Holds tried under ever smaller caps at most (one per budget that binds, and the balance). */
const MAX_CAPPED_TRIES = 6;

/**
 * What a hold that could not be opened means: undefined when the balance could not cover it
 * (402), or the refusal of a budget or the balance by a limited hold, which says how much room is
 * left. Other refusals (a key's tokens per minute, its calls in flight) are the client's errors as
 * they are: thrown again.
 */
function refusalOf(error: unknown): LimitRefused | undefined {
  if (error instanceof LimitRefused) {
    if (error.refusal.refused === "budget" || error.refusal.refused === "balance") return error;
    throw error;
  }
  if (error instanceof GatewayError && error.status === 402) return undefined;
  throw error;
}

/** The settle step: the bill of a call's answer settled or released once the call ended. */
export const settleStep: StepOf = ({ bill, stream, call }) => ({
  before() {
    // A stream's bill is its relay's to end, not the request's.
    if (stream) bill.toStream();
  },
  after(end) {
    if (end.outcome === "released") return bill.release();
    // A whole answer's settlement that fails is logged by the scope that runs it.
    if (end.outcome === "charged" && !stream) return bill.settle(end.charged, end.prices);
    return settleStream(bill, end, call.ctx.requestId);
  },
});

/** A stream's settlement: charged, or on its recorded estimate when that fails (logged). */
async function settleStream(bill: Bill, end: CallEnd, requestId: string): Promise<void> {
  let error = end.outcome === "recorded" ? end.error : undefined;
  if (end.outcome === "charged") {
    try {
      return await bill.settle(end.charged, end.prices);
    } catch (failed) {
      error = failed;
    }
  }
  log("error", "settling a stream failed: charged its recorded estimate", {
    request_id: requestId,
    error: String(error),
  });
  await bill.settleRecorded();
}

/** The bills and upstream requests of one request (see the module's doc). */
export class CallScope implements BillScope, RequestScope {
  readonly #bills: Bill[] = [];
  readonly #upstreams: AbortController[] = [];
  /** The settlement that waits for the request's outcome (see `settleOnAnswer`): most have one. */
  #settlement: { bill: Bill; settle: (answered: boolean) => Promise<void> } | undefined;
  /** Any others, made on first use. */
  #settlements: Map<Bill, (answered: boolean) => Promise<void>> | undefined;

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
    if (!this.#settlement || this.#settlement.bill === bill) this.#settlement = { bill, settle };
    else (this.#settlements ??= new Map()).set(bill, settle);
  }

  /**
   * Ends what the request left open (see the module's doc); `failed`: the client is told the call
   * failed. Resolves once every bill it ends is committed; never throws.
   */
  async close(failed: boolean): Promise<void> {
    const ending: Promise<void>[] = [];
    for (const bill of this.#bills) {
      if (!bill.open) continue;
      const settle = this.#settlement?.bill === bill
        ? this.#settlement.settle
        : this.#settlements?.get(bill);
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
    // Most requests end one bill: awaited as it is, without a settled result per bill.
    if (ending.length === 1) {
      try {
        await ending[0];
      } catch (error) {
        this.#failedToEnd(error);
      }
      return;
    }
    for (const outcome of await Promise.allSettled(ending)) {
      if (outcome.status === "rejected") this.#failedToEnd(outcome.reason);
    }
  }

  #failedToEnd(error: unknown): void {
    log("error", "ending a call's hold failed", {
      request_id: this.requestId,
      error: String(error),
    });
  }
}

/** The request's scope, made on first use. */
export function scopeOf(ctx: RequestContext): CallScope {
  if (ctx.scope instanceof CallScope) return ctx.scope;
  const scope = new CallScope(ctx.requestId);
  ctx.scope = scope;
  return scope;
}
