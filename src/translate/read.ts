/**
 * Reading client JSON defensively while decoding it (pure): a value of the wrong type is a 400
 * naming the field, never an exception deeper down.
 */
import { GatewayError } from "../http/errors.ts";
import type { FilePart, Json } from "./ir.ts";

/** A 400 naming `field`. */
export function invalid(field: string, message: string): GatewayError {
  return new GatewayError(400, `Invalid '${field}': ${message}`, {
    param: field,
    code: "invalid_value",
  });
}

/** A 400 for something the target protocol cannot express (never silently dropped). */
export function inexpressible(field: string, what: string, target: string): GatewayError {
  return new GatewayError(
    400,
    `Invalid '${field}': ${what} cannot be translated for this model, whose provider speaks ${target}; remove it or choose a model that supports it.`,
    { param: field, code: "unsupported_parameter" },
  );
}

export const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

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

/** `stop` as a list of strings (a string alone is one). */
export function stopList(value: unknown, field: string): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") return [value];
  return list(value, field).map((s, i) => string(s, `${field}[${i}]`));
}

/** A data URL split into its media type and base64 payload, or null. */
export function splitDataUrl(url: string): { mediaType: string; base64: string } | null {
  const match = /^data:([^;,]+)?(?:;[^,]*)?;base64,(.*)$/s.exec(url);
  return match ? { mediaType: match[1] ?? "application/octet-stream", base64: match[2] } : null;
}

/** A file part as a URL: its own, or a data URL of its base64 payload (`splitDataUrl`'s inverse). */
export function dataUrl(part: FilePart): string {
  return "base64" in part.data
    ? `data:${part.mediaType};base64,${part.data.base64}`
    : part.data.url;
}
