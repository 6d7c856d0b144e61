/** The CLI's tables: keys by their main columns, any rows aligned as text. */
import { nanoToUsd } from "../money.ts";
import type { KeyRecord } from "../store/store.ts";
import { iso, keyStatus } from "../billing/accounts_json.ts";

/** A key in the CLI's table: its main columns. */
export function keyRow(k: KeyRecord, now = Date.now()) {
  const limits = k.limits;
  return {
    id: k.id,
    account: k.accountName,
    name: k.name,
    status: keyStatus(k, now),
    budgets: (limits.budgets ?? []).map((b) => `${nanoToUsd(b.amount)}/${b.period}`).join(" ") ||
      null,
    models: limits.models?.allow?.join(",") ?? null,
    expires_at: iso(k.expiresAt),
    last_used_at: iso(k.lastUsedAt),
  };
}

/** Renders rows as an aligned text table. */
export function table(rows: Record<string, unknown>[]): string {
  if (!rows.length) return "(none)";
  const columns = Object.keys(rows[0]);
  const cells = rows.map((r) => columns.map((c) => r[c] === null ? "-" : String(r[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)));
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i])).join("  ").trimEnd();
  return [line(columns), ...cells.map(line)].join("\n");
}
