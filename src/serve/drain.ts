/**
 * Stopping a serving thread: no new connections, calls in flight finish, streams are cut after
 * `drainTimeoutMs`. A connection that still holds on after that (a client that never finishes its
 * upload) does not keep the thread: it stops once no call holds funds — calls still waiting for
 * their upstream get up to `upstreamTimeoutMs` more.
 */
import { billsInFlight } from "../billing/ledger.ts";
import type { Config } from "../config/load.ts";
import { log } from "../log.ts";
import type { RunningServer } from "./http.ts";

/** After the last call is settled, how long a stopping server lets its last answers flush. */
const FLUSH_MS = 1_000;

/** Drains `server`; resolves when every connection closed, or when the bounds above are reached. */
export function drainServer(
  server: RunningServer,
  config: Pick<Config, "drainTimeoutMs" | "upstreamTimeoutMs">,
): Promise<void> {
  void server.shutdown();
  const drained = Date.now() + config.drainTimeoutMs;
  const latest = drained + config.upstreamTimeoutMs;
  return new Promise((resolve) => {
    let flushing: ReturnType<typeof setTimeout> | undefined;
    const check = setInterval(() => {
      const now = Date.now();
      if (now < drained || (billsInFlight() > 0 && now < latest)) return;
      clearInterval(check);
      if (billsInFlight() > 0) {
        log("warn", "exiting with calls in flight", { calls: billsInFlight() });
      }
      // A moment for the last answers (a cut stream's error event) to reach their clients.
      flushing = setTimeout(() => {
        log("info", "connections still open after the drain: exiting");
        resolve();
      }, FLUSH_MS);
    }, 100);
    server.finished.then(() => {
      clearInterval(check);
      clearTimeout(flushing);
      resolve();
    });
  });
}
