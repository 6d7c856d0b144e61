/** JSON Schema from valibot schemas: what is described, and what refuses to be. */
import assert from "node:assert/strict";
import * as v from "valibot";
import { jsonSchemaOf } from "../../../src/http/schema_doc.ts";

Deno.test("objects, optional and nullable members, unions, pipes and their bounds", () => {
  const schema = v.strictObject({
    name: v.pipe(v.string(), v.regex(/^\w+$/), v.maxLength(8), v.description("a name")),
    count: v.optional(v.nullable(v.pipe(v.number(), v.integer(), v.minValue(0)))),
    when: v.optional(v.nullable(v.union([v.string(), v.number()]))),
    kind: v.picklist(["a", "b"]),
    tags: v.pipe(v.array(v.string()), v.maxLength(3)),
    meta: v.pipe(v.custom<unknown>(() => true), v.record(v.string(), v.boolean())),
    loose: v.object({ on: v.literal(true) }),
  });
  assert.deepEqual(jsonSchemaOf(schema), {
    type: "object",
    properties: {
      name: { type: "string", pattern: "^\\w+$", maxLength: 8, description: "a name" },
      count: { type: ["integer", "null"], minimum: 0 },
      when: { anyOf: [{ type: "string" }, { type: "number" }, { type: "null" }] },
      kind: { type: "string", enum: ["a", "b"] },
      tags: { type: "array", items: { type: "string" }, maxItems: 3 },
      meta: { type: "object", additionalProperties: { type: "boolean" } },
      loose: { type: "object", properties: { on: { const: true } }, required: ["on"] },
    },
    required: ["name", "kind", "tags", "meta", "loose"],
    additionalProperties: false,
  });
});

Deno.test("a construct it does not know throws rather than describing less than is checked", () => {
  assert.throws(() => jsonSchemaOf(v.date()), /"date"/);
  assert.throws(() => jsonSchemaOf(v.pipe(v.string(), v.email())), /"email"/);
  assert.throws(() => jsonSchemaOf(v.pipe(v.string(), v.regex(/a/i))), /flags/);
  assert.throws(() => jsonSchemaOf(v.record(v.picklist(["a"]), v.string())), /plain strings/);
  assert.throws(
    () => jsonSchemaOf(v.pipe(v.string(), v.pipe(v.string(), v.trim()))),
    /inside a pipe/,
  );
});
