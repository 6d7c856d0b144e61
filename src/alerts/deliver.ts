/**
 * Delivering alerts to the webhook: each due alert is POSTed as JSON (`x-switchyard-event`,
 * `x-switchyard-delivery`, `x-switchyard-signature` when a secret is set), at most
 * `MAX_IN_FLIGHT` at once, each within `alerts.timeoutMs`. A 2xx answer delivers it; anything else
 * — another status, no answer in time, no connection — is retried after `alerts.retryDelaysMs`
 * (its next attempt kept in the store, so a restart resumes it), and given up after the last
 * (logged). Nothing here runs on a request's path: the background work kicks it.
 */
import type { AlertSettings } from "../config/load.ts";
import { log, truncateField } from "../log.ts";
import type { Alert, Store } from "../store/store.ts";
import { alertId, eventBody } from "./events.ts";
import { signature } from "./sign.ts";

/** Deliveries in flight at most. */
export const MAX_IN_FLIGHT = 4;

/** Why a delivery failed, as the store and the log keep it: never the webhook's URL. */
function failureOf(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && error.name === "TimeoutError") {
    return `no answer within ${timeoutMs} ms`;
  }
  const message = error instanceof Error ? error.message : String(error);
  return truncateField(message.replace(/https?:\/\/[^\s)]+/g, "<webhook>"), 300);
}

/** The deliveries of one process (the one leading the background work). */
export class Deliveries {
  readonly #store: Store;
  readonly #settings: () => AlertSettings;
  readonly #inFlight = new Set<number>();
  readonly #stopping = new AbortController();
  #filling = false;
  #again = false;
  /** A wake-up for the earliest retry this process scheduled. */
  #timer: ReturnType<typeof setTimeout> | null = null;
  #timerAt = Infinity;

  constructor(store: Store, settings: () => AlertSettings) {
    this.#store = store;
    this.#settings = settings;
  }

  /** Starts delivering what is due now, as far as there is room in flight; never throws. */
  kick(): void {
    if (this.#stopping.signal.aborted) return;
    if (this.#filling) {
      this.#again = true;
      return;
    }
    this.#filling = true;
    this.#fill()
      .catch((error) => log("warn", "alert deliveries could not be read", { error: String(error) }))
      .finally(() => {
        this.#filling = false;
        if (this.#again) {
          this.#again = false;
          this.kick();
        }
      });
  }

  /** Stops: deliveries in flight are cut (they stay pending, for the next start). */
  stop(): void {
    this.#stopping.abort();
    if (this.#timer !== null) clearTimeout(this.#timer);
  }

  async #fill(): Promise<void> {
    const settings = this.#settings();
    if (!settings.webhookUrl || this.#inFlight.size >= MAX_IN_FLIGHT) return;
    // Those in flight are still pending, and the longest due: ask for room past them.
    const due = await this.#store.alertsDue(Date.now(), MAX_IN_FLIGHT);
    for (const alert of due) {
      if (this.#inFlight.has(alert.id) || this.#inFlight.size >= MAX_IN_FLIGHT) continue;
      this.#inFlight.add(alert.id);
      this.#send(alert, settings)
        .catch((error) =>
          log("warn", "an alert's delivery could not be recorded", {
            alert_id: alertId(alert.id),
            error: String(error),
          })
        )
        .finally(() => {
          this.#inFlight.delete(alert.id);
          this.kick();
        });
    }
  }

  async #send(alert: Alert, settings: AlertSettings): Promise<void> {
    const body = eventBody(alert);
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "user-agent": "switchyard-alerts",
      "x-switchyard-event": alert.type,
      "x-switchyard-delivery": alertId(alert.id),
    };
    if (settings.secret) {
      headers["x-switchyard-signature"] = signature(
        settings.secret,
        body,
        Math.floor(Date.now() / 1000),
      );
    }
    let failure: string | null = null;
    try {
      const answer = await fetch(settings.webhookUrl!, {
        method: "POST",
        headers,
        body,
        redirect: "manual",
        signal: AbortSignal.any([this.#stopping.signal, AbortSignal.timeout(settings.timeoutMs)]),
      });
      await answer.body?.cancel();
      if (answer.status < 200 || answer.status > 299) failure = `HTTP ${answer.status}`;
    } catch (error) {
      if (this.#stopping.signal.aborted) return; // stopping: still pending for the next start
      failure = failureOf(error, settings.timeoutMs);
    }
    const at = Date.now();
    if (failure === null) {
      await this.#store.markAlert(alert.id, { status: "delivered", at });
      return;
    }
    const attempt = alert.attempts + 1;
    const wait = settings.retryDelaysMs[attempt - 1];
    const fields = { alert_id: alertId(alert.id), type: alert.type, attempt, error: failure };
    if (wait === undefined) {
      await this.#store.markAlert(alert.id, { status: "failed", at, error: failure });
      log("error", "alert delivery failed: given up", fields);
      return;
    }
    const nextAttemptAt = at + wait;
    await this.#store.markAlert(alert.id, { status: "pending", at, error: failure, nextAttemptAt });
    log("warn", "alert delivery failed: will retry", {
      ...fields,
      next_attempt_at: new Date(nextAttemptAt).toISOString(),
    });
    this.#wakeAt(nextAttemptAt);
  }

  /** Kicks again at `at` (the earliest such time this process knows of). */
  #wakeAt(at: number): void {
    if (at >= this.#timerAt || this.#stopping.signal.aborted) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timerAt = at;
    const timer = setTimeout(() => {
      this.#timer = null;
      this.#timerAt = Infinity;
      this.kick();
    }, Math.max(0, at - Date.now()));
    Deno.unrefTimer(timer);
    this.#timer = timer;
  }
}
