/**
 * Limits toward one deployment, shared by the process's threads: at most `maxConcurrent` calls at
 * once, at most `rpm` calls per minute (a GCRA: each call books 60000/rpm ms, bursts up to a
 * minute's worth). A call over a limit waits — looking again every few milliseconds, at most
 * `queueMs` and with at most `MAX_WAITING` others per thread — then gives up (the router moves
 * on, or answers 429).
 */
import type { Slot } from "./board.ts";

/** Integer field: calls in flight. */
const IN_FLIGHT = 7;
/** Time field: the GCRA's theoretical arrival time. */
const TAT = 3;
const MINUTE_MS = 60_000;
/** How often a waiting call looks for a free place. */
const POLL_MS = 5;
/** Calls of one thread waiting for one deployment at most. */
const MAX_WAITING = 256;

const waiting = new WeakMap<Slot, number>();

/** A deployment's limits (absent: none). */
export interface TargetLimits {
  maxConcurrent?: number;
  rpm?: number;
}

/** A granted call's place under the limits; `release` it exactly once when the call ends. */
export interface Lease {
  release(): void;
}

/** No place in time: when one may come (ms from now; a second when only `maxConcurrent` binds). */
export interface Refusal {
  lease: null;
  retryMs: number;
}

/** Books one call against the rpm limit; the ms to wait when it cannot go now. */
function bookRpm(slot: Slot, rpm: number, now: number): number {
  const interval = MINUTE_MS / rpm;
  for (;;) {
    const tat = slot.time(TAT);
    const next = Math.max(tat, now) + interval;
    const wait = next - now - MINUTE_MS;
    if (wait > 0) return Math.ceil(wait);
    if (slot.swapTime(TAT, tat, next)) return 0;
  }
}

/** Takes a concurrency place if one is free. */
function takePlace(slot: Slot, max: number): boolean {
  for (;;) {
    const held = slot.get(IN_FLIGHT);
    if (held >= max) return false;
    if (slot.swap(IN_FLIGHT, held, held + 1)) return true;
  }
}

/**
 * A place under the deployment's limits, waiting up to `queueMs` for one; a `Refusal` when none
 * came in time (or too many calls of this thread already wait), or `signal` aborted. `onWait`
 * runs once, when the call starts to wait.
 */
export function acquire(
  slot: Slot,
  limits: TargetLimits,
  queueMs: number,
  signal?: AbortSignal,
  onWait?: () => void,
): Lease | Refusal | Promise<Lease | Refusal> {
  if (signal?.aborted) return refused();
  // Without limits a call only counts itself in flight (for `/readyz`), at once (no promise).
  if (!limits.maxConcurrent && !limits.rpm) {
    slot.add(IN_FLIGHT, 1);
    return lease(slot);
  }
  return underLimits(slot, limits, queueMs, signal, onWait);
}

function refused(retryMs = 1000): Refusal {
  return { lease: null, retryMs };
}

/** `acquire` for a deployment with limits: a place now, or once one frees (or a refusal). */
async function underLimits(
  slot: Slot,
  limits: TargetLimits,
  queueMs: number,
  signal?: AbortSignal,
  onWait?: () => void,
): Promise<Lease | Refusal> {
  const { maxConcurrent, rpm } = limits;
  const deadline = Date.now() + queueMs;
  let queued = false;
  try {
    for (;;) {
      const now = Date.now();
      if (!maxConcurrent || takePlace(slot, maxConcurrent)) {
        const wait = rpm ? bookRpm(slot, rpm, now) : 0;
        if (wait === 0) {
          if (!maxConcurrent) slot.add(IN_FLIGHT, 1);
          return lease(slot);
        }
        if (maxConcurrent) release(slot);
        if (now + wait > deadline) return refused(wait);
        if (!queued && !enqueue(slot, onWait)) return refused(wait);
        queued = true;
        await sleep(wait, signal);
      } else {
        if (now >= deadline) return refused();
        if (!queued && !enqueue(slot, onWait)) return refused();
        queued = true;
        await sleep(Math.min(deadline - now, POLL_MS), signal);
      }
      if (signal?.aborted) return refused();
    }
  } finally {
    if (queued) waiting.set(slot, waiting.get(slot)! - 1);
  }
}

function enqueue(slot: Slot, onWait?: () => void): boolean {
  const count = waiting.get(slot) ?? 0;
  if (count >= MAX_WAITING) return false;
  waiting.set(slot, count + 1);
  onWait?.();
  return true;
}

function release(slot: Slot): void {
  slot.add(IN_FLIGHT, -1);
}

function lease(slot: Slot): Lease {
  let done = false;
  return {
    release() {
      if (done) return;
      done = true;
      release(slot);
    },
  };
}

/** Waits `ms`, or until `signal` aborts (at once when it already has). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Calls in flight on a deployment (for `/readyz`). */
export function inFlight(slot: Slot): number {
  return slot.get(IN_FLIGHT);
}
