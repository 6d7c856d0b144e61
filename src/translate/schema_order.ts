/**
 * One order for a JSON Schema's keywords (pure), so that a schema written with its keywords in
 * another order — `{"type": …, "properties": …}` or `{"properties": …, "type": …}`, the same
 * schema — is sent upstream as the same bytes, and a prompt cache keyed on those bytes finds it.
 * The order changes nothing a schema means: its keywords are sorted (as strings), in it and in
 * every schema it holds. What is ordered by the client stays so: the names a schema defines
 * (`properties`, `$defs`…), whose order is the order a model writes an object's members in, and
 * every array (`required`, `enum`, `anyOf`…), as are the values of keywords that hold data rather
 * than schemas (`default`, `const`, `examples`, an unknown keyword's).
 */
import { isObject } from "../http/json.ts";

/** Keywords whose value is a schema, or an array of schemas. */
const SCHEMAS = new Set([
  "additionalItems",
  "additionalProperties",
  "allOf",
  "anyOf",
  "contains",
  "else",
  "if",
  "items",
  "not",
  "oneOf",
  "prefixItems",
  "propertyNames",
  "then",
  "unevaluatedItems",
  "unevaluatedProperties",
]);

/** Keywords whose value maps names (in the client's order) to schemas. */
const NAMED = new Set([
  "$defs",
  "definitions",
  "dependentSchemas",
  "patternProperties",
  "properties",
]);

/** How deep schemas are ordered; deeper ones are left as they are (no stack is exhausted). */
const MAX_DEPTH = 64;

/** `schema` with its keywords, and those of the schemas it holds, in one order (see the module). */
export function orderedSchema<T>(schema: T, depth = 0): T {
  if (depth > MAX_DEPTH) return schema;
  const inner = (value: unknown) => orderedSchema(value, depth + 1);
  if (Array.isArray(schema)) return schema.map(inner) as T;
  if (!isObject(schema)) return schema;
  // Entries, not assignments: a `__proto__` key stays an own member.
  return Object.fromEntries(
    Object.keys(schema).sort().map((key) => {
      const value = schema[key];
      if (SCHEMAS.has(key)) return [key, inner(value)];
      if (NAMED.has(key) && isObject(value)) {
        return [key, Object.fromEntries(Object.entries(value).map(([n, s]) => [n, inner(s)]))];
      }
      return [key, value];
    }),
  ) as T;
}
