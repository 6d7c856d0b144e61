/**
 * JSON Schema (draft 2020-12, as OpenAPI 3.1 uses it) from the valibot schemas the request bodies
 * are validated with, so a document describing a body is made from the very definition that checks
 * it and cannot drift from it. Only the constructs the admin API's bodies use are known; anything
 * else throws (a new construct is added here, or the document would quietly say less than the
 * check does).
 *
 * A check the document cannot state (`rawCheck`, `check`, `custom`) is left out: the document then
 * allows a little more than the check does, never less — say so in a `description`.
 */
import type * as v from "valibot";

/** A JSON Schema object (the subset this module writes). */
export interface JsonSchema {
  type?: string | string[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  default?: unknown;
  format?: string;
  $ref?: string;
  examples?: unknown[];
}

/** What this module reads of a valibot schema or action (their public, documented properties). */
interface Node {
  kind: "schema" | "validation" | "transformation" | "metadata";
  type: string;
  pipe?: readonly Node[];
  wrapped?: Node;
  default?: unknown;
  entries?: Record<string, Node>;
  item?: Node;
  key?: Node;
  value?: Node;
  options?: readonly unknown[];
  literal?: unknown;
  requirement?: unknown;
  description?: string;
}

/** The JSON Schema of a valibot schema (see the module doc for what is known). */
export function jsonSchemaOf(schema: v.GenericSchema): JsonSchema {
  return convert(schema as unknown as Node, "(root)");
}

function convert(node: Node, at: string): JsonSchema {
  if (node.pipe) {
    let out: JsonSchema | undefined;
    for (const item of node.pipe) {
      if (item.kind !== "schema") apply(out!, item, at);
      else if (out === undefined || Object.keys(out).length === 0) out = convert(item, at);
      // A later schema is described only after one that states nothing (`custom`, `unknown`).
      else throw new Error(`${at}: a schema inside a pipe is described only after custom()`);
    }
    return out!;
  }
  switch (node.type) {
    case "custom":
    case "unknown":
      // A check the document cannot state (see the module doc).
      return {};
    case "string":
      return { type: "string" };
    case "number":
      return { type: "number" };
    case "boolean":
      return { type: "boolean" };
    case "literal":
      return { const: node.literal };
    case "picklist": {
      const options = [...node.options!];
      const types = [...new Set(options.map((o) => typeof o))];
      return { type: types.length === 1 ? types[0] : types, enum: options };
    }
    case "array":
      return { type: "array", items: convert(node.item!, `${at}[]`) };
    case "record":
      if (node.key!.type !== "string" || node.key!.pipe) {
        throw new Error(`${at}: only records keyed by plain strings are described`);
      }
      return { type: "object", additionalProperties: convert(node.value!, `${at}{}`) };
    case "object":
    case "strict_object": {
      const properties: Record<string, JsonSchema> = {};
      const required: string[] = [];
      for (const [name, entry] of Object.entries(node.entries!)) {
        properties[name] = convert(entry, `${at}.${name}`);
        if (entry.type !== "optional") required.push(name);
      }
      return {
        type: "object",
        properties,
        ...(required.length ? { required } : {}),
        ...(node.type === "strict_object" ? { additionalProperties: false } : {}),
      };
    }
    case "optional": {
      // Optional is about the property being absent (its object's `required`), not the value.
      const out = convert(node.wrapped!, at);
      if (node.default !== undefined && typeof node.default !== "function") {
        out.default = node.default;
      }
      return out;
    }
    case "nullable":
      return orNull(convert(node.wrapped!, at));
    case "union":
      return { anyOf: node.options!.map((o, i) => convert(o as Node, `${at}|${i}`)) };
    default:
      throw new Error(`${at}: the valibot schema "${node.type}" has no JSON Schema here`);
  }
}

/** Adds what a pipe's action requires to `out`. */
function apply(out: JsonSchema, action: Node, at: string): void {
  const isArray = out.type === "array";
  switch (action.type) {
    case "description":
      out.description = action.description;
      return;
    case "integer":
      out.type = "integer";
      return;
    case "min_value":
      out.minimum = action.requirement as number;
      return;
    case "max_value":
      out.maximum = action.requirement as number;
      return;
    case "min_length":
      if (isArray) out.minItems = action.requirement as number;
      else out.minLength = action.requirement as number;
      return;
    case "max_length":
      if (isArray) out.maxItems = action.requirement as number;
      else out.maxLength = action.requirement as number;
      return;
    case "regex": {
      const regex = action.requirement as RegExp;
      if (regex.flags.replace("u", "")) {
        throw new Error(`${at}: a regex with flags ${regex.flags} has no JSON Schema pattern`);
      }
      out.pattern = regex.source;
      return;
    }
    case "raw_check":
    case "check":
      return;
    default:
      throw new Error(`${at}: the valibot action "${action.type}" has no JSON Schema here`);
  }
}

/** `schema` or null. */
export function orNull(schema: JsonSchema): JsonSchema {
  if (schema.anyOf) return { ...schema, anyOf: [...schema.anyOf, { type: "null" }] };
  if (schema.enum && !schema.enum.includes(null)) {
    return { ...orNullType(schema), enum: [...schema.enum, null] };
  }
  if (schema.type !== undefined) return orNullType(schema);
  return { anyOf: [schema, { type: "null" }] };
}

function orNullType(schema: JsonSchema): JsonSchema {
  const types = Array.isArray(schema.type) ? schema.type : [schema.type!];
  return types.includes("null") ? schema : { ...schema, type: [...types, "null"] };
}
