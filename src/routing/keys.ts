/**
 * A provider's upstream keys: calls take turns over them by weight (one cycle shared by every
 * thread). A key the upstream rate-limited rests until its `retry-after` (or a doubling default)
 * for the deployment it was limited on, as providers limit each model apart. A key the upstream
 * refused is out until the config is reloaded: for every model on a 401 (or a 400 naming the key
 * invalid), for that deployment on a 403 (a key may lack access to one model and not another).
 *
 * Slots are claimed on write only (a rest, a refusal): reading a key's state claims nothing.
 * Refusals carry the reload generation they were made in, so a reload ends them all at once.
 */
import type { ProviderEntry, ProviderKey } from "../catalog/catalog.ts";
import { log } from "../log.ts";
import type { Board, Slot } from "./board.ts";
import { schedule, turnOrder } from "./weights.ts";

/** Provider slot: the turn counter. Generation slot: reloads so far. */
const TURN = 2;
const GENERATION = 2;
/** Key and rest slots: refused in generation N is stored as N + 1 (0: not refused). */
const REFUSED = 3;
/** Rest slot (key × deployment): consecutive rate limits; time: resting until. */
const STREAK = 2;
const UNTIL = 0;
/** The longest a key rests without the upstream saying so. */
const MAX_REST_MS = 60_000;

const turnsOf = new WeakMap<ProviderEntry, number[]>();

/** A key's slot names: its own, and its rest's per scope. */
interface KeyNames {
  key: string;
  rests: Map<string, string>;
}

/**
 * Slot names, made once per provider, key and scope (the config's objects, for as long as it is
 * loaded): a call looks its keys up by names already hashed, not by names built for it.
 */
const namesOf = new WeakMap<ProviderEntry, WeakMap<ProviderKey, KeyNames>>();

function namesFor(provider: ProviderEntry, key: ProviderKey): KeyNames {
  let byKey = namesOf.get(provider);
  if (!byKey) namesOf.set(provider, byKey = new WeakMap());
  let names = byKey.get(key);
  if (!names) byKey.set(key, names = { key: `key:${provider.name}:${key.id}`, rests: new Map() });
  return names;
}

const keyName = (provider: ProviderEntry, key: ProviderKey) => namesFor(provider, key).key;

function restName(provider: ProviderEntry, key: ProviderKey, scope: string): string {
  const { rests } = namesFor(provider, key);
  let name = rests.get(scope);
  if (name === undefined) rests.set(scope, name = `rest:${provider.name}:${key.id}:${scope}`);
  return name;
}

function generation(board: Board): number {
  return board.find("generation")?.get(GENERATION) ?? 0;
}

function refused(slot: Slot | undefined, current: number): boolean {
  return slot !== undefined && slot.get(REFUSED) === current + 1;
}

/** The keys a call may use now, in the order it tries them, and when a resting one wakes. */
export interface KeyTurns {
  /** Indexes into `provider.keys`. */
  order: number[];
  /** The soonest a resting key may be used again (ms since the epoch); 0: none rests. */
  wakes: number;
}

/** When key `index` may be used for `scope`: 0 now, Infinity not before a reload (refused). */
function usableAfter(board: Board, provider: ProviderEntry, index: number, scope: string): number {
  const key = provider.keys[index];
  const current = generation(board);
  if (refused(board.find(keyName(provider, key)), current)) return Infinity;
  const rest = board.find(restName(provider, key, scope));
  if (!rest) return 0;
  return refused(rest, current) ? Infinity : rest.time(UNTIL);
}

/** Where this call starts in the provider's cycle, and which keys are usable now. */
export function keyTurns(
  board: Board,
  provider: ProviderEntry,
  scope = "",
  now = Date.now(),
): KeyTurns {
  const keys = provider.keys;
  if (!keys.length) return { order: [], wakes: 0 };
  let order = [0];
  if (keys.length > 1) {
    let turns = turnsOf.get(provider);
    if (!turns) turnsOf.set(provider, turns = schedule(keys.map((k) => k.weight)));
    const counter = board.slot(`turn:${provider.name}`).add(TURN, 1);
    order = turnOrder(turns, counter, keys.length);
  }
  const usable: number[] = [];
  let wakes = 0;
  for (const index of order) {
    const until = usableAfter(board, provider, index, scope);
    if (until <= now) usable.push(index);
    else if (until !== Infinity) wakes = wakes ? Math.min(wakes, until) : until;
  }
  return { order: usable, wakes };
}

/** When every key of `provider` rests for `scope`: when the first wakes; else 0. */
export function allResting(board: Board, provider: ProviderEntry, scope: string): number {
  const now = Date.now();
  let wakes = Infinity;
  for (let index = 0; index < provider.keys.length; index++) {
    const until = usableAfter(board, provider, index, scope);
    if (until <= now) return 0;
    wakes = Math.min(wakes, until);
  }
  return wakes === Infinity ? 0 : wakes;
}

/** Whether key `index` may be used now (a call about to retry on it checks again). */
export function keyUsable(
  board: Board,
  provider: ProviderEntry,
  index: number,
  scope = "",
): boolean {
  return usableAfter(board, provider, index, scope) <= Date.now();
}

/**
 * Rests key `index` for `scope` after a rate limit: for `retryAfterMs` when the upstream said,
 * else for `baseMs` doubled per consecutive rate limit (at most a minute). Returns until when.
 */
export function restKey(
  board: Board,
  provider: ProviderEntry,
  index: number,
  scope: string,
  retryAfterMs: number | null,
  baseMs: number,
  now = Date.now(),
): number {
  const slot = board.slot(restName(provider, provider.keys[index], scope));
  const streak = slot.add(STREAK, 1);
  const ms = retryAfterMs ?? Math.min(MAX_REST_MS, baseMs * 2 ** Math.min(streak, 16));
  const until = now + ms;
  if (until > slot.time(UNTIL)) slot.setTime(UNTIL, until);
  return until;
}

/**
 * Takes key `index` out until a reload — for every model, or for `scope` only — and logs it once
 * (its label, never the key).
 */
export function refuseKey(
  board: Board,
  provider: ProviderEntry,
  index: number,
  scope?: string,
): void {
  const key = provider.keys[index];
  const slot = board.slot(
    scope === undefined ? keyName(provider, key) : restName(provider, key, scope),
  );
  const mark = generation(board) + 1;
  const before = slot.get(REFUSED);
  if (before === mark || !slot.swap(REFUSED, before, mark)) return;
  log("error", "upstream refused a key: it is out until the config is reloaded", {
    provider: provider.name,
    key: key.label,
    ...(scope === undefined ? {} : { deployment: scope }),
  });
}

/** Key `index` answered for `scope`: its run of rate limits is over. */
export function keyAnswered(
  board: Board,
  provider: ProviderEntry,
  index: number,
  scope = "",
): void {
  const slot = board.find(restName(provider, provider.keys[index], scope));
  if (slot?.get(STREAK)) slot.set(STREAK, 0);
}

/** Puts every refused key back in (a reload: the operator may have fixed them). */
export function restoreKeys(board: Board): void {
  board.slot("generation").add(GENERATION, 1);
}

/** How many of `provider`'s keys were refused for every model (out until a reload). */
export function refusedKeys(board: Board, provider: ProviderEntry): number {
  const current = generation(board);
  return provider.keys.filter((key) => refused(board.find(keyName(provider, key)), current)).length;
}
