/**
 * The billing engine's stateful half: hold funds before the call (402 when the available balance
 * cannot cover the hold), settle exactly once after it, release when the call failed.
 */
import type { Principal } from "../auth/authenticate.ts";
import type { ResolvedModel } from "../catalog/catalog.ts";
import { formatDuration, GatewayError, retryAfterSeconds } from "../http/errors.ts";
import { nanoToUsd } from "../money.ts";
import { emptyUsage, inputTotal, price, type Usage } from "./price.ts";
import type {
  BudgetPeriod,
  BudgetWindows,
  LimitedHold,
  LimitRefusal,
  Store,
  UnitLine,
} from "../store/store.ts";
import { budgetWindows } from "./windows.ts";
import { AmountError } from "../store/amounts.ts";
import { log } from "../log.ts";
import { tokensForBytes } from "./estimate.ts";
import { recordCharge } from "../metrics/gateway.ts";
import { noteSpent } from "./spend_notes.ts";
import { cacheCharge, type CacheMiss, hasPromptCache } from "./cache.ts";

/**
 * Where a request keeps its bills, so that whatever way the request ends, none stays open (see
 * `pipeline/hold.ts`): every bill is added to its request's scope as it is opened.
 */
export interface BillScope {
  hold(bill: Bill): void;
}

export interface OpenBill {
  /** The request's scope: the bill is added to it once opened. */
  scope: BillScope;
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
  /** A call billed by units: the units its hold covers (a report past them is out of range). */
  units?: Usage;
  /** The request's clock (ms since the epoch), for budgets' windows. */
  now?: () => number;
  /** The time zone budgets' days, weeks and months follow (`budgets.timeZone`). */
  zone?: string;
}

/** What a call is charged, and what its client is shown as its usage. */
export interface Charged {
  usage: Usage;
  /** Not the upstream's own complete report: an estimate, or the hold (`fault`). */
  estimated: boolean;
  /** Why the upstream's report was refused as out of range: the call is charged its hold. */
  fault?: string;
}

/** The most of anything (tokens, images, seconds, calls) one call may report. */
export const MAX_COUNT = 1_000_000_000;
/**
 * Input reported past its bound by this factor, plus `INPUT_ALLOWANCE` tokens, is out of range:
 * the bound counts text at two bytes a token, but files referenced by id or URL are held at 3,000
 * tokens whatever their size (a long PDF, an hour of video).
 */
const INPUT_SLACK = 4;
const INPUT_ALLOWANCE = 10_000_000;

/** The usage fields that hold counts. */
const COUNTS = [
  "inputTokens",
  "cachedInputTokens",
  "cacheWriteTokens",
  "cacheWrite1hTokens",
  "imageInputTokens",
  "outputTokens",
  "imageOutputTokens",
  "images",
  "videoSeconds",
  "searchCalls",
] as const;

function isCount(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0 && value <= MAX_COUNT;
}

/** A budget's period in words, for messages. */
const PERIOD_WORDS: Record<BudgetPeriod, string> = {
  "5h": "5-hour",
  day: "daily",
  week: "weekly",
  month: "monthly",
  total: "lifetime",
};

/**
 * The client's error for a limited hold that was refused: 402 for the balance, 429 for a budget,
 * the key's tokens per minute or its calls in flight — naming the limit, with `retry-after` until
 * it resets (a lifetime budget never does: no `retry-after`), never a word about other keys.
 */
export function limitError(refusal: LimitRefusal, principal: Principal, now: number): GatewayError {
  const wait = (at: number) => String(retryAfterSeconds(at - now));
  switch (refusal.refused) {
    case "balance":
      return insufficientBalance(principal, refusal.needed);
    case "budget": {
      const whose = refusal.owner === "key" ? "this key's" : "this account's";
      const resets = Number.isFinite(refusal.resetsAt)
        ? `; it resets at ${new Date(refusal.resetsAt).toISOString()}`
        : "; it does not reset";
      return new GatewayError(
        429,
        `Budget reached: ${whose} ${PERIOD_WORDS[refusal.period]} budget of ${
          nanoToUsd(refusal.amount)
        } USD cannot cover this call${resets}.`,
        {
          code: "budget_exceeded",
          headers: Number.isFinite(refusal.resetsAt)
            ? { "retry-after": wait(refusal.resetsAt) }
            : {},
        },
      );
    }
    case "tpm":
      return new GatewayError(
        429,
        refusal.tooLarge
          ? `Request too large: this call holds more tokens than this key's limit of ${refusal.limit} tokens per minute.`
          : `Rate limit reached: ${refusal.limit} tokens per minute for this key. Retry after ${
            wait(refusal.resetsAt)
          }s.`,
        {
          code: refusal.tooLarge ? "request_too_large" : "rate_limit_exceeded",
          headers: {
            "retry-after": wait(refusal.resetsAt),
            "x-ratelimit-limit-tokens": String(refusal.limit),
            "x-ratelimit-remaining-tokens": "0",
            "x-ratelimit-reset-tokens": formatDuration(refusal.resetsAt - now),
          },
        },
      );
    case "concurrency":
      return new GatewayError(
        429,
        `Too many calls in flight: this key allows ${refusal.limit} at once. Retry when one ends.`,
        { code: "concurrency_limit_exceeded", headers: { "retry-after": "1" } },
      );
  }
}

/** The `x-ratelimit-*-tokens` headers of a call held under its key's tokens per minute. */
export function tokenHeaders(
  tokens: NonNullable<LimitedHold["tokens"]>,
  now: number,
): Record<string, string> {
  return {
    "x-ratelimit-limit-tokens": String(tokens.limit),
    "x-ratelimit-remaining-tokens": String(Math.max(0, tokens.limit - tokens.used)),
    "x-ratelimit-reset-tokens": formatDuration(tokens.resetsAt - now),
  };
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

/**
 * Who ends a bill: the request that opened it (by the time its response is returned), the
 * response's stream (when it ends), or a job that outlives the request (a video job, finished by
 * the poller with the store's own transaction).
 */
export type BillOwner = "request" | "stream" | "job";

/** A call in flight with funds reserved; settle or release it exactly once. */
export class Bill {
  #done = false;
  #owner: BillOwner = "request";
  #miss: CacheMiss | null = null;
  constructor(
    private readonly store: Store,
    /** The call's ledger entry (durable: a crash from here on charges its estimate). */
    readonly id: number,
    private readonly call: OpenBill,
    /** What a crash would charge (the entry's recorded estimate). */
    private readonly recorded: { units: UnitLine[]; amount: number },
    /** A limited hold: its settlement gives back to budgets in the windows of its instant. */
    private readonly limited = false,
    /** Its key's tokens this minute, when the key has a limit. */
    readonly tokens?: LimitedHold["tokens"],
  ) {
    inFlight++;
  }

  /** The windows a settlement now counts in (a limited hold's only). */
  #windows(): BudgetWindows | undefined {
    if (!this.limited) return undefined;
    return budgetWindows((this.call.now ?? Date.now)(), this.call.zone);
  }

  /** Neither settled, released nor handed to a job yet. */
  get open(): boolean {
    return !this.#done;
  }

  /** Who ends it (see `BillOwner`). */
  get owner(): BillOwner {
    return this.#owner;
  }

  /**
   * Notes that the gateway made this call miss a prompt cache it could have read (see
   * `billing/cache.ts`): kept with its charge, the loss estimated when it settles. The last note
   * before the settlement counts.
   */
  cacheMiss(miss: CacheMiss): void {
    this.#miss = miss;
  }

  /** The response's stream settles it when it ends (`relayStream`'s `onEnd`). */
  toStream(): void {
    this.#owner = "stream";
  }

  /**
   * A job that outlives the request settles it (its entry stays held in the store until then):
   * the bill is done in this process.
   */
  toJob(): void {
    this.#owner = "job";
    this.#finish();
  }

  /** Marks the bill done; false when it already was. */
  #finish(): boolean {
    if (this.#done) return false;
    this.#done = true;
    inFlight--;
    return true;
  }

  /**
   * Settles on the estimate recorded when the hold was taken — what a crash would charge — for a
   * call whose usage can no longer be known (a failure inside the gateway after the answer).
   */
  async settleRecorded(): Promise<void> {
    if (!this.#finish()) return;
    await this.store.settle(this.id, { ...this.recorded, estimated: true }, this.#windows());
  }

  /**
   * The input tokens the call is taken to use until the upstream counts them: the typical
   * estimate recorded with the hold, within the input held. A call whose upstream reports no input
   * is charged it, and a translated stream shows it at its opening when its upstream counts the
   * input only at the end.
   */
  get inputEstimate(): number {
    return Math.min(this.call.estimate.inputTokens, this.call.inputBound ?? Infinity);
  }

  /**
   * What the call is charged, from what the upstream reported (`complete`: its final usage) and
   * the output relayed (`outputBytes`). A complete report in range is the charge. A call that ended
   * before — the client went away, the upstream cut it, a time limit or a drain — or whose answer
   * stated no usage is charged the best count there is, marked estimated: input as reported (else
   * the estimate), output as the upstream's running count where its protocol sends one
   * (`running`), else the larger of what it reported and the relayed bytes' estimate — never past
   * the cap × answers — and units at least as asked. A report out of range (see `#fault`) is
   * refused: the call is charged what it was held for.
   */
  charged(
    reported: Usage | null,
    complete: boolean,
    outputBytes: number,
    running = false,
  ): Charged {
    if (reported) {
      const fault = this.#fault(reported);
      if (fault) return this.#atHold(fault);
      if (complete) return { usage: reported, estimated: false };
    }
    const usage = this.#estimated(reported, tokensForBytes(outputBytes), running);
    const fault = this.#fault(usage);
    return fault ? this.#atHold(fault) : { usage, estimated: true };
  }

  /**
   * Charges what `charged` says and resolves once the charge is committed; later calls are no-ops.
   * `prices` replaces the model's when the answer itself decides the rate (an image's size and
   * quality). A report refused as out of range is logged as the upstream's fault.
   */
  async settle(charged: Charged, prices = this.call.model.prices): Promise<void> {
    if (!this.#finish()) return;
    const { usage } = charged;
    if (charged.fault) {
      log("warn", "upstream reported usage out of range: charged what the call was held for", {
        request_id: this.call.requestId,
        ledger_id: this.id,
        provider: this.call.model.provider.name,
        model: this.call.model.id,
        fault: charged.fault,
      });
    }
    const charge = price(usage, prices);
    const cache = hasPromptCache(this.call.model.kind)
      ? cacheCharge(usage, prices, this.#miss)
      : undefined;
    let settled: boolean;
    try {
      settled = await this.store.settle(
        this.id,
        { ...charge, estimated: charged.estimated, cache },
        this.#windows(),
      );
    } catch (error) {
      if (!(error instanceof AmountError)) throw error;
      // Not money (a bug past the checks above): the charge a crash would make instead.
      log("error", "a charge was refused by the store: settled on the recorded estimate", {
        request_id: this.call.requestId,
        ledger_id: this.id,
        error: String(error),
      });
      await this.store.settle(this.id, { ...this.recorded, estimated: true }, this.#windows());
      return;
    }
    if (!settled) log("warn", "ledger entry was already settled", { ledger_id: this.id });
    else {
      recordCharge(
        this.call.model.id,
        this.call.principal.accountName,
        usage,
        charge.amount,
        cache,
      );
    }
    if (settled) noteSpent(this.call.principal); // for alerts: looked at off the request path
  }

  /**
   * The size of the conversation a call ends, for the hold of a call that continues it: exact when
   * the upstream reported it all, else the input as reported (or its bound) and the output charged.
   */
  contextTokens(charged: Charged, reported: Usage | null): number {
    const { usage } = charged;
    if (!charged.estimated || charged.fault) return inputTotal(usage) + usage.outputTokens;
    const input = reported && inputTotal(reported) > 0
      ? inputTotal(reported)
      : this.call.inputBound ?? inputTotal(usage);
    return input + usage.outputTokens;
  }

  /**
   * Why a usage cannot be what this call used, or null when it can: a count that is not a whole
   * number from 0 to `MAX_COUNT`, output past the cap × answers the call ran under, input past
   * `INPUT_SLACK` × its bound + `INPUT_ALLOWANCE` (files referenced by id, whose size the gateway
   * cannot see, are the slack), units past those held.
   */
  #fault(u: Usage): string | null {
    for (const field of COUNTS) {
      const value = u[field] ?? 0;
      if (!isCount(value)) return `${field} ${value}`;
    }
    for (const [tool, calls] of Object.entries(u.toolCalls ?? {})) {
      if (!isCount(calls)) return `${tool} calls ${calls}`;
    }
    const { outputCap, inputBound, choices, units } = this.call;
    const output = u.outputTokens + u.imageOutputTokens;
    if (outputCap !== undefined && output > outputCap * (choices ?? 1)) {
      return `output tokens ${output} past the cap ${outputCap * (choices ?? 1)}`;
    }
    const input = inputTotal(u);
    if (inputBound !== undefined && input > inputBound * INPUT_SLACK + INPUT_ALLOWANCE) {
      return `input tokens ${input} past ${inputBound * INPUT_SLACK + INPUT_ALLOWANCE}`;
    }
    if (units) {
      for (const field of ["images", "videoSeconds", "searchCalls"] as const) {
        if (u[field] > units[field]) return `${field} ${u[field]} past the ${units[field]} held`;
      }
    }
    return null;
  }

  /** A charge at the hold: everything the call was held for (its input bound, its output cap). */
  #atHold(fault: string): Charged {
    const { estimate, units, inputBound, outputCap, choices } = this.call;
    const held = units ?? estimate;
    return {
      usage: {
        ...emptyUsage(),
        inputTokens: inputBound ?? held.inputTokens,
        outputTokens: outputCap === undefined ? 0 : outputCap * (choices ?? 1),
        images: held.images,
        videoSeconds: held.videoSeconds,
        searchCalls: held.searchCalls,
      },
      estimated: true,
      fault,
    };
  }

  #estimated(reported: Usage | null, outputTokens: number, running: boolean): Usage {
    const { estimate, outputCap, choices } = this.call;
    const u: Usage = { ...(reported ?? estimate) };
    if (inputTotal(u) === 0) u.inputTokens = this.inputEstimate;
    const room = (outputCap ?? Infinity) * (choices ?? 1) - u.imageOutputTokens;
    const counted = running && u.outputTokens > 0;
    if (!counted) {
      u.outputTokens = Math.max(u.outputTokens, Math.min(outputTokens, Math.max(0, room)));
    }
    u.images = Math.max(u.images, estimate.images);
    u.videoSeconds = Math.max(u.videoSeconds, estimate.videoSeconds);
    u.searchCalls = Math.max(u.searchCalls, estimate.searchCalls);
    return u;
  }

  /** Removes the reservation without charging (the call failed). */
  async release(): Promise<void> {
    if (!this.#finish()) return;
    await this.store.settle(this.id, null, this.#windows());
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
  const estimate = price(call.estimate, call.model.prices);
  const hold = {
    requestId: call.requestId,
    keyId: call.principal.keyId,
    accountId: call.principal.accountId,
    endpoint: call.endpoint,
    model: call.model.id,
    provider: call.model.provider.name,
    upstreamModel: call.model.upstreamId,
    reserve: call.reserve,
    estimate,
  };
  let bill: Bill;
  if (call.principal.limited) {
    const now = (call.now ?? Date.now)();
    const taken = await store.reserveLimited(hold, {
      windows: budgetWindows(now, call.zone),
      minute: Math.floor(now / 60_000) * 60_000,
      // What the hold stands for: the input bound and the output cap of every answer.
      tokens: (call.inputBound ?? 0) + (call.outputCap ?? 0) * (call.choices ?? 1),
    });
    if ("refused" in taken) throw new LimitRefused(taken, limitError(taken, call.principal, now));
    bill = new Bill(store, taken.id, call, estimate, true, taken.tokens);
  } else {
    const id = await store.reserve(hold);
    if (id === null) throw insufficientBalance(call.principal, call.reserve);
    bill = new Bill(store, id, call, estimate);
  }
  call.scope.hold(bill);
  return bill;
}

/**
 * A limited hold refused: the client's error, and the refusal it came from (a caller may retry
 * under a smaller output cap, see `pipeline/hold.ts`).
 */
export class LimitRefused extends GatewayError {
  constructor(readonly refusal: LimitRefusal, error: GatewayError) {
    super(error.status, error.message, error.options);
  }
}

/**
 * Settles entries left held by a crash on their recorded estimate (counted in budgets' windows of
 * now, in `zone`). Resolves to how many.
 */
export async function recoverHolds(store: Store, zone = "UTC"): Promise<number> {
  const holds = await store.pendingHolds();
  for (const h of holds) {
    await store.settle(h.id, { ...h.estimate, estimated: true }, budgetWindows(Date.now(), zone));
  }
  return holds.length;
}
