/**
 * Reasoning effort ↔ thinking budget (pure): one fixed table, so a translated call asks for about
 * the same amount of thinking whichever way it goes. Anthropic needs a budget of at least 1,024
 * tokens, below the output cap.
 */
import type { Effort } from "./ir.ts";

const BUDGETS: Record<Effort, number> = { minimal: 1024, low: 2048, medium: 8192, high: 24576 };

/** The thinking budget for an effort. */
export function budgetFor(effort: Effort): number {
  return BUDGETS[effort];
}

/** The effort nearest a thinking budget. */
export function effortFor(budget: number): Effort {
  if (budget <= 1024) return "minimal";
  if (budget <= 4096) return "low";
  if (budget <= 16384) return "medium";
  return "high";
}

/** A client's effort word as a canonical effort (`none` turns reasoning off; `xhigh`/`max` are high). */
export function readEffort(value: unknown): Effort | "none" | undefined {
  switch (value) {
    case "none":
      return "none";
    case "minimal":
    case "low":
    case "medium":
    case "high":
      return value;
    case "xhigh":
    case "max":
      return "high";
    default:
      return undefined;
  }
}
