/** JSON responses. */

/** A JSON response with the given status and extra headers (bigints as in `jsonText`). */
export function jsonResponse(
  body: unknown,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  return new Response(jsonText(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** `JSON.rawJSON` (V8 has it; TypeScript's lib does not name it yet). */
const rawJSON = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

/**
 * `JSON.stringify`, with bigints (exact totals past 2^53, see `store.ts` `Total`) written as their
 * exact digits: a JSON number, as a smaller figure is, which a client reading 64-bit integers reads
 * exactly.
 */
export function jsonText(value: unknown): string {
  try {
    // The common case, at full speed: nothing to replace.
    return JSON.stringify(value);
  } catch (error) {
    // A bigint is a TypeError to JSON.stringify (so is a cycle, which throws again below).
    if (!(error instanceof TypeError)) throw error;
    return JSON.stringify(
      value,
      (_key, v) => typeof v === "bigint" ? rawJSON(v.toString()) : v,
    );
  }
}

/**
 * A client's value as text, for comparisons and messages: a string as it is, a number, boolean or
 * null as JSON, anything else by its kind — never through the value's own `toString` (a client's
 * `{"toString": "x"}` would make `String(value)` throw).
 */
export function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean" || value === null) {
    return JSON.stringify(value);
  }
  if (value === undefined) return "";
  return Array.isArray(value) ? "(an array)" : "(an object)";
}
