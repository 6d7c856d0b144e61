/**
 * Structured logging: one JSON object per line. Info and warn lines go to stdout in batches (one
 * write per event-loop turn, off the request path); errors go to stderr at once. Never log secrets.
 */

export type Level = "info" | "warn" | "error";

const encoder = new TextEncoder();
let pending = "";

/** Writes one JSON log line. */
export function log(level: Level, msg: string, fields: Record<string, unknown> = {}): void {
  const line = JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }) + "\n";
  if (level === "error") {
    flushLog();
    Deno.stderr.writeSync(encoder.encode(line));
    return;
  }
  if (!pending) setTimeout(flushLog, 0);
  pending += line;
}

/** Writes out buffered lines now (on shutdown, and before error lines keep their order). */
export function flushLog(): void {
  if (!pending) return;
  const bytes = encoder.encode(pending);
  pending = "";
  let written = 0;
  while (written < bytes.length) written += Deno.stdout.writeSync(bytes.subarray(written));
}
