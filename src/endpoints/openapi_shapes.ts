/**
 * The JSON shapes the admin API answers with, as JSON Schema for its OpenAPI document
 * (`openapi.ts`): keys (`billing/accounts_json.ts` `keyJson`), accounts (`accountJson`), budget states
 * (`billing/spend_report.ts` `budgetJson`), ledger entries, usage, the error envelope. They are
 * written out here; `tests/openapi_test.ts` checks real answers against them, property by
 * property, both ways (a field the code adds and the document lacks fails it too).
 */
import type { JsonSchema } from "../http/schema_doc.ts";
import { orNull } from "../http/schema_doc.ts";
import { BUDGET_PERIODS } from "../store/store.ts";

const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const str = (description?: string): JsonSchema => ({
  type: "string",
  ...(description ? { description } : {}),
});
const int = (description?: string): JsonSchema => ({
  type: "integer",
  ...(description ? { description } : {}),
});
const time = (description?: string): JsonSchema => ({ ...str(description), format: "date-time" });
const list = (items: JsonSchema): JsonSchema => ({ type: "array", items });
const constant = (value: string | boolean): JsonSchema => ({ const: value });

/** An object whose every property is required but those named in `optional`. */
function object(
  properties: Record<string, JsonSchema>,
  description?: string,
  optional: string[] = [],
): JsonSchema {
  return {
    type: "object",
    ...(description ? { description } : {}),
    properties,
    required: Object.keys(properties).filter((p) => !optional.includes(p)),
  };
}

/** `<prefix>_usd` (exact decimal string) and `<prefix>_nanousd` (integer, exact past 2^53). */
function amount(prefix: string, what: string): Record<string, JsonSchema> {
  return {
    [`${prefix}_usd`]: {
      type: "string",
      pattern: "^-?\\d+\\.\\d{2,9}$",
      description: `${what}, in USD (an exact decimal string).`,
    },
    [`${prefix}_nanousd`]: int(`${what}, in nanoUSD (1 USD = 10^9; an exact integer).`),
  };
}

const PERIOD: JsonSchema = { type: "string", enum: [...BUDGET_PERIODS] };

const BUDGET = object({
  period: PERIOD,
  usd: str("The limit in USD."),
  nanousd: int("The limit in nanoUSD."),
}, "A budget as set: at most this much charged per window of the period.");

const MODELS = (what: string): JsonSchema => orNull({ ...list(str()), description: what });

/** A key as listed (`keyJson`). */
const KEY_FIELDS: Record<string, JsonSchema> = {
  id: str("The key's id (key_…); its secret starts with sy-<the id's letters>-."),
  account: str("The account the key spends from."),
  name: orNull(str("A name for people.")),
  prefix: str("The secret's first characters, to tell keys apart."),
  status: { type: "string", enum: ["active", "disabled", "expired", "revoked"] },
  rpm: orNull(int("Requests per minute (0: unlimited; null: the configured default).")),
  budgets: list(ref("Budget")),
  models: MODELS("Model ids and * patterns the key may call (null: every model)."),
  deny_models: MODELS("Model ids and * patterns it may not call."),
  tpm: orNull(int("Tokens per minute (null: no limit).")),
  max_concurrent: orNull(int("Calls in flight at once (null: no limit).")),
  ips: MODELS("Addresses and CIDR ranges it may be used from (null: anywhere)."),
  strict: {
    type: "boolean",
    description:
      "Strict mode: its translated calls are refused where they would be adapted (see x-switchyard-adapted).",
  },
  metadata: { type: "object", additionalProperties: str() },
  expires_at: orNull(time()),
  last_used_at: orNull(time("When it was last used (kept to about a minute).")),
  created_at: time(),
  disabled_at: orNull(time()),
  revoked_at: orNull(time()),
  previous_valid_until: orNull(time("Until when a rotated key's old secret still works.")),
};

/** An account (`accountJson`). */
const ACCOUNT_FIELDS: Record<string, JsonSchema> = {
  name: str(),
  ...amount("balance", "The spendable balance"),
  ...amount("spent", "Everything charged so far"),
  created_at: time(),
  budgets: list(ref("Budget")),
  models: MODELS("Model ids and * patterns the account's keys may call (null: every model)."),
  deny_models: MODELS("Model ids and * patterns they may not call."),
};

const DAY = object({
  day: str("A UTC day, YYYY-MM-DD."),
  requests: int(),
  ...amount("spent", "Settled spend that day"),
});

/** One set of calls' prompt-cache figures (`billing/cache_report.ts` `cacheFigures`). */
const CACHE_FIGURES: Record<string, JsonSchema> = {
  requests: int("Calls with input tokens."),
  input_tokens: int("Every input token of those calls: read, written and neither."),
  cached_input_tokens: int("Input tokens read from the prompt cache."),
  cache_write_tokens: int("Input tokens written to the cache with the 5-minute lifetime."),
  cache_write_1h_tokens: int("Input tokens written to the cache with the 1-hour lifetime."),
  uncached_input_tokens: int("Input tokens neither read from nor written to the cache."),
  hit_rate: orNull({
    type: "number",
    description: "cached_input_tokens ÷ input_tokens, from 0 to 1 (null: no input).",
  }),
  ...amount("saved", "What the reads saved: the cached tokens at the input rate minus their cost"),
  missed_input_tokens: int(
    "Input tokens calls would have read from the cache but for a miss the gateway caused.",
  ),
  ...amount("lost", "What those misses lost, estimated: the tokens × (input − cached rate)"),
  misses: {
    type: "object",
    description: "The misses the gateway caused, by cause (failover, key_rotation, translation).",
    additionalProperties: object({
      requests: int(),
      missed_input_tokens: int(),
      ...amount("lost", "Lost, estimated"),
    }),
  },
};

/** A cache report (`billing/cache_report.ts` `cacheReport`): figures, by model and by day. */
const CACHE_REPORT_FIELDS: Record<string, JsonSchema> = {
  ...CACHE_FIGURES,
  by_model: {
    type: "object",
    description: "By public model id.",
    additionalProperties: ref("CacheFigures"),
  },
  by_day: list(object({ day: str("A UTC day, YYYY-MM-DD."), ...CACHE_FIGURES })),
};

/** The fields every alert starts with, as its event is delivered. */
function alertHead(type: string, what: string): Record<string, JsonSchema> {
  return {
    id: str("The alert's id (alert_…): the event's id and its x-switchyard-delivery header."),
    type: { ...constant(type), description: what },
    created_at: time(),
    account: str(),
    message: str("One line for people."),
  };
}

/** Its delivery to the webhook, beside the event's fields. */
const ALERT_DELIVERY: Record<string, JsonSchema> = {
  status: {
    type: "string",
    enum: ["pending", "delivered", "failed", "unsent"],
    description:
      "pending: being delivered or retried; failed: given up; unsent: no webhook was configured (logged and listed only).",
  },
  attempts: int("Deliveries tried."),
  next_attempt_at: orNull(time()),
  last_attempt_at: orNull(time()),
  last_error: orNull(str()),
  delivered_at: orNull(time()),
};

/** `components.schemas` of the document. */
export const SCHEMAS: Record<string, JsonSchema> = {
  Error: object({
    error: object({
      message: str(),
      type: str(),
      param: orNull(str("The request field at fault.")),
      code: orNull(str()),
    }),
  }, "An error, in OpenAI's shape."),
  Budget: BUDGET,
  BudgetState: object({
    owner: { type: "string", enum: ["key", "account"] },
    period: PERIOD,
    ...amount("limit", "The budget"),
    ...amount("spent", "Settled in the current window"),
    ...amount("held", "Held by calls in flight"),
    ...amount("remaining", "What is left"),
    window_start: time(),
    resets_at: orNull(time("When the window ends (null: a total budget never resets).")),
  }, "A budget as it stands now."),
  Key: object(KEY_FIELDS, "A key (never its secret)."),
  KeyDetail: object({
    object: constant("key"),
    ...KEY_FIELDS,
    budget_states: list(ref("BudgetState")),
  }, "A key with its budgets and its account's as they stand now."),
  KeyList: object({ object: constant("list"), data: list(ref("Key")) }),
  CreatedKey: object({
    object: constant("key"),
    key: str("The secret: shown in this answer only."),
    id: str(),
    account: str(),
    rpm: orNull(int()),
    balance_usd: str("The account's balance after the credit, in USD."),
  }, "A new key and its secret."),
  RotatedKey: object({
    object: constant("key"),
    key: str("The new secret: shown in this answer only."),
    id: str(),
    previous_valid_until: orNull(time("Until when the old secret still works.")),
  }),
  RevokedKey: object({ object: constant("key"), id: str(), revoked: constant(true) }),
  Account: object(ACCOUNT_FIELDS, "An account."),
  ListedAccount: object({
    ...ACCOUNT_FIELDS,
    ...amount("held", "Held by calls in flight"),
  }),
  AccountList: object({ object: constant("list"), data: list(ref("ListedAccount")) }),
  AccountDetail: object({
    ...ACCOUNT_FIELDS,
    budget_states: list(ref("BudgetState")),
  }, "An account with its budgets as they stand now."),
  DayUsage: DAY,
  CacheFigures: object(CACHE_FIGURES, "What the prompt cache did for a set of calls."),
  CacheReport: object(
    CACHE_REPORT_FIELDS,
    "The prompt cache's figures of the window's calls, in total, by model and by UTC day.",
  ),
  AccountCacheReport: object({
    ...CACHE_REPORT_FIELDS,
    by_key: {
      type: "object",
      description: "By key id.",
      additionalProperties: ref("CacheReport"),
    },
  }, "An account's prompt-cache figures of the window, also by key."),
  AccountUsage: object({
    object: constant("usage"),
    account: str(),
    ...amount("balance", "The spendable balance"),
    ...amount("spent", "Everything charged so far"),
    ...amount("held", "Held by calls in flight"),
    requests: int(),
    by_day: list(ref("DayUsage")),
    by_unit: {
      type: "object",
      description: "Spend by unit (input_tokens, output_tokens, image, …).",
      additionalProperties: object({ quantity: int(), ...amount("spent", "Spent") }),
    },
    by_model: {
      type: "object",
      description: "Spend by public model id.",
      additionalProperties: object({ requests: int(), ...amount("spent", "Spent") }),
    },
    cache: ref("AccountCacheReport"),
  }),
  TotalUsage: object({
    object: constant("usage"),
    days: int(),
    since: str("The first day, YYYY-MM-DD (UTC)."),
    requests: int(),
    ...amount("spent", "Settled spend in the window"),
    by_day: list(ref("DayUsage")),
    cache: ref("CacheReport"),
  }),
  LedgerEntry: object({
    id: int(),
    kind: { type: "string", enum: ["charge", "credit"] },
    status: { type: "string", enum: ["held", "settled"] },
    account: str(),
    request_id: orNull(str()),
    key_id: orNull(str()),
    endpoint: orNull(str()),
    model: orNull(str("The public model id the call was charged as.")),
    provider: orNull(str()),
    upstream_model: orNull(str("The model id the upstream served the call as.")),
    ...amount("amount", "The amount (a debit is negative)"),
    units: list(object({
      unit: str(),
      quantity: int(),
      ...amount("amount", "This line's amount"),
    })),
    cache: orNull(object({
      input_tokens: int("Every input token of the call."),
      cached_input_tokens: int("Read from the prompt cache."),
      cache_write_tokens: int("Written to it for 5 minutes."),
      cache_write_1h_tokens: int("Written to it for an hour."),
      ...amount("saved", "What the reads saved"),
      miss: orNull(object({
        cause: str("Why the gateway made the call miss: failover, key_rotation, translation."),
        missed_input_tokens: int("Input tokens it would have read from the cache."),
        ...amount("lost", "What that lost, estimated"),
      }, "A miss the gateway caused (null: none known).")),
    }, "What the prompt cache did for the call (null: no input tokens recorded).")),
    estimated: { type: "boolean", description: "Charged on an estimate (no usage reported)." },
    note: orNull(str()),
    created_at: time(),
    settled_at: orNull(time()),
  }),
  LedgerPage: object({
    object: constant("list"),
    data: list(ref("LedgerEntry")),
    next: orNull(int("The `before` of the next page (null: this is the last).")),
  }),
  BudgetAlert: object({
    ...alertHead("budget.threshold", "A budget reached a threshold in its window."),
    key_id: orNull(str("The key whose budget (or whose call) it is; null for an account's.")),
    key_name: orNull(str()),
    owner: { type: "string", enum: ["key", "account"] },
    period: PERIOD,
    threshold_percent: int("The threshold reached, in percent of the budget."),
    ...amount("limit", "The budget"),
    ...amount("spent", "Settled in the window when it was raised"),
    window_start: time(),
    resets_at: orNull(time("When the window ends (null: a total budget never resets).")),
    refused: {
      type: "boolean",
      description: "Raised because the budget refused a call it could no longer cover.",
    },
    ...ALERT_DELIVERY,
  }),
  BalanceAlert: object({
    ...alertHead("balance.low", "An account's balance is below its alert amount."),
    key_id: { type: "null" },
    ...amount("threshold", "The alert amount"),
    ...amount("balance", "The balance when it was raised"),
    ...amount("held", "Held by calls in flight then"),
    since: time("The account's last credit: one alert per credit."),
    ...ALERT_DELIVERY,
  }),
  ExpiringKeyAlert: object({
    ...alertHead("key.expiring", "A key expires soon."),
    key_id: str(),
    key_name: orNull(str()),
    expires_at: time(),
    ...ALERT_DELIVERY,
  }),
  AlertPage: object({
    object: constant("list"),
    data: list({
      anyOf: [ref("BudgetAlert"), ref("BalanceAlert"), ref("ExpiringKeyAlert")],
    }),
    next: orNull(str("The `before` of the next page (null: this is the last).")),
  }),
  OpenApiDocument: { type: "object", description: "This document." },
};
