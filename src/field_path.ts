/**
 * Field paths as a reader would type them — `models["gpt-5.4"].price.input`, `contents[0].role` —
 * for config errors and for the `param` of request errors. Pure.
 */
import type * as v from "valibot";

/** The keys of a valibot issue's path, outermost first. */
export function issueKeys(issue: v.BaseIssue<unknown>): string[] {
  return (issue.path ?? []).map((item) => String(item.key));
}

/** Formats a key path the way a reader would type it: `models["gpt-5.4"].provider`. */
export function formatPath(keys: readonly string[]): string {
  return keys.map((key, i) => {
    if (/^[A-Za-z_$][\w$]*$/.test(key)) return i === 0 ? key : `.${key}`;
    if (/^\d+$/.test(key)) return `[${key}]`;
    return `[${JSON.stringify(key)}]`;
  }).join("");
}
