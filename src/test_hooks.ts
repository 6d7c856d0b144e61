/**
 * Hooks for the tests only, off unless the gateway starts with `SWITCHYARD_TEST_HOOKS=1` in its
 * environment (each costs one test of a constant then):
 * - fault injection: a request whose `x-switchyard-test-fault` header names one of the points
 *   below makes the gateway throw there — so a test can check that no hold outlives its call and
 *   no upstream connection stays open, whichever step fails; and `translation` makes a translated
 *   call write a system prompt of its own upstream — a prefix changed only through translation;
 * - a clock: a request's `x-switchyard-test-now` header (ms since the epoch) is its "now" — for
 *   budgets' windows and key expiry — moving on from there with the real clock, so a test crosses
 *   a window's boundary without waiting for it.
 */

/** The steps of a call after its hold is taken, in order. */
export type FaultPoint =
  /** The hold is taken; the upstream request is not sent yet. */
  | "held"
  /** The upstream answered 2xx; its answer is not relayed yet. */
  | "answered"
  /** The relay of the answer begins (a stream's relay, or reading a JSON answer). */
  | "relay"
  /** Just before the settlement (a JSON answer's, or a stream's when it ends). */
  | "settle"
  /** The handler returned its response; the server adds its headers. */
  | "respond";

const ENABLED = Deno.env.get("SWITCHYARD_TEST_HOOKS") === "1";

/** Throws when fault injection is on and the request names `point` (see the module's doc). */
export function faultPoint(req: Request, point: FaultPoint): void {
  if (ENABLED && req.headers.get("x-switchyard-test-fault") === point) {
    throw new Error(`injected fault at ${point}`);
  }
}

/**
 * A text of its own to begin a translated call's system prompt with, when fault injection is on and
 * the request names `translation` (see the module's doc); else undefined.
 */
export function translationDrift(req: Request): string | undefined {
  if (!ENABLED || req.headers.get("x-switchyard-test-fault") !== "translation") return undefined;
  return `drift ${crypto.randomUUID()}`;
}

/** A request's "now" (ms since the epoch): the real clock, or the test clock it names. */
export function requestClock(req: Request): () => number {
  if (!ENABLED) return Date.now;
  const given = Number(req.headers.get("x-switchyard-test-now"));
  if (!given) return Date.now;
  const offset = given - Date.now();
  return () => Date.now() + offset;
}
