/**
 * `deno bench bench/budget_windows_bench.ts`: the cost of `windowOf` on the request path. "hit": the
 * instant moves forward 1 ms a call, so it stays in the cached window as requests do; "miss": the
 * instant alternates between two windows, so every call computes its window afresh (what the first
 * request of a new day, week or month pays); "next": the instant moves on a day, a week, a month a
 * call, so every call is the window after the last one, as when a window ends.
 */
import { type BudgetPeriod, windowOf } from "../src/billing/windows.ts";

const BASE = Date.UTC(2026, 4, 17, 12);
const DAY = 86_400_000;
const WEEKS = 7 * DAY * 5;
const PERIODS: BudgetPeriod[] = ["5h", "day", "week", "month", "total"];
const ZONES = ["UTC", "Europe/Berlin", "Australia/Lord_Howe"];

for (const zone of ZONES) {
  for (const period of PERIODS) {
    let at = BASE;
    Deno.bench(`hit  ${period.padEnd(5)} ${zone}`, { group: `hit ${zone}` }, () => {
      at++;
      windowOf(period, at, zone);
    });
  }
  for (const period of PERIODS) {
    let flip = false;
    Deno.bench(`miss ${period.padEnd(5)} ${zone}`, { group: `miss ${zone}` }, () => {
      flip = !flip;
      windowOf(period, flip ? BASE : BASE + WEEKS, zone);
    });
  }
}

for (const zone of ZONES) {
  // (Wrapping around after 100,000 windows, to stay before the year 10000.)
  let day = 0;
  Deno.bench(`next day   ${zone}`, { group: `next ${zone}` }, () => {
    windowOf("day", BASE + (day++ % 100_000) * DAY, zone);
  });
  let week = 0;
  Deno.bench(`next week  ${zone}`, { group: `next ${zone}` }, () => {
    windowOf("week", BASE + (week++ % 100_000) * 7 * DAY, zone);
  });
  let month = 0;
  Deno.bench(`next month ${zone}`, { group: `next ${zone}` }, () => {
    windowOf("month", Date.UTC(2026, month++ % 1200, 15, 12), zone);
  });
}

Deno.bench("hit  day   Europe/Berlin with Date.now()", () => {
  windowOf("day", Date.now(), "Europe/Berlin");
});
