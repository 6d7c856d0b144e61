/** The messages between the main thread and its serving threads (`serve --workers N`). */
import type { RateDecision } from "../auth/ratelimit.ts";
import type { ConfigRead, Overrides } from "../config/load.ts";
import type { Samples } from "../metrics/registry.ts";
import type { SpendNote } from "../billing/spend_notes.ts";

/** From the main thread to a serving thread. */
export type ToWorker =
  /** Load the config as the main thread did, open the store and listen on `port`. */
  | {
    type: "start";
    index: number;
    configFile?: string;
    overrides: Overrides;
    port: number;
    /** What the main thread's store shares with the threads' (see `Store.prepareForServing`). */
    shared?: SharedArrayBuffer;
    /** The routing state the threads share (see `routing/board.ts`). */
    routing: SharedArrayBuffer;
    /** The metrics' bounds the threads share (see `shareMetricBounds`). */
    metricBounds: SharedArrayBuffer;
    /** The process's connection counts (see `connections.ts`). */
    connections: SharedArrayBuffer;
  }
  /** The process's answer to a rate-limit question. */
  | { type: "rpm"; id: number; decision: RateDecision }
  /** Drain and stop (the process is shutting down). */
  | { type: "stop" }
  /** Take the config file as the main thread read it and found it valid (see `reload.ts`). */
  | { type: "reload"; read: ConfigRead }
  /** Send this thread's metrics (see `metrics/gateway.ts`). */
  | { type: "snapshot"; id: number }
  /** Every thread's metrics, the answer to this thread's `metrics` question. */
  | { type: "metrics"; id: number; parts: Record<string, Samples>[] };

/** From a serving thread to the main thread. */
export type ToMain =
  | { type: "listening"; port: number }
  /** Counts one request of `key` against `limit` per minute, if allowed. */
  | { type: "rpm"; id: number; key: string; limit: number }
  | { type: "stopped" }
  /** Gather every thread's metrics (a scrape of `/metrics` on this thread). */
  | { type: "metrics"; id: number }
  /** This thread's metrics, the answer to `snapshot`. */
  | { type: "snapshot"; id: number; samples: Record<string, Samples> }
  /** Keys that just spent or were refused by a budget, for the alerts (see `spend_notes.ts`). */
  | { type: "spent"; notes: SpendNote[] };
