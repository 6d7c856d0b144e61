/**
 * Planning a token-billed call's reservation, so that no call can cost more than its account has
 * (pure). The hold covers the input's bound at the dearest input rate the call can be charged (a
 * cache write, the tier asked for, long context) plus its output cap at the dearest output rate,
 * plus its hosted tool calls. The output cap is the client's (at most the model's maximum), else
 * the model's maximum from the catalog — the upstream's own limit, so nothing is sent — or, for a
 * model whose maximum the catalog does not know, the configured default, sent upstream. When the
 * available balance cannot cover that, the largest cap it does cover is sent upstream, so the
 * upstream cannot produce more; below the protocol's smallest cap the call is refused (402).
 */
import type { Prices, ResolvedModel, TokenRates } from "../catalog/catalog.ts";
import type { InputEstimate } from "./estimate.ts";
import { emptyUsage, type HostedTool, maxRates, ratesFor, tokenCost, type Usage } from "./price.ts";

/** Input tokens reserved per hosted tool call (search results come back as input). */
export const TOOL_CALL_INPUT_TOKENS = 4_000;
/** Calls reserved per hosted tool when the request does not limit them (and sent as the limit). */
export const DEFAULT_TOOL_CALLS = 10;
/** The most hosted tool calls a request may allow. */
export const MAX_TOOL_CALLS = 10_000;

/** What the reservation needs to know about a token-billed request. */
export interface TokenCall {
  input: InputEstimate;
  /** Tokens of conversation state held upstream that the request continues (known exactly). */
  contextTokens?: number;
  /** The client's output cap; undefined when it set none. */
  requestedCap?: number;
  /** Whether the call produces output at all (embeddings do not). */
  output: boolean;
  /** The smallest cap the protocol accepts (e.g. 16 on Responses, thinking budget + 1). */
  minCap: number;
  /** Answers asked for at once (chat `n`): the output cap applies to each. */
  choices?: number;
  /** False when the protocol has no field to send a cap in: the model's maximum is held. */
  cappable?: boolean;
  /** The protocol requires a cap in every request (Messages `max_tokens`): always sent. */
  capRequired?: boolean;
  /** The service tier asked for; undefined or `auto` when the upstream chooses. */
  serviceTier?: string;
  /** Hosted tools offered, with the most calls each may make. */
  hostedTools: ReadonlyMap<HostedTool, number>;
}

export type Plan =
  | {
    ok: true;
    /** nanoUSD to hold. */
    reserve: number;
    /** The typical input usage, charged if the process dies mid-call. */
    estimate: Usage;
    /** Input tokens held (the bound); estimates never exceed it. */
    inputBound: number;
    /** The output cap the call runs under (undefined for calls without output). */
    cap: number | undefined;
    /** The cap must be sent upstream (none was asked for, or it was lowered). */
    sendCap: boolean;
  }
  | { ok: false; needed: number };

/** The dearest rates the call can be charged at, whichever tier the upstream picks. */
function worstRates(prices: Prices, tier: string | undefined, inputTokens: number): TokenRates {
  let rates = ratesFor(prices, tier, inputTokens).rates;
  if (tier === undefined || tier === "auto") {
    // The upstream may serve at the project's default tier: any tier the catalog prices.
    for (const name of prices.tiers.keys()) {
      rates = maxRates(rates, ratesFor(prices, name, inputTokens).rates);
    }
  }
  return rates;
}

/** Plans the hold for a call of `model` with `available` nanoUSD on its account. */
export function planTokenCall(
  model: ResolvedModel,
  call: TokenCall,
  available: number,
  defaultMaxOutput: number,
): Plan {
  const context = call.contextTokens ?? 0;
  const toolCalls = [...call.hostedTools.values()].reduce((n, c) => n + c, 0);
  const inputBound = call.input.bound + context + toolCalls * TOOL_CALL_INPUT_TOKENS;
  const estimate = { ...emptyUsage(), inputTokens: call.input.typical + context };
  // The client's cap (within the model's maximum when the catalog knows it), else that maximum,
  // else the configured default.
  const max = model.maxOutputTokens;
  const requested = call.requestedCap;
  const wanted = !call.output
    ? undefined
    : requested !== undefined
    ? Math.min(requested, max ?? requested)
    : max ?? defaultMaxOutput;
  const prices = model.prices;
  if (!prices) {
    return {
      ok: true,
      reserve: 0,
      estimate,
      inputBound,
      cap: wanted,
      sendCap: !!call.capRequired && wanted !== undefined,
    };
  }
  const rates = worstRates(prices, call.serviceTier, inputBound);
  const inputRate = Math.max(rates.input, rates.cachedInput, rates.cacheWrite, rates.cacheWrite1h);
  // Only image models answer with image tokens (dearer); other output is text.
  const outputRate = model.image ? Math.max(rates.output, rates.imageOutput) : rates.output;
  let fixed = tokenCost(inputBound, inputRate);
  for (const [tool, calls] of call.hostedTools) fixed += calls * (prices.tools.get(tool) ?? 0);
  const choices = call.choices ?? 1;
  const cost = (cap: number) => fixed + tokenCost(cap * choices, outputRate);
  if (wanted === undefined) {
    return fixed <= available
      ? { ok: true, reserve: fixed, estimate, inputBound, cap: undefined, sendCap: false }
      : { ok: false, needed: fixed };
  }
  // The cap the upstream applies by itself: the client's, or the model's known maximum.
  const upstreamCap = requested ?? max;
  const sendCap = call.cappable !== false && (upstreamCap !== wanted || !!call.capRequired);
  if (cost(wanted) <= available) {
    return { ok: true, reserve: cost(wanted), estimate, inputBound, cap: wanted, sendCap };
  }
  if (call.cappable === false) return { ok: false, needed: cost(wanted) };
  const affordable = outputRate > 0 && available > fixed
    ? Number((BigInt(available - fixed) * 1_000_000n) / BigInt(outputRate * choices))
    : 0;
  if (affordable >= call.minCap && cost(affordable) <= available) {
    return {
      ok: true,
      reserve: cost(affordable),
      estimate,
      inputBound,
      cap: affordable,
      sendCap: true,
    };
  }
  return { ok: false, needed: cost(call.minCap) };
}

/** A hosted tool a request offers: the field that offers it, and the calls it may make. */
export interface ToolUse {
  /** The tools it may be billed as (any one priced is enough), e.g. web search per query or per grounded prompt. */
  tools: HostedTool[];
  field: string;
  calls: number;
}

/** A token-billed request as the reserve step sees it. */
export interface TokenRequest extends Omit<TokenCall, "hostedTools"> {
  /** The field that asks for the service tier (for the error). */
  tierField?: string;
  tools: ToolUse[];
}
