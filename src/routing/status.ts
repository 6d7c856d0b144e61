/**
 * The routing state as operators see it (`/readyz`, `/metrics`): each deployment's circuit and
 * calls in flight. Deployments are those the catalog names, and those this thread has called (a
 * pattern's ids are only known once called).
 */
import type { Catalog, Target } from "../catalog/catalog.ts";
import type { Board } from "./board.ts";
import { type CircuitState, circuitState } from "./circuit.ts";
import { inFlight } from "./limits.ts";

/** Deployments this thread has called, by name (bounded: the oldest are forgotten). */
const called = new Map<string, Target>();
const MAX_CALLED = 1000;

/** Remembers that `target` was called (see `deploymentStates`). */
export function noteCalled(target: Target): void {
  if (called.has(target.name)) return;
  if (called.size >= MAX_CALLED) called.delete(called.keys().next().value!);
  called.set(target.name, target);
}

/** One deployment's state. */
export interface DeploymentState {
  circuit: CircuitState;
  in_flight: number;
}

/** Every known deployment's state, by name (`provider/upstream-model`), sorted. */
export function deploymentStates(board: Board, catalog: Catalog): Record<string, DeploymentState> {
  const targets = new Map(called);
  for (const entry of catalog.entries()) {
    if (entry.pattern.includes("*")) continue;
    const resolved = catalog.resolve(entry.pattern);
    if (!resolved.ok) continue;
    for (const target of resolved.model.route.targets) targets.set(target.name, target);
  }
  const out: Record<string, DeploymentState> = {};
  for (const name of [...targets.keys()].sort()) {
    // Read without claiming: a deployment no call has reached is closed with none in flight.
    const slot = board.find(`target:${name}`);
    out[name] = slot
      ? { circuit: circuitState(slot), in_flight: inFlight(slot) }
      : { circuit: "closed", in_flight: 0 };
  }
  return out;
}
