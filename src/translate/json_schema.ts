/**
 * JSON Schema dialects (pure). Gemini's function `parameters` take an OpenAPI subset: `$ref` and
 * `$defs` are inlined, `const` becomes a one-value `enum`, type unions with `null` become
 * `nullable`, `oneOf`/`allOf` are reduced, and every keyword outside the subset is removed
 * (`additionalProperties`, `$schema`, `strict`, `exclusiveMinimum`, `propertyNames`, `default`,
 * `title`, `examples`, `format` other than `enum`/`date-time`…), after `translation.md` §3. The
 * other way, a client's schema in Gemini's OpenAPI dialect (`"OBJECT"`, `nullable`) is read as
 * JSON Schema.
 */
import { isObject } from "../http/json.ts";

type Json = Record<string, unknown>;

/** Keywords Gemini's Schema keeps as they are. */
const KEPT = new Set([
  "description",
  "nullable",
  "minItems",
  "maxItems",
  "minimum",
  "maximum",
  "minLength",
  "maxLength",
  "pattern",
  "minProperties",
  "maxProperties",
]);
const TYPES = new Set(["string", "number", "integer", "boolean", "array", "object"]);
/** Keywords translated into the subset (the others are removed). */
const TRANSLATED = new Set([
  ...KEPT,
  "$ref",
  "$defs",
  "definitions",
  "allOf",
  "anyOf",
  "oneOf",
  "type",
  "format",
  "enum",
  "const",
  "properties",
  "required",
  "items",
]);
/** How deep references are followed before a recursive schema is cut off. */
const MAX_DEPTH = 32;

/** The definitions a schema's `$ref`s point into. */
function definitions(root: Json): Json {
  return {
    ...(isObject(root.definitions) ? root.definitions : {}),
    ...(isObject(root.$defs) ? root.$defs : {}),
  };
}

function resolveRef(ref: string, defs: Json): Json | undefined {
  const match = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(ref);
  if (!match) return undefined;
  const name = match[1].replaceAll("~1", "/").replaceAll("~0", "~");
  return isObject(defs[name]) ? defs[name] as Json : undefined;
}

/**
 * `schema` cleaned for Gemini's `parameters`/`responseSchema` subset; `removed` is called when
 * the cleaning removes something that is not merely spelled another way (a keyword outside the
 * subset, a `format` or non-string `enum` Gemini lacks, a reference that cannot be followed).
 */
export function geminiSchema(schema: unknown, removed: () => void = () => {}): Json {
  const root = isObject(schema) ? schema : {};
  return clean(root, definitions(root), 0, removed);
}

function clean(schema: Json, defs: Json, depth: number, removed: () => void): Json {
  if (depth > MAX_DEPTH) {
    removed();
    return { type: "object" };
  }
  if (Object.keys(schema).some((key) => !TRANSLATED.has(key))) removed();
  if (typeof schema.$ref === "string") {
    const target = resolveRef(schema.$ref, defs);
    if (!target) removed();
    const { $ref: _ref, ...rest } = schema;
    return clean({ ...(target ?? { type: "object" }), ...rest }, defs, depth + 1, removed);
  }
  if (Array.isArray(schema.allOf)) {
    const { allOf, ...rest } = schema;
    const merged: Json = { ...rest };
    for (const part of allOf.filter(isObject)) {
      const resolved = typeof part.$ref === "string" ? resolveRef(part.$ref, defs) ?? {} : part;
      for (const [key, value] of Object.entries(resolved)) {
        if (key === "properties" && isObject(value)) {
          merged.properties = { ...(merged.properties as Json | undefined), ...value };
        } else if (key === "required" && Array.isArray(value)) {
          merged.required = [...new Set([...(merged.required as string[] ?? []), ...value])];
        } else merged[key] ??= value;
      }
    }
    return clean(merged, defs, depth + 1, removed);
  }
  const out: Json = {};
  let type = schema.type;
  if (Array.isArray(type)) {
    const named = type.filter((t) => t !== "null");
    if (named.length !== type.length) out.nullable = true;
    type = named.length === 1 ? named[0] : undefined;
    if (named.length > 1) {
      out.anyOf = named.filter((t) => TYPES.has(t as string)).map((t) => ({ type: t }));
    }
  }
  if (typeof type === "string" && TYPES.has(type)) out.type = type;
  else if (type === "null") out.nullable = true;
  for (const key of KEPT) {
    if (schema[key] !== undefined) out[key] = schema[key];
  }
  if (schema.format === "enum" || schema.format === "date-time") out.format = schema.format;
  else if (schema.format !== undefined) removed();
  const values = schema.enum ?? (schema.const !== undefined ? [schema.const] : undefined);
  if (Array.isArray(values)) {
    const strings = values.filter((v) => typeof v === "string");
    if (strings.length && strings.length === values.length) {
      out.enum = strings;
      out.type ??= "string";
    } else removed();
  }
  const variants = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(variants)) {
    const cleaned = variants.filter(isObject).map((v) => clean(v, defs, depth + 1, removed));
    const nonNull = cleaned.filter((v) => !(v.nullable === true && v.type === undefined));
    if (nonNull.length !== cleaned.length) out.nullable = true;
    if (nonNull.length === 1) Object.assign(out, { ...nonNull[0], ...out });
    else if (nonNull.length > 1) out.anyOf = nonNull;
  }
  if (isObject(schema.properties)) {
    const properties: Json = {};
    for (const [name, value] of Object.entries(schema.properties)) {
      properties[name] = clean(isObject(value) ? value : {}, defs, depth + 1, removed);
    }
    if (Object.keys(properties).length) {
      out.properties = properties;
      out.type ??= "object";
      if (Array.isArray(schema.required)) {
        const required = schema.required.filter((name) =>
          typeof name === "string" && Object.hasOwn(properties, name)
        );
        if (required.length) out.required = required;
      }
    }
  }
  if (schema.items !== undefined) {
    out.items = clean(isObject(schema.items) ? schema.items : {}, defs, depth + 1, removed);
    out.type ??= "array";
  }
  if (out.type === "array" && out.items === undefined) out.items = { type: "string" };
  return out;
}

/** Whether a cleaned object schema has no properties (Gemini refuses an empty `properties`). */
export function isEmptyObjectSchema(schema: Json): boolean {
  return (schema.type === undefined || schema.type === "object") &&
    !isObject(schema.properties) && schema.anyOf === undefined;
}

// ---------------------------------------------------------------------------------------------
// Gemini's OpenAPI-style schemas (function `parameters`, `responseSchema`) as JSON Schema

/** Keys whose value is a map of schemas. */
const SCHEMA_MAPS = new Set(["properties", "$defs", "definitions", "patternProperties"]);
/** Keys whose value is one schema or a list of schemas. */
const SCHEMA_KEYS = new Set([
  "items",
  "anyOf",
  "oneOf",
  "allOf",
  "not",
  "prefixItems",
  "additionalProperties",
]);

function typeName(value: unknown): unknown {
  if (typeof value === "string") return value.toLowerCase();
  return Array.isArray(value) ? value.map(typeName) : value;
}

/**
 * A schema in Gemini's OpenAPI dialect as JSON Schema: upper-case type names lower-cased,
 * `nullable` folded into the type, `propertyOrdering` left out.
 */
export function jsonSchemaOf(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(jsonSchemaOf);
  if (!isObject(schema)) return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "type") out.type = typeName(value);
    else if (key === "propertyOrdering") continue;
    else if (SCHEMA_MAPS.has(key) && isObject(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, sub]) => [name, jsonSchemaOf(sub)]),
      );
    } else if (SCHEMA_KEYS.has(key)) out[key] = jsonSchemaOf(value);
    else out[key] = value;
  }
  if (out.nullable === true && typeof out.type === "string") {
    out.type = [out.type, "null"];
    delete out.nullable;
  }
  return out;
}
