/**
 * Free-form (custom) tools across protocols (pure): a tool whose input is one string, not JSON
 * arguments. The canonical form gives it one string member, `{input}`; a protocol without such
 * tools offers it as a function of that member, and a client that declared one gets its calls
 * back as custom calls whatever the upstream answered.
 */
import type { AnswerInfo } from "./codec.ts";
import type { Json } from "./ir.ts";
import { stringifyArguments } from "./tool_ids.ts";

/** The schema of a free-form tool's one string input, as a function's parameters. */
export const CUSTOM_INPUT: Json = {
  type: "object",
  properties: { input: { type: "string" } },
  required: ["input"],
};

/** Whether a call is to one of the client's free-form tools (written as a custom call). */
export function isCustomCall(part: { name: string; kind?: string }, info: AnswerInfo): boolean {
  return part.kind === "custom" || !!info.customTools?.has(part.name);
}

/** A custom call's raw input: the string of its `{input}`, else its arguments as JSON text. */
export function customInput(input: unknown): string {
  const raw = (input as { input?: unknown } | null)?.input;
  return typeof raw === "string" ? raw : stringifyArguments(input);
}
