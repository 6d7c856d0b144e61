/**
 * Tests that need a Debian package (PostgreSQL, Chromium, systemd) skip without it, saying why —
 * locally. In CI (`.ci/run` sets `SWITCHYARD_CI=1`) every test must run: a missing package is a
 * failure of the test module that needs it, not a skip.
 */

/** Whether this run is CI's, where nothing may be skipped. */
export const IN_CI = Deno.env.get("SWITCHYARD_CI") === "1";

/**
 * Says that the tests needing a missing package are skipped (locally), or fails the module (in
 * CI). Call it at a test module's top level when the package is absent.
 */
export function skippedWithout(message: string): void {
  if (IN_CI) {
    throw new Error(`${message} — in CI (SWITCHYARD_CI=1) every test must run, none may skip`);
  }
  console.warn(message);
}
