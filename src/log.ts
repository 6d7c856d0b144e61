/** Structured logging: one JSON object per line on stdout (errors on stderr). Never log secrets. */

export type Level = "info" | "warn" | "error";

/** Writes one JSON log line. */
export function log(level: Level, msg: string, fields: Record<string, unknown> = {}): void {
  const line = JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields });
  if (level === "error") console.error(line);
  else console.log(line);
}
