/**
 * Fault injection for the tests of the call lifecycle: with `SWITCHYARD_TEST_FAULTS=1` in the
 * environment when the gateway starts, a request whose `x-switchyard-test-fault` header names one
 * of these points makes the gateway throw there — so a test can check that no hold outlives its
 * call and no upstream connection stays open, whichever step fails. Off (the default), each point
 * costs one test of a constant.
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

const ENABLED = Deno.env.get("SWITCHYARD_TEST_FAULTS") === "1";

/** Throws when fault injection is on and the request names `point` (see the module's doc). */
export function faultPoint(req: Request, point: FaultPoint): void {
  if (ENABLED && req.headers.get("x-switchyard-test-fault") === point) {
    throw new Error(`injected fault at ${point}`);
  }
}
