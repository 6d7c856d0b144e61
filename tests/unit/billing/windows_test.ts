import assert from "node:assert/strict";
import {
  type BudgetPeriod,
  type BudgetWindow,
  MAX_INSTANT,
  parseBudget,
  parseBudgetPeriod,
  windowOf,
} from "../../../src/billing/windows.ts";
import { isTimeZone } from "../../../src/config/schema.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const ms = (iso: string): number => {
  const t = Date.parse(iso);
  assert.ok(!Number.isNaN(t), iso);
  return t;
};

/** The window as ISO strings, for readable failures. */
function show(w: BudgetWindow): string {
  return `${new Date(w.start).toISOString()}..${
    w.end === Infinity ? "∞" : new Date(w.end).toISOString()
  }`;
}

/** Asserts the window of `period` at `at` is [start, end) and that the edges behave. */
function assertWindow(
  period: BudgetPeriod,
  at: number,
  start: number,
  end: number,
  timeZone = "UTC",
): void {
  const w = windowOf(period, at, timeZone);
  assert.equal(show(w), show({ start, end }), `${period} in ${timeZone} at ${new Date(at)}`);
  // The first and last instants belong to it; the instants just outside to its neighbours (those
  // before 1970 are outside windowOf's domain).
  if (start >= 0) assert.equal(show(windowOf(period, start, timeZone)), show(w));
  if (start > 0) assert.equal(windowOf(period, start - 1, timeZone).end, start);
  assert.equal(show(windowOf(period, end - 1, timeZone)), show(w));
  assert.equal(windowOf(period, end, timeZone).start, end);
}

/** A small seeded PRNG (mulberry32), so that a failing random case can be replayed. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** Local wall-clock time of an instant in a zone, as Intl renders it ("2026-09-06 01:00:00"). */
function local(t: number, timeZone: string): string {
  const parts: Record<string, string> = {};
  let format = formats.get(timeZone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    formats.set(timeZone, format);
  }
  for (const part of format.formatToParts(t)) parts[part.type] = part.value;
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
}

/** The zone's UTC offset at `t` in ms, read from Intl. */
function offset(t: number, timeZone: string): number {
  const wall = Date.parse(local(t, timeZone).replace(" ", "T") + "Z");
  return wall - Math.floor(t / 1000) * 1000;
}

/** The instants the zone's offset changes in [from, to), found with Intl: hourly scan, bisection. */
function transitions(timeZone: string, from: number, to: number): number[] {
  const found: number[] = [];
  for (let t = from; t < to; t += HOUR) {
    if (offset(t, timeZone) === offset(t + HOUR, timeZone)) continue;
    let lo = t;
    let hi = t + HOUR;
    while (hi - lo > 1000) {
      const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
      if (offset(mid, timeZone) === offset(t, timeZone)) lo = mid;
      else hi = mid;
    }
    found.push(hi);
  }
  return found;
}

// ---------------------------------------------------------------- UTC calendar boundaries

Deno.test("month windows in UTC: month ends, February in common and leap years, year change", () => {
  assertWindow("month", ms("2026-01-31T23:59:59.999Z"), ms("2026-01-01"), ms("2026-02-01"));
  assertWindow("month", ms("2026-02-01T00:00Z"), ms("2026-02-01"), ms("2026-03-01"));
  // 2026 is a common year: February has 28 days.
  assertWindow("month", ms("2026-02-28T23:59:59.999Z"), ms("2026-02-01"), ms("2026-03-01"));
  assertWindow("month", ms("2026-03-01T00:00Z"), ms("2026-03-01"), ms("2026-04-01"));
  // 2028 is a leap year: February 29 is in February's window.
  assertWindow("month", ms("2028-02-28T23:59:59.999Z"), ms("2028-02-01"), ms("2028-03-01"));
  assertWindow("month", ms("2028-02-29T00:00Z"), ms("2028-02-01"), ms("2028-03-01"));
  assertWindow("month", ms("2028-02-29T23:59:59.999Z"), ms("2028-02-01"), ms("2028-03-01"));
  assert.equal(windowOf("month", ms("2028-02-15")).end - ms("2028-02-01"), 29 * DAY);
  assert.equal(windowOf("month", ms("2026-02-15")).end - ms("2026-02-01"), 28 * DAY);
  assert.equal(windowOf("month", ms("2100-02-15")).end - ms("2100-02-01"), 28 * DAY); // not leap
  assert.equal(windowOf("month", ms("2000-02-15")).end - ms("2000-02-01"), 29 * DAY); // leap
  // December into January: the year changes.
  assertWindow("month", ms("2026-12-31T23:59:59.999Z"), ms("2026-12-01"), ms("2027-01-01"));
  assertWindow("month", ms("2027-01-01T00:00Z"), ms("2027-01-01"), ms("2027-02-01"));
  // 30-day months.
  assertWindow("month", ms("2026-04-30T12:00Z"), ms("2026-04-01"), ms("2026-05-01"));
});

Deno.test("week windows in UTC are ISO weeks: Monday 00:00 to the next Monday", () => {
  // 2026-03-08 is a Sunday, 2026-03-09 a Monday.
  assertWindow("week", ms("2026-03-08T23:59:59.999Z"), ms("2026-03-02"), ms("2026-03-09"));
  assertWindow("week", ms("2026-03-09T00:00Z"), ms("2026-03-09"), ms("2026-03-16"));
  assertWindow("week", ms("2026-03-11T15:00Z"), ms("2026-03-09"), ms("2026-03-16"));
  // A week across a year change: Monday 2026-12-28 to Monday 2027-01-04.
  assertWindow("week", ms("2027-01-01T00:00Z"), ms("2026-12-28"), ms("2027-01-04"));
  // The Unix epoch was a Thursday: its week began on Monday 1969-12-29.
  assertWindow("week", 0, ms("1969-12-29"), ms("1970-01-05"));
  for (const at of [ms("2026-03-08T23:59:59.999Z"), ms("2031-07-20T04:00Z")]) {
    const w = windowOf("week", at);
    assert.equal(new Date(w.start).getUTCDay(), 1);
    assert.equal(w.end - w.start, 7 * DAY);
  }
});

Deno.test("day windows in UTC: 00:00 to 00:00, the first instant in, the last out", () => {
  assertWindow("day", ms("2026-05-17T00:00Z"), ms("2026-05-17"), ms("2026-05-18"));
  assertWindow("day", ms("2026-05-16T23:59:59.999Z"), ms("2026-05-16"), ms("2026-05-17"));
  assertWindow("day", ms("2026-12-31T23:59:59.999Z"), ms("2026-12-31"), ms("2027-01-01"));
  assertWindow("day", 0, 0, DAY);
  assertWindow("day", 1, 0, DAY);
});

Deno.test("5h windows are consecutive 5-hour blocks from the Unix epoch, whatever the zone", () => {
  assertWindow("5h", 0, 0, 5 * HOUR);
  assertWindow("5h", 5 * HOUR - 1, 0, 5 * HOUR);
  assertWindow("5h", 5 * HOUR, 5 * HOUR, 10 * HOUR);
  // 24 h is not a multiple of 5 h: the second day's blocks start at 01:00, 06:00, …
  assertWindow("5h", ms("1970-01-02T00:30Z"), ms("1970-01-01T20:00Z"), ms("1970-01-02T01:00Z"));
  assertWindow("5h", ms("1970-01-02T01:00Z"), ms("1970-01-02T01:00Z"), ms("1970-01-02T06:00Z"));
  // 2026-01-01T00:00Z is 20454 days = 98179.2 blocks after the epoch.
  const block = Math.floor(ms("2026-01-01") / (5 * HOUR)) * 5 * HOUR;
  assert.equal(block, ms("2025-12-31T23:00Z"));
  assertWindow("5h", ms("2026-01-01T00:00Z"), block, block + 5 * HOUR);
  for (const zone of ["Europe/Berlin", "Asia/Kolkata", "Australia/Lord_Howe"]) {
    assertWindow("5h", ms("2026-01-01T00:00Z"), block, block + 5 * HOUR, zone);
    // Across a DST change too: always 5 real hours.
    const w = windowOf("5h", ms("2026-03-29T01:30Z"), zone);
    assert.equal(w.end - w.start, 5 * HOUR);
  }
});

Deno.test("total is one window from the epoch that never ends, in every zone", () => {
  for (const zone of ["UTC", "Europe/Berlin", "Asia/Kolkata"]) {
    for (const at of [0, 1, ms("2026-05-17T12:00Z"), MAX_INSTANT - 1]) {
      const w = windowOf("total", at, zone);
      assert.equal(w.start, 0);
      assert.equal(w.end, Infinity);
      assert.ok(w.start <= at && at < w.end);
    }
  }
});

// ---------------------------------------------------------------- time zones and DST

Deno.test("Europe/Berlin: the day clocks go forward is 23 h, the day they go back 25 h", () => {
  const z = "Europe/Berlin";
  // 2026-03-29: 02:00 CET becomes 03:00 CEST. Local midnights are 23:00Z (CET) and 22:00Z (CEST).
  assertWindow("day", ms("2026-03-29T12:00Z"), ms("2026-03-28T23:00Z"), ms("2026-03-29T22:00Z"), z);
  assert.equal(
    windowOf("day", ms("2026-03-29T12:00Z"), z).end - ms("2026-03-28T23:00Z"),
    23 * HOUR,
  );
  // The instants around the jump: 01:59:59.999 CET and 03:00 CEST are the same day.
  assert.equal(windowOf("day", ms("2026-03-29T00:59:59.999Z"), z).start, ms("2026-03-28T23:00Z"));
  assert.equal(windowOf("day", ms("2026-03-29T01:00Z"), z).start, ms("2026-03-28T23:00Z"));
  // 2026-10-25: 03:00 CEST becomes 02:00 CET. 00:00 CEST is 22:00Z, the next midnight 23:00Z.
  assertWindow("day", ms("2026-10-25T12:00Z"), ms("2026-10-24T22:00Z"), ms("2026-10-25T23:00Z"), z);
  // Both passes of 02:30 local are in that day.
  assert.equal(windowOf("day", ms("2026-10-25T00:30Z"), z).start, ms("2026-10-24T22:00Z"));
  assert.equal(windowOf("day", ms("2026-10-25T01:30Z"), z).start, ms("2026-10-24T22:00Z"));
  // The week and the month that hold the changes are an hour shorter or longer.
  assertWindow(
    "week",
    ms("2026-03-29T12:00Z"),
    ms("2026-03-22T23:00Z"),
    ms("2026-03-29T22:00Z"),
    z,
  );
  assertWindow(
    "week",
    ms("2026-03-30T12:00Z"),
    ms("2026-03-29T22:00Z"),
    ms("2026-04-05T22:00Z"),
    z,
  );
  assertWindow(
    "month",
    ms("2026-03-15T12:00Z"),
    ms("2026-02-28T23:00Z"),
    ms("2026-03-31T22:00Z"),
    z,
  );
  assertWindow(
    "month",
    ms("2026-10-15T12:00Z"),
    ms("2026-09-30T22:00Z"),
    ms("2026-10-31T23:00Z"),
    z,
  );
  // Local month ends: 2027-01-01 00:00 CET is 2026-12-31T23:00Z.
  assertWindow(
    "month",
    ms("2026-12-31T22:59:59.999Z"),
    ms("2026-11-30T23:00Z"),
    ms("2026-12-31T23:00Z"),
    z,
  );
  assertWindow(
    "month",
    ms("2026-12-31T23:00Z"),
    ms("2026-12-31T23:00Z"),
    ms("2027-01-31T23:00Z"),
    z,
  );
  // Leap February in Berlin.
  assertWindow(
    "month",
    ms("2028-02-29T12:00Z"),
    ms("2028-01-31T23:00Z"),
    ms("2028-02-29T23:00Z"),
    z,
  );
});

Deno.test("America/New_York: 23 h on 2026-03-08, 25 h on 2026-11-01", () => {
  const z = "America/New_York";
  assertWindow("day", ms("2026-03-08T12:00Z"), ms("2026-03-08T05:00Z"), ms("2026-03-09T04:00Z"), z);
  assertWindow("day", ms("2026-11-01T12:00Z"), ms("2026-11-01T04:00Z"), ms("2026-11-02T05:00Z"), z);
  // Sunday 23:59:59.999 EST is in the old week; Monday 00:00 starts the new one.
  assertWindow(
    "week",
    ms("2026-03-09T03:59:59.999Z"),
    ms("2026-03-02T05:00Z"),
    ms("2026-03-09T04:00Z"),
    z,
  );
  assertWindow(
    "week",
    ms("2026-03-09T04:00Z"),
    ms("2026-03-09T04:00Z"),
    ms("2026-03-16T04:00Z"),
    z,
  );
  assert.equal(
    windowOf("week", ms("2026-03-05T12:00Z"), z).end - ms("2026-03-02T05:00Z"),
    167 * HOUR,
  );
  // New Year in New York is 05:00Z.
  assertWindow(
    "month",
    ms("2027-01-01T04:59:59.999Z"),
    ms("2026-12-01T05:00Z"),
    ms("2027-01-01T05:00Z"),
    z,
  );
});

Deno.test("Australia/Lord_Howe: a 30-minute DST shift makes 23.5 h and 24.5 h days", () => {
  const z = "Australia/Lord_Howe";
  // +10:30 standard, +11:00 in summer. 2026-04-05 02:00 +11 goes back to 01:30 +10:30.
  assertWindow("day", ms("2026-04-05T06:00Z"), ms("2026-04-04T13:00Z"), ms("2026-04-05T13:30Z"), z);
  // 2026-10-04 02:00 +10:30 goes forward to 02:30 +11.
  assertWindow("day", ms("2026-10-04T06:00Z"), ms("2026-10-03T13:30Z"), ms("2026-10-04T13:00Z"), z);
  assert.equal(
    windowOf("day", ms("2026-04-05T06:00Z"), z).end - ms("2026-04-04T13:00Z"),
    24.5 * HOUR,
  );
  assert.equal(
    windowOf("day", ms("2026-10-04T06:00Z"), z).end - ms("2026-10-03T13:30Z"),
    23.5 * HOUR,
  );
  // Months: October 2026 starts in standard time and ends in summer time.
  assertWindow(
    "month",
    ms("2026-10-15T00:00Z"),
    ms("2026-09-30T13:30Z"),
    ms("2026-10-31T13:00Z"),
    z,
  );
});

Deno.test("Asia/Kolkata: +5:30 all year, no DST", () => {
  const z = "Asia/Kolkata";
  assertWindow("day", ms("2026-01-01T00:00Z"), ms("2025-12-31T18:30Z"), ms("2026-01-01T18:30Z"), z);
  assertWindow(
    "day",
    ms("2026-01-01T18:29:59.999Z"),
    ms("2025-12-31T18:30Z"),
    ms("2026-01-01T18:30Z"),
    z,
  );
  assertWindow(
    "week",
    ms("2026-03-08T18:29:59.999Z"),
    ms("2026-03-01T18:30Z"),
    ms("2026-03-08T18:30Z"),
    z,
  );
  assertWindow(
    "month",
    ms("2026-02-28T18:30Z"),
    ms("2026-02-28T18:30Z"),
    ms("2026-03-31T18:30Z"),
    z,
  );
  for (const at of [ms("2026-03-29T12:00Z"), ms("2026-07-01T12:00Z"), ms("2026-10-25T12:00Z")]) {
    const w = windowOf("day", at, z);
    assert.equal(w.end - w.start, DAY);
    assert.equal(local(w.start, z).slice(11), "00:00:00");
  }
});

Deno.test("America/Santiago skips midnight in September: the day starts when the clocks jump", () => {
  const z = "America/Santiago";
  // Find with Intl the transitions 2026–2028 whose local time jumps over 00:00.
  const skips = transitions(z, ms("2026-01-01"), ms("2029-01-01")).filter((t) =>
    local(t - 1, z).slice(11) === "23:59:59" && local(t, z).slice(11) === "01:00:00"
  );
  assert.equal(skips.length, 3, "one a year");
  assert.equal(new Date(skips[0]).toISOString(), "2026-09-06T04:00:00.000Z");
  for (const jump of skips) {
    const day = windowOf("day", jump, z);
    assert.equal(day.start, jump, `starts at the jump, ${local(jump, z)}`);
    assert.equal(day.end - day.start, 23 * HOUR);
    assert.equal(local(day.end, z).slice(11), "00:00:00");
    // The day before ends at the jump: its last instant reads 23:59:59.999.
    assert.equal(windowOf("day", jump - 1, z).end, jump);
    assert.equal(windowOf("day", jump - 1, z).end - windowOf("day", jump - 1, z).start, DAY);
  }
  // 2026-09-06 is a Sunday: the week is from Monday 2026-08-31 00:00 (-04) and is 167 h long.
  assertWindow("week", skips[0], ms("2026-08-31T04:00Z"), ms("2026-09-07T03:00Z"), z);
  // In April the clocks go back at 24:00 to 23:00 Saturday: midnight happens once, Saturday has 25 h.
  assertWindow("day", ms("2026-04-04T12:00Z"), ms("2026-04-04T03:00Z"), ms("2026-04-05T04:00Z"), z);
});

Deno.test("America/Havana skips midnight in March and repeats it in November", () => {
  const z = "America/Havana";
  const found = transitions(z, ms("2028-01-01"), ms("2029-01-01"));
  assert.equal(found.length, 2);
  const [spring, autumn] = found;
  assert.equal(local(spring - 1, z), "2028-03-11 23:59:59");
  assert.equal(local(spring, z), "2028-03-12 01:00:00");
  assertWindow("day", spring, spring, ms("2028-03-13T04:00Z"), z);
  assert.equal(windowOf("day", spring - 1, z).end, spring);
  // 2028-11-05 01:00 (-04) goes back to 00:00 (-05): midnight happens twice; the day starts at the
  // first one and has 25 h.
  assert.equal(local(autumn - 1, z), "2028-11-05 00:59:59");
  assert.equal(local(autumn, z), "2028-11-05 00:00:00");
  assertWindow("day", autumn, ms("2028-11-05T04:00Z"), ms("2028-11-06T05:00Z"), z);
  assert.equal(windowOf("day", autumn - 1, z).start, ms("2028-11-05T04:00Z"));
});

Deno.test("clocks going back across midnight (America/Goose_Bay, 2008): the repeated hour goes to the new day", () => {
  const z = "America/Goose_Bay";
  // 2008-11-02 00:01 (-03) went back to 2008-11-01 23:01 (-04), at 03:01Z.
  assert.equal(local(ms("2008-11-02T03:00:59Z"), z), "2008-11-02 00:00:59");
  assert.equal(local(ms("2008-11-02T03:01Z"), z), "2008-11-01 23:01:00");
  // Sunday starts at its first midnight; Saturday's second 23:01–24:00 is counted in Sunday.
  assertWindow("day", ms("2008-11-02T03:30Z"), ms("2008-11-02T03:00Z"), ms("2008-11-03T04:00Z"), z);
  assertWindow("day", ms("2008-11-01T12:00Z"), ms("2008-11-01T03:00Z"), ms("2008-11-02T03:00Z"), z);
});

Deno.test("Pacific/Apia skipped 2011-12-30 entirely: no window holds it, and the rest tile", () => {
  const z = "Pacific/Apia";
  // 2011-12-29 23:59:59 (-10) was followed by 2011-12-31 00:00 (+14), at 2011-12-30T10:00Z.
  assertWindow("day", ms("2011-12-29T12:00Z"), ms("2011-12-29T10:00Z"), ms("2011-12-30T10:00Z"), z);
  assertWindow("day", ms("2011-12-30T10:00Z"), ms("2011-12-30T10:00Z"), ms("2011-12-31T10:00Z"), z);
  assertWindow(
    "week",
    ms("2011-12-28T00:00Z"),
    ms("2011-12-26T10:00Z"),
    ms("2012-01-01T10:00Z"),
    z,
  );
  assertWindow(
    "month",
    ms("2011-12-15T00:00Z"),
    ms("2011-12-01T10:00Z"),
    ms("2011-12-31T10:00Z"),
    z,
  );
});

// ---------------------------------------------------------------- properties

const ZONES = [
  "UTC",
  "Europe/Berlin",
  "America/New_York",
  "Australia/Lord_Howe",
  "America/Santiago",
  "America/Havana",
  "Asia/Kolkata",
  "Asia/Beirut",
  "Pacific/Apia",
  "America/Goose_Bay",
  "America/Sao_Paulo",
  "America/Scoresbysund",
];
const PERIODS: BudgetPeriod[] = ["5h", "day", "week", "month"];

Deno.test("windows contain their instant and tile: no gap, no overlap, over many years", () => {
  const next = random(28);
  const from = ms("2005-01-01");
  const to = ms("2036-01-01");
  for (const zone of ZONES) {
    for (const period of PERIODS) {
      for (let i = 0; i < 300; i++) {
        const at = from + Math.floor(next() * (to - from));
        const w = windowOf(period, at, zone);
        const where = `${period} ${zone} at ${new Date(at).toISOString()}: ${show(w)}`;
        assert.ok(w.start <= at && at < w.end, where);
        assert.ok(Number.isInteger(w.start) && Number.isInteger(w.end), where);
        assert.equal(windowOf(period, w.end, zone).start, w.end, where);
        assert.equal(windowOf(period, w.start - 1, zone).end, w.start, where);
        assert.equal(show(windowOf(period, w.start, zone)), show(w), where);
        assert.equal(show(windowOf(period, w.end - 1, zone)), show(w), where);
      }
    }
  }
});

Deno.test("walking window to window over three years never skips or repeats an instant", () => {
  for (
    const zone of ["Europe/Berlin", "America/Santiago", "Australia/Lord_Howe", "America/Havana"]
  ) {
    for (const period of ["day", "week", "month"] as const) {
      let w = windowOf(period, ms("2026-01-01T00:00Z"), zone);
      const lengths = new Set<number>();
      while (w.start < ms("2029-01-01")) {
        const following = windowOf(period, w.end, zone);
        assert.equal(following.start, w.end);
        assert.ok(following.end > following.start);
        assert.equal(show(following), show(temporalWindow(period, following.start, zone)));
        lengths.add((w.end - w.start) / HOUR);
        w = following;
      }
      if (period === "day") {
        assert.ok(lengths.size === 3, `${zone}: days of ${[...lengths].join(", ")} h`);
      }
    }
  }
});

/** The window Temporal gives: local date's start of day, moved on when `at` is past the next. */
function temporalWindow(period: "day" | "week" | "month", at: number, zone: string): BudgetWindow {
  const date = Temporal.Instant.fromEpochMilliseconds(at).toZonedDateTimeISO(zone).toPlainDate();
  const first = period === "day"
    ? date
    : period === "week"
    ? date.subtract({ days: date.dayOfWeek - 1 })
    : date.with({ day: 1 });
  const step = period === "day" ? { days: 1 } : period === "week" ? { days: 7 } : { months: 1 };
  const startOf = (d: Temporal.PlainDate) => d.toZonedDateTime(zone).epochMilliseconds;
  let start = first;
  while (startOf(start.add(step)) <= at) start = start.add(step);
  return { start: startOf(start), end: startOf(start.add(step)) };
}

Deno.test("calendar windows agree with Temporal's startOfDay in every zone tested", () => {
  const next = random(2026);
  const from = ms("2005-01-01");
  const to = ms("2036-01-01");
  for (const zone of ZONES) {
    for (const period of ["day", "week", "month"] as const) {
      for (let i = 0; i < 200; i++) {
        const at = from + Math.floor(next() * (to - from));
        assert.equal(
          show(windowOf(period, at, zone)),
          show(temporalWindow(period, at, zone)),
          `${period} ${zone} at ${new Date(at).toISOString()}`,
        );
      }
    }
  }
  // And at each transition instant of these zones, and the millisecond before: in 2026–2028, and in
  // the years Goose_Bay went back across midnight, Sao_Paulo had DST at midnight and Apia changed
  // sides of the date line.
  const spans: [string, string, string][] = [
    ...ZONES.slice(1).map((zone): [string, string, string] => [zone, "2026-01-01", "2029-01-01"]),
    ["America/Goose_Bay", "2008-01-01", "2011-01-01"],
    ["America/Sao_Paulo", "2016-01-01", "2019-01-01"],
    ["Pacific/Apia", "2011-01-01", "2012-01-01"],
  ];
  for (const [zone, from, to] of spans) {
    for (const t of transitions(zone, ms(from), ms(to))) {
      for (const at of [t - 1, t, t + HOUR]) {
        for (const period of ["day", "week", "month"] as const) {
          assert.equal(show(windowOf(period, at, zone)), show(temporalWindow(period, at, zone)));
        }
      }
    }
  }
});

Deno.test("in UTC, windows match a naive Date.UTC computation", () => {
  const next = random(5);
  for (let i = 0; i < 5000; i++) {
    const at = Math.floor(next() * ms("2100-01-01"));
    const d = new Date(at);
    const [y, m, day] = [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()];
    const dayStart = Date.UTC(y, m, day);
    const monday = Date.UTC(y, m, day - ((d.getUTCDay() + 6) % 7));
    const fiveH = at - (at % (5 * HOUR));
    assert.deepEqual({ ...windowOf("day", at) }, { start: dayStart, end: Date.UTC(y, m, day + 1) });
    assert.deepEqual({ ...windowOf("week", at) }, { start: monday, end: monday + 7 * DAY });
    assert.deepEqual({ ...windowOf("month", at) }, {
      start: Date.UTC(y, m, 1),
      end: Date.UTC(y, m + 1, 1),
    });
    assert.deepEqual({ ...windowOf("5h", at) }, { start: fiveH, end: fiveH + 5 * HOUR });
    // UTC's aliases are UTC too.
    assert.deepEqual({ ...windowOf("day", at, "Etc/UTC") }, {
      start: dayStart,
      end: Date.UTC(y, m, day + 1),
    });
  }
});

Deno.test("a window is frozen and cached: the same object while the instant stays inside", () => {
  const a = windowOf("day", ms("2026-05-17T01:00Z"), "Europe/Berlin");
  const b = windowOf("day", ms("2026-05-17T20:00Z"), "Europe/Berlin");
  assert.equal(a, b);
  assert.ok(Object.isFrozen(a));
  // Interleaving zones and instants changes nothing.
  const c = windowOf("day", ms("2026-05-18T01:00Z"), "Europe/Berlin");
  assert.notEqual(c, a);
  assert.equal(
    windowOf("day", ms("2026-05-17T01:00Z"), "Asia/Kolkata").start,
    ms("2026-05-16T18:30Z"),
  );
  assert.equal(show(windowOf("day", ms("2026-05-17T01:00Z"), "Europe/Berlin")), show(a));
});

Deno.test("windowOf refuses unknown zones and instants outside 1970..9999", () => {
  assert.throws(() => windowOf("day", 0, "Mars/Olympus_Mons"), RangeError);
  assert.throws(() => windowOf("day", -1), RangeError);
  assert.throws(() => windowOf("total", -1), RangeError);
  assert.throws(() => windowOf("5h", NaN), RangeError);
  assert.throws(() => windowOf("month", Infinity), RangeError);
  assert.throws(() => windowOf("month", MAX_INSTANT), RangeError);
  assert.throws(() => windowOf("fortnight" as BudgetPeriod, 0), RangeError);
  // The zone is read by calendar periods only.
  assert.equal(windowOf("total", 0, "Mars/Olympus_Mons").end, Infinity);
  assert.equal(windowOf("5h", 0, "Mars/Olympus_Mons").end, 5 * HOUR);
  const last = windowOf("month", MAX_INSTANT - 1, "Pacific/Kiritimati");
  assert.ok(last.start <= MAX_INSTANT - 1 && MAX_INSTANT - 1 < last.end);
});

// ---------------------------------------------------------------- parsing

Deno.test("parseBudgetPeriod reads the period names in any case", () => {
  const cases: [string, BudgetPeriod | null][] = [
    ["5h", "5h"],
    ["5H", "5h"],
    ["day", "day"],
    ["Daily", "day"],
    ["week", "week"],
    ["WEEKLY", "week"],
    ["month", "month"],
    ["monthly", "month"],
    ["total", "total"],
    ["Lifetime", "total"],
    [" month ", "month"],
    ["", null],
    ["5", null],
    ["5 h", null],
    ["hour", null],
    ["days", null],
    ["year", null],
    ["mo", null],
  ];
  for (const [text, period] of cases) assert.equal(parseBudgetPeriod(text), period, text);
});

Deno.test("isTimeZone accepts IANA names the runtime knows and nothing else", () => {
  for (
    const name of [
      "UTC",
      "Etc/UTC",
      "Europe/Berlin",
      "America/New_York",
      "Asia/Kolkata",
      "Australia/Lord_Howe",
      "America/Santiago",
      "Etc/GMT-14",
      "US/Eastern",
      "europe/berlin",
    ]
  ) {
    assert.equal(isTimeZone(name), true, name);
  }
  for (
    const name of [
      "",
      "Mars/Olympus_Mons",
      "Berlin",
      "+05:30",
      "-01:00",
      " UTC",
      "UTC ",
      "Etc/GMT+14",
    ]
  ) {
    assert.equal(isTimeZone(name), false, name);
  }
});

Deno.test("parseBudget reads AMOUNT/PERIOD and keeps the amount as written", () => {
  assert.deepEqual(parseBudget("20/month"), { usd: "20", period: "month" });
  assert.deepEqual(parseBudget("5/5h"), { usd: "5", period: "5h" });
  assert.deepEqual(parseBudget("0.50/day"), { usd: "0.50", period: "day" });
  assert.deepEqual(parseBudget("100/total"), { usd: "100", period: "total" });
  assert.deepEqual(parseBudget("12.5 / week"), { usd: "12.5", period: "week" });
  assert.deepEqual(parseBudget(" 50/Weekly "), { usd: "50", period: "week" });
  assert.deepEqual(parseBudget("500/lifetime"), { usd: "500", period: "total" });
  assert.deepEqual(parseBudget("0.000000001/day"), { usd: "0.000000001", period: "day" });
  assert.deepEqual(parseBudget("9007199.254740991/month"), {
    usd: "9007199.254740991",
    period: "month",
  });
});

Deno.test("parseBudget refuses what is not a positive exact USD amount per known period", () => {
  const refused: [string, RegExp][] = [
    ["20", /AMOUNT\/PERIOD/],
    ["20/month/extra", /AMOUNT\/PERIOD/],
    ["", /AMOUNT\/PERIOD/],
    ["/month", /decimal number/],
    ["$20/month", /decimal number/],
    ["-5/day", /decimal number/],
    ["+5/day", /decimal number/],
    ["1e3/day", /decimal number/],
    ["5./day", /decimal number/],
    [".5/day", /decimal number/],
    ["1,5/day", /decimal number/],
    ["five/day", /decimal number/],
    ["Infinity/day", /decimal number/],
    ["0x10/day", /decimal number/],
    ["1 000/day", /decimal number/],
    ["0/month", /more than zero/],
    ["0.000/month", /more than zero/],
    ["0.0000000001/day", /at most 9 decimal places/],
    ["1.0000000000/day", /at most 9 decimal places/],
    ["9007199.254740992/month", /at most 9007199\.254740991/],
    ["100000000000000000000/month", /at most/],
    ["20/year", /5h, day, week, month or total/],
    ["20/", /5h, day, week, month or total/],
    ["20/5 h", /5h, day, week, month or total/],
  ];
  for (const [text, message] of refused) {
    const result = parseBudget(text);
    assert.equal(typeof result, "string", text);
    assert.match(result as string, message, text);
  }
});
