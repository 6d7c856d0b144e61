/** A schema's keywords in one order: the same schema, the same bytes; names and arrays as given. */
import assert from "node:assert/strict";
import { orderedSchema } from "../../../src/translate/schema_order.ts";

Deno.test("a schema's keywords are sorted, in it and in every schema it holds", () => {
  const a = {
    type: "object",
    properties: {
      path: { type: "string", description: "Where." },
      mode: { enum: ["r", "w"], type: "string" },
    },
    required: ["path"],
    additionalProperties: { type: "string", minLength: 1 },
  };
  const b = {
    required: ["path"],
    additionalProperties: { minLength: 1, type: "string" },
    properties: {
      path: { description: "Where.", type: "string" },
      mode: { type: "string", enum: ["r", "w"] },
    },
    type: "object",
  };
  assert.equal(JSON.stringify(orderedSchema(a)), JSON.stringify(orderedSchema(b)));
  assert.deepEqual(orderedSchema(a), a, "the same schema");
  assert.deepEqual(Object.keys(orderedSchema(a)), [
    "additionalProperties",
    "properties",
    "required",
    "type",
  ]);
});

Deno.test("property names, definitions and arrays keep the client's order", () => {
  const schema = {
    type: "object",
    properties: { zeta: { type: "string" }, alpha: { type: "integer", minimum: 0 } },
    $defs: { Z: { type: "string" }, A: { type: "number" } },
    required: ["zeta", "alpha"],
    anyOf: [{ type: "object", required: ["zeta"] }, { required: ["alpha"], type: "object" }],
    enum: [{ b: 1, a: 2 }],
    default: { y: 1, x: 2 },
  };
  const ordered = orderedSchema(schema as Record<string, unknown>) as Record<
    string,
    Record<string, unknown>
  >;
  assert.deepEqual(Object.keys(ordered.properties), ["zeta", "alpha"]);
  assert.deepEqual(Object.keys(ordered.properties.alpha as object), ["minimum", "type"]);
  assert.deepEqual(Object.keys(ordered.$defs), ["Z", "A"]);
  assert.deepEqual(ordered.required, ["zeta", "alpha"]);
  assert.deepEqual(
    (ordered.anyOf as unknown as Record<string, unknown>[]).map((s) => Object.keys(s)),
    [["required", "type"], ["required", "type"]],
  );
  // Data is not a schema: it stays as written.
  assert.equal(JSON.stringify(ordered.enum), '[{"b":1,"a":2}]');
  assert.equal(JSON.stringify(ordered.default), '{"y":1,"x":2}');
});

Deno.test("a `__proto__` name stays a member; a deep schema is left as it is below 64 levels", () => {
  const schema = JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"}}}');
  const ordered = orderedSchema(schema) as { properties: object };
  assert.equal(
    JSON.stringify(ordered),
    '{"properties":{"__proto__":{"type":"string"}},"type":"object"}',
  );
  assert.equal(Object.getPrototypeOf(ordered.properties), Object.prototype);

  let deep: Record<string, unknown> = { type: "string", description: "leaf" };
  for (let i = 0; i < 5000; i++) deep = { not: deep, type: "object" };
  const text = JSON.stringify(orderedSchema(deep));
  assert.ok(text.startsWith('{"not":{"not":'), "ordered near the top");
  assert.ok(text.includes('"type":"string","description":"leaf"'), "left as it is deep down");
});

Deno.test("values that are not schemas come back as they are", () => {
  assert.equal(orderedSchema(null), null);
  assert.equal(orderedSchema("text"), "text");
  assert.equal(orderedSchema(true), true);
});
