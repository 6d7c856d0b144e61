/**
 * JSON in and out, the one home of the gateway's JSON readers. Reading is defensive two ways:
 * leniently what an upstream sent (answers, stream events, usage: a member of the wrong type reads
 * as empty, never an exception), and strictly what a client sent (a value of the wrong type is a
 * 400 naming the field, never an exception deeper down). Writing: JSON answers, with bigints
 * exact, and a client's value as text.
 */
import { GatewayError } from "./errors.ts";
import type { SseEvent } from "./sse.ts";

/** A JSON object as decoded from a body. */
type Json = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Lenient: what an upstream sent

/** Whether `value` is a JSON object (not null, not an array). */
export const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** `value` as an object, or `{}`. */
export const asObject = (value: unknown): Json => isObject(value) ? value : {};

/** `value` as an array, or `[]`. */
export const asArray = (value: unknown): unknown[] => Array.isArray(value) ? value : [];

/** An event's data as an object (`{}` when it is not one); parsed once where the event keeps it. */
export function eventJson(event: SseEvent): Json {
  try {
    return asObject(event.json ? event.json() : JSON.parse(event.data()));
  } catch {
    return {};
  }
}

/** A count as a client is shown it (translated answers): a non-negative integer, else 0. */
export const shownCount = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) && value > 0
    ? Math.min(Math.round(value), Number.MAX_SAFE_INTEGER)
    : 0;

// ---------------------------------------------------------------------------------------------
// Strict: what a client sent

/** A 400 naming `field`. */
export function invalid(field: string, message: string): GatewayError {
  return new GatewayError(400, `Invalid '${field}': ${message}`, {
    param: field,
    code: "invalid_value",
  });
}

/** `value` as an object, or a 400. */
export function object(value: unknown, field: string): Json {
  if (!isObject(value)) throw invalid(field, "must be an object");
  return value;
}

/** `value` as an array (absent: empty), or a 400. */
export function list(value: unknown, field: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalid(field, "must be an array");
  return value;
}

/**
 * `each` of the objects of the list `value` (absent: empty), in order, with its field path
 * (`field[i]`) and index: an element that is not an object is a 400, found when its turn comes.
 */
export function eachObject<T>(
  value: unknown,
  field: string,
  each: (item: Json, at: string, i: number) => T,
): T[] {
  return list(value, field).map((raw, i) => {
    const at = `${field}[${i}]`;
    return each(object(raw, at), at, i);
  });
}

/** `value` as a string, or a 400. */
export function string(value: unknown, field: string): string {
  if (typeof value !== "string") throw invalid(field, "must be a string");
  return value;
}

/** `value` as a string when present, else undefined; a 400 for another type. */
export function optionalString(value: unknown, field: string): string | undefined {
  return value === undefined || value === null ? undefined : string(value, field);
}

/** `value` as a finite number when present, else undefined; a 400 for another type. */
export function optionalNumber(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw invalid(field, "must be a number");
  }
  return value;
}

/** `value` as a boolean when present, else undefined; a 400 for another type. */
export function optionalBoolean(value: unknown, field: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") throw invalid(field, "must be a boolean");
  return value;
}

/** `value` as a list of strings (a string alone is one) when present, else undefined. */
export function stringList(value: unknown, field: string): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") return [value];
  return list(value, field).map((s, i) => string(s, `${field}[${i}]`));
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

// ---------------------------------------------------------------------------------------------
// Writing

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
