/** JSON responses. */

/** A JSON response with the given status and extra headers. */
export function jsonResponse(
  body: unknown,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
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
