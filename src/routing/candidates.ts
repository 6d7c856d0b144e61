/**
 * The order in which a call tries its upstreams: the model's deployments, the first by weighted
 * turn (a cycle shared by the process's threads) and the others after it, then each fallback
 * model's the same way. Deployments whose circuit is open are passed over; a half-open one is
 * offered to one call at a time, as its probe.
 */
import {
  atTarget,
  type Catalog,
  type ProviderEntry,
  type ResolvedModel,
  type Target,
  targetOf,
} from "../catalog/catalog.ts";
import type { CircuitSettings } from "../config/load.ts";
import type { Board, Slot } from "./board.ts";
import { admit, releaseProbe } from "./circuit.ts";
import { allResting } from "./keys.ts";
import { schedule, turnOrder } from "./weights.ts";

/** One upstream to try: the model as that deployment serves it. */
export interface Candidate {
  model: ResolvedModel;
  target: Target;
  /** The deployment's shared state (circuit, limits). */
  slot: Slot;
  /** This call is the half-open circuit's probe. */
  probe: boolean;
}

/** Model-slot field: the turn counter over its deployments. */
const TURN = 2;
const turnsOf = new WeakMap<Target[], number[]>();

/** Deployments' slot names, made once per deployment of the loaded config. */
const slotNames = new WeakMap<Target, string>();

/** The shared state of a deployment (`status.ts` reads the same name). */
export function targetSlot(board: Board, target: Target): Slot {
  let name = slotNames.get(target);
  if (name === undefined) slotNames.set(target, name = `target:${target.name}`);
  return board.slot(name);
}

/**
 * A model's deployments in the order this call tries them: by weighted turn, but `prefer` (a
 * deployment's name: where the call's conversation has its cache) first.
 */
export function targetOrder(board: Board, model: ResolvedModel, prefer?: string): Target[] {
  const targets = model.route.targets;
  if (targets.length <= 1) return targets;
  let turns = turnsOf.get(targets);
  if (!turns) turnsOf.set(targets, turns = schedule(targets.map((t) => t.weight)));
  const counter = board.slot(`turn:model:${model.route.name}`).add(TURN, 1);
  const order = turnOrder(turns, counter, targets.length).map((i) => targets[i]);
  const at = prefer === undefined ? -1 : order.findIndex((t) => t.name === prefer);
  if (at > 0) order.unshift(...order.splice(at, 1));
  return order;
}

/**
 * The candidates of a call to `model`, lazily (a half-open circuit's probe is taken only when its
 * turn comes): its deployments, then — when `fallbacks` — each fallback model's. Deployments whose
 * circuit is open, or whose keys all rest after rate limits, are passed over; when no other
 * deployment was offered at all, those with an open circuit are offered last (the keys of a
 * resting one are never used before they wake: the call fails with 429 then). Fallback ids that
 * no longer resolve (a provider disabled), and those the caller may not use (`allowed`), are passed
 * over. With `pin`, only deployments of that provider are offered (when the model or a fallback has
 * one); with `reaches`, only those of providers the endpoint can call. `prefer` names the
 * deployment offered first among the model's own (see `targetOrder`): like any other, it is passed
 * over while its circuit is open or its keys rest.
 */
export function* candidates(
  board: Board,
  catalog: Catalog,
  model: ResolvedModel,
  settings: CircuitSettings,
  pin?: string,
  reaches?: (provider: ProviderEntry) => boolean,
  allowed?: (id: string) => boolean,
  prefer?: string,
): Generator<Candidate> {
  const chain: ResolvedModel[] = [model];
  for (const id of model.route.fallbacks) {
    if (allowed && !allowed(id)) continue; // never a model the caller may not use
    const resolved = catalog.resolve(id);
    if (resolved.ok && resolved.model.kind === model.kind) chain.push(resolved.model);
  }
  // Pinned to the provider holding the call's upstream state, when any deployment is of it.
  const pinned = pin !== undefined &&
    chain.some((m) =>
      m.route.targets.some((t) => t.provider.name === pin && (!reaches || reaches(t.provider)))
    );
  const open: Candidate[] = [];
  let offered = 0;
  for (const current of chain) {
    for (const target of targetOrder(board, current, current === model ? prefer : undefined)) {
      if (pinned && target.provider.name !== pin) continue;
      if (reaches && !reaches(target.provider)) continue;
      const candidate = offer(board, current, target, settings, open);
      if (candidate) {
        offered++;
        yield candidate;
      }
    }
  }
  if (!offered) yield* open;
}

/** The candidate for `target`, or none when it is passed over (an open circuit goes to `open`). */
function offer(
  board: Board,
  model: ResolvedModel,
  target: Target,
  settings: CircuitSettings,
  open: Candidate[],
): Candidate | undefined {
  const slot = targetSlot(board, target);
  const served = atTarget(model, target);
  if (allResting(board, target.provider, target.name)) return undefined;
  const admission = admit(slot, settings);
  if (admission === "skip") {
    open.push({ model: served, target, slot, probe: false });
    return undefined;
  }
  return { model: served, target, slot, probe: admission === "probe" };
}

/**
 * The one candidate of a call bound to `model`'s own deployment (it cannot be rebuilt): none while
 * its keys all rest; tried even with its circuit open, as nothing else can serve the call.
 */
export function* ownTarget(
  board: Board,
  model: ResolvedModel,
  settings: CircuitSettings,
): Generator<Candidate> {
  const open: Candidate[] = [];
  const candidate = offer(board, model, targetOf(model), settings, open) ?? open[0];
  if (candidate) yield candidate;
}

/** When the first resting key of `model`'s deployments wakes (ms since the epoch; 0: none rests). */
export function soonestWake(board: Board, model: ResolvedModel): number {
  const wakes = model.route.targets.map((t) => allResting(board, t.provider, t.name))
    .filter((ms) => ms > 0);
  return wakes.length ? Math.min(...wakes) : 0;
}

/** A candidate the call will not try after all: a probe it took goes back for another call. */
export function passOver(candidate: Candidate): void {
  if (candidate.probe) releaseProbe(candidate.slot);
}
