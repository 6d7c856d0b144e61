/**
 * Which models a key may call (pure): its own allow and deny lists and its account's, each of ids
 * and `*` patterns (`claude-*`, `gpt-5-mini`). A model is allowed when no list denies it and every
 * list that allows some models allows it.
 */
import type { ModelAccess } from "../store/store.ts";

/** Compiled patterns, by their text (operators write few; bounded all the same). */
const compiled = new Map<string, RegExp>();
const MAX_COMPILED = 4096;

/** Whether `id` matches `pattern` (an id, or `*` standing for any run of characters). */
export function matchesPattern(pattern: string, id: string): boolean {
  if (!pattern.includes("*")) return pattern === id;
  let regex = compiled.get(pattern);
  if (!regex) {
    const source = pattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*");
    regex = new RegExp(`^${source}$`);
    if (compiled.size >= MAX_COMPILED) compiled.clear();
    compiled.set(pattern, regex);
  }
  return regex.test(id);
}

/** Whether one access list lets `id` through. */
export function allows(access: ModelAccess | undefined, id: string): boolean {
  if (!access) return true;
  if (access.deny?.some((pattern) => matchesPattern(pattern, id))) return false;
  if (access.allow?.length) return access.allow.some((pattern) => matchesPattern(pattern, id));
  return true;
}

/** Whether a caller with these lists (its key's, its account's) may call model `id`. */
export function mayCall(
  key: ModelAccess | undefined,
  account: ModelAccess | undefined,
  id: string,
): boolean {
  return allows(key, id) && allows(account, id);
}
