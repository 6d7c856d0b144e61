/**
 * A small JSON Schema validator for the subset the admin API's OpenAPI document uses: `type`
 * (a name or a list, `null` included), `properties`, `required`, `additionalProperties`, `items`,
 * `enum`, `const`, `anyOf`, `$ref` (a JSON pointer into the document), `pattern`, `minimum`,
 * `maximum`, `minLength`, `maxLength`, `minItems`, `maxItems` and `format: date-time`. A keyword
 * outside it throws, so a schema is never passed for want of reading it.
 *
 * `closed: true` also refuses properties an object schema with `properties` does not list (the
 * document leaves answers open to additions; the tests hold the code to what it documents).
 */

const KNOWN = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "const",
  "anyOf",
  "$ref",
  "pattern",
  "minimum",
  "maximum",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "format",
  // Annotations: no effect on validity.
  "description",
  "default",
  "examples",
  "title",
]);

// deno-lint-ignore no-explicit-any
type Schema = Record<string, any>;

/** The value a `#/…` JSON pointer names in `doc` (throws when it names nothing). */
export function resolvePointer(doc: unknown, ref: string): unknown {
  if (!ref.startsWith("#")) throw new Error(`not a local reference: ${ref}`);
  let node = doc;
  for (const raw of ref.slice(1).split("/").slice(1)) {
    const part = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (node === null || typeof node !== "object" || !(part in node)) {
      throw new Error(`unresolved reference ${ref}`);
    }
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/** The JSON type names `value` has (an integer is a number too). */
function typesOf(value: unknown): string[] {
  if (value === null) return ["null"];
  if (Array.isArray(value)) return ["array"];
  if (typeof value === "number") {
    return Number.isInteger(value) ? ["integer", "number"] : ["number"];
  }
  return [typeof value];
}

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Where `value` breaks `schema` (empty: it is valid). */
export function validateJson(
  doc: unknown,
  schema: Schema,
  value: unknown,
  options: { closed?: boolean } = {},
  at = "$",
): string[] {
  const problems: string[] = [];
  const fail = (message: string) => problems.push(`${at}: ${message}`);
  for (const keyword of Object.keys(schema)) {
    if (!KNOWN.has(keyword)) throw new Error(`${at}: the validator does not know "${keyword}"`);
  }
  if (schema.$ref) {
    problems.push(
      ...validateJson(doc, resolvePointer(doc, schema.$ref) as Schema, value, options, at),
    );
  }
  if (schema.type !== undefined) {
    const allowed: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!typesOf(value).some((t) => allowed.includes(t))) {
      fail(`${JSON.stringify(value)} is not ${allowed.join(" or ")}`);
      return problems;
    }
  }
  if ("const" in schema && value !== schema.const) {
    fail(`is not ${JSON.stringify(schema.const)}`);
  }
  if (schema.enum && !schema.enum.includes(value)) {
    fail(`${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  }
  if (schema.anyOf) {
    const fits = (schema.anyOf as Schema[]).some((option) =>
      validateJson(doc, option, value, options, at).length === 0
    );
    if (!fits) fail(`${JSON.stringify(value)} matches none of anyOf`);
  }
  if (typeof value === "string") {
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) {
      fail(`${JSON.stringify(value)} does not match ${schema.pattern}`);
    }
    if (schema.minLength !== undefined && [...value].length < schema.minLength) fail("too short");
    if (schema.maxLength !== undefined && [...value].length > schema.maxLength) fail("too long");
    if (schema.format === "date-time" && (!DATE_TIME.test(value) || isNaN(Date.parse(value)))) {
      fail(`${JSON.stringify(value)} is not a date-time`);
    }
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) fail(`below ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) fail(`above ${schema.maximum}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) fail("too few items");
    if (schema.maxItems !== undefined && value.length > schema.maxItems) fail("too many items");
    if (schema.items) {
      value.forEach((item, i) =>
        problems.push(...validateJson(doc, schema.items, item, options, `${at}[${i}]`))
      );
    }
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const record = value as Record<string, unknown>;
    for (const name of schema.required ?? []) {
      if (!(name in record)) fail(`lacks the required property "${name}"`);
    }
    const properties: Record<string, Schema> = schema.properties ?? {};
    for (const [name, item] of Object.entries(record)) {
      const where = `${at}.${name}`;
      if (name in properties) {
        problems.push(...validateJson(doc, properties[name], item, options, where));
      } else if (schema.additionalProperties === false) {
        problems.push(`${where}: is not allowed (additionalProperties: false)`);
      } else if (typeof schema.additionalProperties === "object") {
        problems.push(...validateJson(doc, schema.additionalProperties, item, options, where));
      } else if (options.closed && schema.properties) {
        problems.push(`${where}: is not in the documented properties`);
      }
    }
  }
  return problems;
}

/** Every keyword of `schema` and the schemas inside it that the validator does not know. */
export function unknownKeywords(schema: Schema, at = "$"): string[] {
  const out = Object.keys(schema).filter((k) => !KNOWN.has(k)).map((k) => `${at}: ${k}`);
  const inner = (s: unknown, where: string) => {
    if (s && typeof s === "object") out.push(...unknownKeywords(s as Schema, where));
  };
  for (const [name, s] of Object.entries(schema.properties ?? {})) inner(s, `${at}.${name}`);
  if (typeof schema.additionalProperties === "object") {
    inner(schema.additionalProperties, `${at}{}`);
  }
  inner(schema.items, `${at}[]`);
  (schema.anyOf ?? []).forEach((s: unknown, i: number) => inner(s, `${at}|${i}`));
  return out;
}
