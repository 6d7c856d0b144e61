/**
 * Admission: a call at one deployment is held before it is sent. A token-billed call's hold is
 * planned from what the request asks (see `billing/reserve.ts`) — refused with a 400 naming the
 * field for what the catalog does not price (a service tier, a hosted tool), with a 402 when the
 * available balance cannot cover the smallest call, with a 429 when a budget, the key's tokens per
 * minute or its calls in flight refuse it — and a unit-billed call (images, search) holds what it
 * asks for. The hold is taken in the request's scope (see `settle.ts`), so nothing outlives the
 * request that took it.
 */
import type { RequestContext } from "../context.ts";
import type { ResolvedModel } from "../catalog/catalog.ts";
import { GatewayError } from "../http/errors.ts";
import { type HostedTool, isBaseTier, price } from "../billing/price.ts";
import {
  Bill,
  insufficientBalance,
  LimitRefused,
  type OpenBill,
  openBill,
  tokenHeaders,
} from "../billing/ledger.ts";
import { type Plan, planTokenCall } from "../billing/reserve.ts";
import type { TokenRequest } from "../billing/reserve.ts";
import { faultPoint } from "../test_hooks.ts";
import type { Call } from "./call.ts";
import { scopeOf } from "./settle.ts";

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
  const hostedTools = new Map<HostedTool, number>();
  for (const use of request.tools) {
    for (const tool of use.tools) {
      hostedTools.set(tool, (hostedTools.get(tool) ?? 0) + use.calls);
    }
  }
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
  let refused = await tryOpen(open(full));
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
    const next = await tryOpen(open(capped));
    if (next instanceof Bill) return { bill: next, plan: capped };
    if (!next) throw insufficientBalance(bill.principal, capped.reserve);
    refused = next;
  }
  throw refused ?? insufficientBalance(bill.principal, full.reserve);
}

/** Holds tried under ever smaller caps at most (one per budget that binds, and the balance). */
const MAX_CAPPED_TRIES = 6;

/**
 * The bill; or, when the balance could not cover it, undefined (402) — or the refusal of a budget
 * or the balance by a limited hold, which says how much room is left. Other refusals (a key's
 * tokens per minute, its calls in flight) are the client's errors as they are.
 */
async function tryOpen(opening: Promise<Bill>): Promise<Bill | LimitRefused | undefined> {
  try {
    return await opening;
  } catch (error) {
    if (error instanceof LimitRefused) {
      if (error.refusal.refused === "budget" || error.refusal.refused === "balance") return error;
      throw error;
    }
    if (error instanceof GatewayError && error.status === 402) return undefined;
    throw error;
  }
}
