/**
 * Waiting for something to happen, the one way the tests do it: poll for the event, with a
 * deadline generous enough for a loaded machine (a deadline is a hang guard, not a measurement).
 */

/** How long `eventually` waits unless told: long, since only a broken gateway ever reaches it. */
export const DEADLINE_MS = 30_000;

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A deadline in milliseconds, or that and what is awaited (for the error). */
export type PollOptions = number | { ms?: number; what?: string };

/**
 * Polls `check` until it returns something other than `undefined`, `null` or `false`, and returns
 * that; throws when the deadline passes first.
 */
export async function waitFor<T>(
  check: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  options: PollOptions = {},
): Promise<T> {
  const { ms = DEADLINE_MS, what = "the condition" } = typeof options === "number"
    ? { ms: options }
    : options;
  const until = Date.now() + ms;
  let pause = 10;
  while (true) {
    const value = await check();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > until) throw new Error(`${what} did not happen within ${ms} ms`);
    await sleep(pause);
    pause = Math.min(pause * 2, 100);
  }
}

/** Polls `check` until it returns true (see `waitFor`). */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  options: PollOptions = {},
): Promise<void> {
  await waitFor(check, options);
}
