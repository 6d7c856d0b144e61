/**
 * A deployment's circuit breaker, shared by the process's threads. Closed, it lets calls through
 * and counts failures; it opens after `failures` consecutive ones, or when at least `errorRate` of
 * the calls in the window failed (once the window holds `minCalls`). Open, calls skip it while
 * another deployment can serve them. After `coolOffMs` it is half-open: one call (the probe) may
 * try it; its success closes the circuit, its failure opens it for another cool-off.
 */
import type { CircuitSettings } from "../config/load.ts";
import type { Slot } from "./board.ts";

/** Integer fields: consecutive failures, open (1), probe out (1), window calls, window failures. */
const [CONSECUTIVE, OPEN, PROBING, WINDOW_CALLS, WINDOW_FAILURES] = [2, 3, 4, 5, 6];
/** Time fields: open until, window start, probe sent at. */
const [UNTIL, WINDOW_START, PROBE_AT] = [0, 1, 2];

export type CircuitState = "closed" | "open" | "half-open";

/** The circuit's state at `now`. */
export function circuitState(slot: Slot, now = Date.now()): CircuitState {
  if (!slot.get(OPEN)) return "closed";
  return now < slot.time(UNTIL) ? "open" : "half-open";
}

/** What a call may do with the deployment: go, go as the probe, or skip it. */
export type Admission = "go" | "probe" | "skip";

/**
 * Admits a call: always when closed; when half-open, the first asker becomes the probe (a probe
 * that never reported is replaced after another cool-off); otherwise skip.
 */
export function admit(slot: Slot, settings: CircuitSettings, now = Date.now()): Admission {
  const state = circuitState(slot, now);
  if (state === "closed") return "go";
  if (state === "open") return "skip";
  if (slot.swap(PROBING, 0, 1) || now - slot.time(PROBE_AT) > settings.coolOffMs) {
    slot.setTime(PROBE_AT, now);
    return "probe";
  }
  return "skip";
}

/** Records a call's outcome (`probe`: it was admitted as the probe). */
export function recordOutcome(
  slot: Slot,
  ok: boolean,
  probe: boolean,
  settings: CircuitSettings,
  now = Date.now(),
): void {
  if (now - slot.time(WINDOW_START) > settings.windowMs) {
    slot.setTime(WINDOW_START, now);
    slot.set(WINDOW_CALLS, 0);
    slot.set(WINDOW_FAILURES, 0);
  }
  const calls = slot.add(WINDOW_CALLS, 1) + 1;
  if (ok) {
    slot.set(CONSECUTIVE, 0);
    if (probe || slot.get(OPEN)) close(slot, now);
    return;
  }
  const failures = slot.add(WINDOW_FAILURES, 1) + 1;
  const consecutive = slot.add(CONSECUTIVE, 1) + 1;
  const tripped = consecutive >= settings.failures ||
    (calls >= settings.minCalls && failures / calls >= settings.errorRate);
  if (probe || (tripped && !slot.get(OPEN))) {
    slot.setTime(UNTIL, now + settings.coolOffMs);
    slot.set(OPEN, 1);
    slot.set(PROBING, 0);
  }
}

function close(slot: Slot, now: number): void {
  slot.set(OPEN, 0);
  slot.set(PROBING, 0);
  slot.set(CONSECUTIVE, 0);
  slot.setTime(WINDOW_START, now);
  slot.set(WINDOW_CALLS, 0);
  slot.set(WINDOW_FAILURES, 0);
}

/** Gives back a probe that made no call (its place in a queue ran out): another may probe. */
export function releaseProbe(slot: Slot): void {
  slot.set(PROBING, 0);
}

/** Whether a failure of `kind` counts against the deployment's health (no answer, or a 5xx). */
export function isHealthFailure(kind: string | null): boolean {
  return kind === "connection" || kind === "timeout" || kind === "5xx";
}
