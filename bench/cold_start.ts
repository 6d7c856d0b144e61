/**
 * The start scenario: how long a server takes from its spawn to its first answered call — the
 * gateway's first billed chat completion (key checked, hold written, upstream called, settlement
 * committed), the proxies' first relayed upstream call — each started afresh `SETTINGS.starts`
 * times, one after another, nothing else running but the emulator. The call is sent when the
 * server reports its port (a gateway with serving threads: once every thread listens). A gateway
 * starts on the store the run's others use, as a restarted service does.
 */
import type { Server } from "./procs.ts";
import { stopServer } from "./procs.ts";
import { medianOf, type Target } from "./measure.ts";

/** A server to start and the call it is to answer first (`Target.url` is a path here). */
export interface StartSubject {
  label: string;
  start: () => Promise<Server>;
  call: Omit<Target, "pid">;
}

/** Milliseconds from spawn to the first answered call, one per start, in start order. */
export interface StartTimes {
  label: string;
  ms: number[];
}

/**
 * Starts `subject` `times` times, each time timing its spawn until its first call's whole answer
 * has arrived; throws when that answer is not a 2xx (a start that answers with an error is not a
 * start).
 */
export async function timeStarts(subject: StartSubject, times: number): Promise<StartTimes> {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const began = performance.now();
    const server = await subject.start();
    try {
      const { url, headers, body } = subject.call;
      const response = await fetch(`http://127.0.0.1:${server.port}${url}`, {
        method: "POST",
        headers,
        body,
      });
      const text = await response.text();
      if (!response.ok) {
        throw new Error(`${subject.label}: first call answered ${response.status}: ${text}`);
      }
      ms.push(performance.now() - began);
    } finally {
      await stopServer(server);
    }
  }
  return { label: subject.label, ms };
}

/** The report's lines: each subject's median, least and most (`results` hold a start or more). */
export function startLines(results: StartTimes[]): string[] {
  const rows = results.map(({ label, ms }) => {
    const median = medianOf(ms);
    return `  ${label.padEnd(18)} ${median.toFixed(0).padStart(5)} ms  ` +
      `(${Math.min(...ms).toFixed(0)}–${Math.max(...ms).toFixed(0)} ms over ${ms.length})`;
  });
  return [
    "cold start, spawn to the first answered call (chat JSON; median, least–most):",
    ...rows,
  ];
}
