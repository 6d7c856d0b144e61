/**
 * The alerts of one process (started with its background work, on its main thread): every
 * `alerts.checkIntervalMs` a sweep of every budget, balance and expiring key, then the deliveries
 * due — on a store several replicas share, by the replica leading the background work only. In
 * between, the keys and accounts that just spent or were refused (noted by settlements and by the
 * server, in any thread: see `billing/spend_notes.ts`) are looked at within `NUDGE_MS`, so an
 * alert follows the call that caused it closely; those checks may run on any replica (raising is
 * once however many raise), and the new alerts are delivered at once by the leader, else at its
 * next sweep. Nothing here is awaited by a request.
 */
import type { Services } from "../context.ts";
import { listenForSpending, type SpendNote } from "../billing/spend_notes.ts";
import { log } from "../log.ts";
import { type Check, checkNotes, Raised, sweep } from "./detect.ts";
import { Deliveries } from "./deliver.ts";

/** How soon after a note its keys and accounts are looked at (notes meanwhile are merged). */
const NUDGE_MS = 100;
/** Keys and accounts waiting to be looked at, at most; later ones wait for the sweep. */
const MAX_WAITING = 10_000;

/** Running alerts: `stop` ends their timers and cuts deliveries in flight. */
export interface AlertWatch {
  stop(): void;
}

/** Starts the alerts of this process (see the module's note). */
export function startAlerts(services: Services): AlertWatch {
  const { store } = services;
  const settings = () => services.config.alerts;
  const check = (): Check => ({
    settings: settings(),
    zone: services.config.budgetTimeZone,
    now: Date.now(),
  });
  const deliveries = new Deliveries(store, settings);
  const known = new Raised();
  // A store shared by replicas says who leads; otherwise this process does.
  let leading = !store.leading;
  let stopped = false;

  const waiting = new Map<string, SpendNote>();
  let nudge: ReturnType<typeof setTimeout> | null = null;
  let looking = false;
  const look = async () => {
    nudge = null;
    if (looking) return schedule();
    looking = true;
    const notes = [...waiting.values()];
    waiting.clear();
    try {
      const raised = await checkNotes(store, notes, check(), known);
      if (raised && leading) deliveries.kick();
    } catch (error) {
      log("warn", "checking alerts after calls failed", { error: String(error) });
    } finally {
      looking = false;
      if (waiting.size) schedule();
    }
  };
  const schedule = () => {
    if (nudge === null && !stopped) nudge = setTimeout(look, NUDGE_MS);
  };
  const stopListening = listenForSpending((notes) => {
    for (const note of notes) {
      const id = note.refused
        ? `${note.keyId}|${note.refused.owner}|${note.refused.period}`
        : note.keyId;
      if (waiting.size < MAX_WAITING || waiting.has(id)) waiting.set(id, note);
    }
    schedule();
  });

  let timer: ReturnType<typeof setTimeout> | null = null;
  const tick = async () => {
    try {
      leading = store.leading ? await store.leading() : true;
      if (leading) {
        await sweep(store, check(), known);
        deliveries.kick();
      }
    } catch (error) {
      log("warn", "checking alerts failed", { error: String(error) });
    } finally {
      if (!stopped) {
        const next = setTimeout(tick, settings().checkIntervalMs);
        Deno.unrefTimer(next);
        timer = next;
      }
    }
  };
  void tick();

  return {
    stop() {
      stopped = true;
      stopListening();
      if (timer !== null) clearTimeout(timer);
      if (nudge !== null) clearTimeout(nudge);
      deliveries.stop();
    },
  };
}
