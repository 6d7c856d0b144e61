/**
 * The admin API's request bodies and query parameters, defined once: `admin.ts` validates with
 * these schemas and `openapi.ts` describes them from the same objects (`http/schema_doc.ts`), so
 * the document cannot say other than what is checked. What the settings code the CLI shares
 * checks beyond them (`billing/key_settings.ts`: a budget's amount and period, an expiry, an
 * address) is a 400 too, and described in words.
 */
import * as v from "valibot";
import { creditToNano, MAX_CREDIT_USD } from "../money.ts";
import { MAX_IPS, MAX_METADATA_PAIRS, MAX_NAME, MAX_PATTERNS } from "../billing/key_settings.ts";

/** Ledger entries per page at most, and by default. */
export const MAX_PAGE = 500;
export const DEFAULT_PAGE = 100;
/** Days of usage at most, and by default. */
export const MAX_DAYS = 366;
export const DEFAULT_DAYS = 30;
/** The longest grace period of a rotated key's old secret, in seconds. */
export const MAX_GRACE_SECONDS = 366 * 86_400;

/** An account's name. */
export const ACCOUNT_NAME_PATTERN = /^[\w.@-]{1,64}$/;
/** A key's id. */
export const KEY_ID_PATTERN = /^key_[a-z2-9]{12}$/;

const describe = <T extends v.GenericSchema>(schema: T, text: string) =>
  v.pipe(schema, v.description(text));

const ACCOUNT_NAME = v.pipe(
  v.string("must be a string"),
  v.regex(ACCOUNT_NAME_PATTERN, "must be 1–64 characters of letters, digits, _ . @ -"),
  v.description("An account's name: 1–64 letters, digits, _ . @ -."),
);
/** A credit in USD: a decimal string of at most `MAX_CREDIT_USD` either way. */
const USD = v.pipe(
  v.string('must be a decimal string such as "10" or "2.50"'),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const nano = creditToNano(dataset.value);
    if (typeof nano === "string") {
      addIssue({
        message: nano === "must be a decimal amount in USD"
          ? "must be a USD amount such as 2.50"
          : nano,
      });
    }
  }),
);

const INTEGER = v.pipe(v.number("must be an integer"), v.integer("must be an integer"));
const nullable = <T extends v.GenericSchema>(schema: T) => v.optional(v.nullable(schema));
/** A whole number from 0 (`zero`: what 0 means) to `max` (`above`: the message past it). */
const upTo = (max: number, above: string, zero: string, text: string) =>
  describe(
    v.pipe(INTEGER, v.minValue(0, `must be ≥ 0 (0: ${zero})`), v.maxValue(max, above)),
    text,
  );
const STRINGS = v.array(v.string("must be a string"), "must be a list of strings");
const PATTERNS = (text: string) =>
  describe(v.pipe(STRINGS, v.maxLength(MAX_PATTERNS, `must have at most ${MAX_PATTERNS}`)), text);
const BUDGETS = describe(
  v.array(
    v.strictObject({
      usd: describe(
        v.string('must be a decimal string such as "20"'),
        "The limit in USD, a decimal string (at most 9 decimal places), more than 0.",
      ),
      period: describe(
        v.string('must be "5h", "day", "week", "month" or "total"'),
        'The window: "5h", "day", "week", "month" or "total" (also "daily", "weekly", ' +
          '"monthly", "lifetime").',
      ),
    }),
    "must be a list of {usd, period}",
  ),
  "At most one budget per period; an empty list or null clears them.",
);

/** A key's settings in the admin API (see `billing/key_settings.ts`; null clears one). */
const KEY_SETTINGS = {
  name: nullable(describe(
    v.pipe(
      v.string("must be a string"),
      v.minLength(1, `must be 1–${MAX_NAME} characters`),
      v.maxLength(MAX_NAME, `must be 1–${MAX_NAME} characters`),
    ),
    "A name for people (printable characters).",
  )),
  metadata: nullable(describe(
    v.pipe(
      // valibot's record would take an array as an object keyed "0", "1", …
      v.custom<unknown>((value) => !Array.isArray(value), "must be an object of strings"),
      v.record(v.string(), v.string("values must be strings"), "must be an object of strings"),
    ),
    `Up to ${MAX_METADATA_PAIRS} string pairs the operator keeps with the key; null clears them.`,
  )),
  expires_at: nullable(describe(
    v.union([v.string(), INTEGER], "must be a date-time or ms since the epoch"),
    "When the key stops working: a date (2027-01-31, UTC midnight), a date-time " +
      "(2027-01-31T18:00:00Z), ms since the epoch, or a duration from now (30d, 12h, 2w); " +
      "null or never: no expiry.",
  )),
  expires_in: v.optional(describe(
    v.string("must be a duration such as 30d"),
    "When the key stops working, as a duration from now: 90m, 12h, 30d, 2w.",
  )),
  budgets: nullable(BUDGETS),
  models: nullable(PATTERNS("Model ids and * patterns the key may call (null: every model).")),
  deny_models: nullable(PATTERNS("Model ids and * patterns it may not call.")),
  tpm: nullable(
    upTo(
      1e9,
      "must be ≤ 1e9",
      "none",
      "Tokens per minute, input and output (0 or null: no limit).",
    ),
  ),
  max_concurrent: nullable(
    upTo(100_000, "must be ≤ 100000", "none", "Calls in flight at once (0 or null: no limit)."),
  ),
  ips: nullable(describe(
    v.pipe(STRINGS, v.maxLength(MAX_IPS, `must have at most ${MAX_IPS}`)),
    "IPv4/IPv6 addresses and CIDR ranges the key may be used from (null: anywhere).",
  )),
  rpm: nullable(
    upTo(
      1_000_000,
      "must be at most 1000000",
      "unlimited",
      "Requests per minute (0: unlimited; null: limits.defaultRpm).",
    ),
  ),
  strict: v.optional(describe(
    v.boolean("must be true or false"),
    "Strict mode: the key's translated calls are refused (400) where the target protocol would " +
      "adapt the request, instead of adapted (see x-switchyard-adapted).",
  )),
};

/** `POST /admin/api/keys`. */
export const NewKey = v.strictObject({
  account: ACCOUNT_NAME,
  credit_usd: v.optional(describe(
    USD,
    `Credit to add to the account, a decimal USD string (at most ${MAX_CREDIT_USD}).`,
  )),
  ...KEY_SETTINGS,
});

/** `PATCH /admin/api/keys/:id`: what is absent stays. */
export const KeyChange = v.strictObject({
  ...KEY_SETTINGS,
  disabled: v.optional(describe(v.boolean(), "true disables the key, false enables it.")),
});

/** `POST /admin/api/keys/:id/rotate`. */
export const Rotation = v.strictObject({
  grace_seconds: v.optional(describe(
    v.pipe(INTEGER, v.minValue(0), v.maxValue(MAX_GRACE_SECONDS)),
    "How long the old secret keeps working, in seconds (default 0: not at all).",
  )),
});

/** `PATCH /admin/api/accounts/:name`: what is absent stays. */
export const AccountChange = v.strictObject({
  budgets: nullable(BUDGETS),
  models: nullable(PATTERNS("Model ids and * patterns the account's keys may call.")),
  deny_models: nullable(PATTERNS("Model ids and * patterns they may not call.")),
});

/** `POST /admin/api/accounts`. */
export const NewAccount = v.strictObject({ name: ACCOUNT_NAME });

/** `POST /admin/api/accounts/:name/credit`. */
export const Credit = v.strictObject({
  usd: describe(
    USD,
    `A decimal USD string: added, or removed when negative (at most ${MAX_CREDIT_USD} either ` +
      "way; a debit at most what the account has available).",
  ),
});
