/**
 * The windows of per-key and per-account budgets ("$20 per month", "$5 per 5 hours", "$500 total").
 *
 * A window is derived from the clock alone: `windowOf(period, at)` says which window the instant `at`
 * falls in, so a budget resets by itself the moment its window ends, with no job, no timer and no
 * drift. Windows are half-open `[start, end)` in UTC milliseconds; `end` is the next window's
 * `start`, so consecutive windows tile time with no gap and no overlap.
 *
 * Calendar periods (`day`, `week`, `month`) follow the local calendar of one IANA time zone ("UTC"
 * by default, or the gateway's configured zone). Local times come from `Intl.DateTimeFormat`,
 * whose time-zone data is the runtime's own; formatters and the last window of each period are
 * cached per zone, so a call whose instant falls in the cached window does no date arithmetic.
 *
 * Pure apart from those caches: no I/O, no clock reads (the caller passes `at`).
 */

/** How often a budget starts afresh. */
export type BudgetPeriod = "5h" | "day" | "week" | "month" | "total";

/** A budget window: the instants `start <= t < end`, in milliseconds since the Unix epoch (UTC). */
export interface BudgetWindow {
  /** The first instant of the window (inclusive). */
  readonly start: number;
  /** The first instant of the next window (exclusive); `Infinity` for `total`. */
  readonly end: number;
}

const SECOND = 1_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const FIVE_HOURS = 5 * HOUR;

/** The latest instant `windowOf` accepts, exclusive: 10000-01-01T00:00Z. */
export const MAX_INSTANT = 253_402_300_800_000;

/** The one `total` window: it began at the Unix epoch and never ends. */
const TOTAL: BudgetWindow = Object.freeze({ start: 0, end: Infinity });

/** Calendar periods: their windows depend on the time zone. */
type CalendarPeriod = "day" | "week" | "month";

/** A calendar window and its index (see `calendarWindow`). */
interface Numbered {
  readonly window: BudgetWindow;
  readonly index: number;
}

/** A time zone as `windowOf` uses it: a formatter (null for UTC) and the last window per period. */
interface Zone {
  /** Formats an instant as `M/D/YYYY, HH:MM:SS` local time; null when the zone is UTC. */
  readonly format: Intl.DateTimeFormat | null;
  day: Numbered | null;
  week: Numbered | null;
  month: Numbered | null;
}

const zones = new Map<string, Zone>();
let last5h: BudgetWindow | null = null;

/**
 * The window of `period` that contains the instant `at`, in the IANA time zone `timeZone`. `at` is
 * in ms since the Unix epoch, 0 <= at < {@link MAX_INSTANT} (1970 to 9999; `total` starts at the
 * epoch), otherwise a RangeError. The zone matters to calendar periods only, and is a RangeError
 * there when the runtime does not know it. Always `start <= at < end`, and `end` is the next
 * window's start; `start` may be before 1970 for the windows holding the first instants.
 *
 * - `day`: from 00:00 local time to the next day's 00:00. A day may last 23 or 25 hours (or 23.5
 *   or 24.5 in Australia/Lord_Howe) when the clocks change.
 * - `week`: ISO weeks, from Monday 00:00 local time to the next Monday's.
 * - `month`: from the 1st at 00:00 local time to the next month's 1st.
 * - `5h`: consecutive 5-hour blocks counted from the Unix epoch (1970-01-01T00:00Z), whatever the
 *   time zone: 24 is not a multiple of 5, so blocks counted from each local midnight would not
 *   tile. The blocks therefore start 4 hours earlier in the (UTC) day from one day to the next
 *   (00:00, 05:00, 10:00, 15:00, 20:00Z on 1970-01-01; 01:00, 06:00, … the next day).
 * - `total`: the lifetime window `{ start: 0, end: Infinity }`: it never resets. `Infinity` (not a
 *   large integer) so that `at < end` holds for every instant and no date can be mistaken for a
 *   reset; where it is serialized (JSON turns it into `null`) it means "never".
 *
 * Midnight follows the local clock, as `Temporal.ZonedDateTime#startOfDay` does: a day starts at
 * the earliest instant its date reads 00:00. When a zone skips midnight (clocks jump from 24:00 to
 * 01:00, as in America/Santiago every September), the day starts at the first instant that exists
 * after it, the instant of the jump. When the clocks go back across midnight (America/Goose_Bay
 * until 2010: 00:01 back to 23:01), the day starts at the first midnight, and the repeated hour of
 * the previous date belongs to the new day's window, so windows never overlap.
 *
 * The returned object is frozen and may be shared between calls.
 */
export function windowOf(period: BudgetPeriod, at: number, timeZone = "UTC"): BudgetWindow {
  if (!(at >= 0 && at < MAX_INSTANT)) {
    throw new RangeError(`instant ${at} is outside 1970-01-01..9999-12-31`);
  }
  switch (period) {
    case "total":
      return TOTAL;
    case "5h": {
      const cached = last5h;
      if (cached !== null && cached.start <= at && at < cached.end) return cached;
      const start = Math.floor(at / FIVE_HOURS) * FIVE_HOURS;
      return last5h = Object.freeze({ start, end: start + FIVE_HOURS });
    }
    case "day":
    case "week":
    case "month": {
      const zone = zoneOf(timeZone);
      const cached = zone[period];
      if (cached !== null && cached.window.start <= at && at < cached.window.end) {
        return cached.window;
      }
      return (zone[period] = calendarWindow(zone, period, at, cached)).window;
    }
    default:
      throw new RangeError(`unknown budget period ${JSON.stringify(period)}`);
  }
}

/**
 * Reads a period name as operators write it: `5h`, `day`/`daily`, `week`/`weekly`,
 * `month`/`monthly`, `total`/`lifetime`, in any case and with surrounding blanks. Null otherwise.
 */
export function parseBudgetPeriod(text: string): BudgetPeriod | null {
  switch (text.trim().toLowerCase()) {
    case "5h":
      return "5h";
    case "day":
    case "daily":
      return "day";
    case "week":
    case "weekly":
      return "week";
    case "month":
    case "monthly":
      return "month";
    case "total":
    case "lifetime":
      return "total";
    default:
      return null;
  }
}

const MAX_NANO = BigInt(Number.MAX_SAFE_INTEGER);
const PERIODS_HELP = "5h, day, week, month or total";

/**
 * Reads a budget as the CLI takes it: `AMOUNT/PERIOD` in USD, such as `20/month`, `5/5h`,
 * `0.50/day`, `100/total` or `12.5 / week` (blanks around either part are ignored; the period as
 * {@link parseBudgetPeriod} reads it). The amount is a positive decimal with at most 9 decimal
 * places (1 nanoUSD) and no sign or exponent, and at most 9007199.254740991 USD (the largest whole
 * number of nanoUSD a JS number holds exactly); it is returned as written, as a decimal string, for
 * the caller to convert exactly to integer nanoUSD (1 USD = 1e9 nanoUSD). Returns an error message
 * instead when the text is not such a budget.
 */
export function parseBudget(text: string): { usd: string; period: BudgetPeriod } | string {
  const parts = text.split("/");
  if (parts.length !== 2) {
    return `a budget is AMOUNT/PERIOD in USD, such as 20/month, 5/5h or 0.50/day; got ${
      JSON.stringify(text)
    }`;
  }
  const usd = parts[0].trim();
  const match = /^(\d+)(?:\.(\d+))?$/.exec(usd);
  if (match === null) {
    return `the budget amount must be a decimal number of USD such as 20 or 0.50; got ${
      JSON.stringify(usd)
    }`;
  }
  const fraction = match[2] ?? "";
  if (fraction.length > 9) {
    return `the budget amount must have at most 9 decimal places (1 nanoUSD); got ${usd}`;
  }
  const nano = BigInt(match[1] + fraction.padEnd(9, "0"));
  if (nano === 0n) return `the budget amount must be more than zero; got ${usd}`;
  if (nano > MAX_NANO) return `the budget amount must be at most 9007199.254740991 USD; got ${usd}`;
  const period = parseBudgetPeriod(parts[1]);
  if (period === null) {
    return `the budget period must be ${PERIODS_HELP}; got ${JSON.stringify(parts[1].trim())}`;
  }
  return { usd, period };
}

/** The cached state of a time zone, created on first use; a RangeError for an unknown zone. */
function zoneOf(timeZone: string): Zone {
  let zone = zones.get(timeZone);
  if (zone === undefined) {
    const format = new Intl.DateTimeFormat("en-US", {
      timeZone,
      calendar: "gregory",
      numberingSystem: "latn",
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    const utc = format.resolvedOptions().timeZone === "UTC";
    zone = { format: utc ? null : format, day: null, week: null, month: null };
    zones.set(timeZone, zone);
  }
  return zone;
}

/**
 * Computes the calendar window containing `at`. Windows are numbered by a local-calendar index
 * (day number since 1970-01-01 for days and weeks — the Monday's for weeks — and year * 12 + month
 * for months); the local date of `at` gives the index, then the index moves while `at` falls
 * outside, which only happens in the repeated hour of a fall-back across midnight. A boundary
 * shared with `previous` (the last window computed, typically the one just ended) is reused.
 */
function calendarWindow(
  zone: Zone,
  period: CalendarPeriod,
  at: number,
  previous: Numbered | null,
): Numbered {
  const offset = zone.format === null ? 0 : offsetAt(zone, at);
  const wall = at + offset;
  const dayNumber = Math.floor(wall / DAY);
  let index: number;
  let step: number;
  if (period === "day") {
    index = dayNumber;
    step = 1;
  } else if (period === "week") {
    index = dayNumber - mod(dayNumber + 3, 7); // 1970-01-01 was a Thursday: Monday is 0.
    step = 7;
  } else {
    const date = new Date(wall);
    index = date.getUTCFullYear() * 12 + date.getUTCMonth();
    step = 1;
  }
  let start = previous?.index === index - step
    ? previous.window.end
    : startOfLocalDay(zone, boundaryWall(period, index), offset);
  let end = previous?.index === index + step
    ? previous.window.start
    : startOfLocalDay(zone, boundaryWall(period, index + step), offset);
  while (at < start) {
    index -= step;
    end = start;
    start = startOfLocalDay(zone, boundaryWall(period, index), offset);
  }
  while (at >= end) {
    index += step;
    start = end;
    end = startOfLocalDay(zone, boundaryWall(period, index + step), offset);
  }
  return { window: Object.freeze({ start, end }), index };
}

/** Local midnight that starts window `index`, as a wall-clock time read as if it were UTC. */
function boundaryWall(period: CalendarPeriod, index: number): number {
  if (period !== "month") return index * DAY;
  return Date.UTC(Math.floor(index / 12), mod(index, 12), 1);
}

/**
 * The first instant of the local day whose midnight is `wall` (local 00:00 read as if UTC): the
 * earliest instant the local clock reads `wall`, or when the clocks skip it, the instant they jump.
 * `guess` is the offset the zone likely has then (the offset of the instant asked about).
 */
function startOfLocalDay(zone: Zone, wall: number, guess: number): number {
  if (zone.format === null) return wall;
  // Most days: the guessed offset holds at the midnight and through the day before, so the local
  // clock reads `wall` there and at no earlier instant.
  const quick = wall - guess;
  if (offsetAt(zone, quick) === guess && offsetAt(zone, quick - DAY) === guess) return quick;
  // Offsets around the midnight: a day before and a day after cover every offset it can have
  // (tz transitions are months apart).
  const before = offsetAt(zone, wall - DAY);
  const after = offsetAt(zone, wall + DAY);
  let best = Infinity;
  let low = Infinity;
  let high = -Infinity;
  const tried: number[] = [];
  for (const offset of [before, after]) {
    if (tried.includes(offset)) continue;
    tried.push(offset);
    const candidate = wall - offset;
    const actual = offsetAt(zone, candidate);
    if (actual === offset) best = Math.min(best, candidate);
    low = Math.min(low, offset, actual);
    high = Math.max(high, offset, actual);
  }
  if (best !== Infinity) return best;
  // Midnight falls in a gap: find the jump, the first instant whose local time is past it. Before
  // the gap the local time is below `wall` at `wall - high`, after it above at `wall - low`;
  // transitions fall on whole seconds.
  let lo = wall - high;
  let hi = wall - low;
  while (hi - lo > SECOND) {
    const mid = lo + Math.floor((hi - lo) / (2 * SECOND)) * SECOND;
    if (mid + offsetAt(zone, mid) >= wall) hi = mid;
    else lo = mid;
  }
  return hi;
}

const FORMATTED = /^(\d+)\/(\d+)\/(\d+),? (\d+):(\d+):(\d+)$/;

/** The zone's UTC offset at instant `t`, in ms (whole seconds: tz offsets have no fractions). */
function offsetAt(zone: Zone, t: number): number {
  const format = zone.format!;
  const second = Math.floor(t / SECOND) * SECOND;
  const match = FORMATTED.exec(format.format(second));
  let wall: number;
  if (match !== null) {
    wall = Date.UTC(+match[3], +match[1] - 1, +match[2], +match[4], +match[5], +match[6]);
  } else {
    // Some other rendering of en-US: read the parts by name instead (slower).
    const parts: Record<string, number> = {};
    for (const part of format.formatToParts(second)) parts[part.type] = Number(part.value);
    wall = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second);
  }
  return wall - second;
}

/** `n` modulo `m`, in 0..m-1 for negative `n` too. */
function mod(n: number, m: number): number {
  return ((n % m) + m) % m;
}

/** Every period's window at instant `at` (see `windowOf`): what a budgeted hold is counted in. */
export function budgetWindows(at: number, timeZone = "UTC"): Record<BudgetPeriod, BudgetWindow> {
  return {
    "5h": windowOf("5h", at, timeZone),
    day: windowOf("day", at, timeZone),
    week: windowOf("week", at, timeZone),
    month: windowOf("month", at, timeZone),
    total: windowOf("total", at, timeZone),
  };
}
