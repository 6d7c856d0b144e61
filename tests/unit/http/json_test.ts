import assert from "node:assert/strict";
import { eachObject } from "../../../src/http/json.ts";
import { GatewayError } from "../../../src/http/errors.ts";

Deno.test("eachObject: each object of a list with its field path and index, in order", () => {
  const seen = eachObject([{ a: 1 }, { a: 2 }], "tools", (item, at, i) => `${at}=${item.a}@${i}`);
  assert.deepEqual(seen, ["tools[0]=1@0", "tools[1]=2@1"]);
  assert.deepEqual(eachObject(undefined, "tools", () => 1), []);
  assert.deepEqual(eachObject(null, "tools", () => 1), []);
});

Deno.test("eachObject: a non-object element is a 400 naming it, found when its turn comes", () => {
  const called: string[] = [];
  assert.throws(
    () => eachObject([{}, 3, {}], "messages", (_, at) => called.push(at)),
    (e: unknown) =>
      e instanceof GatewayError && e.status === 400 && e.message.includes("'messages[1]'"),
  );
  assert.deepEqual(called, ["messages[0]"]);
  assert.throws(() => eachObject("x", "messages", () => 1), /'messages': must be an array/);
});
