/**
 * The upstream state a Responses body names and an answer creates (pure): the items of a stored
 * answer passed through are recorded as the caller's (JSON and stream alike), and a later call
 * passed through may refer to them by id (`item_reference`, as the Vercel AI SDK sends reasoning
 * with `store: true`) — to its own only: any other is the same 400 as an id never issued.
 */
import assert from "node:assert/strict";
import type { ObjectKind } from "../../../../src/billing/usage.ts";
import { encodeSse, SseScanner } from "../../../../src/http/sse.ts";
import type { GatewayError } from "../../../../src/http/errors.ts";
import { itemId } from "../../../../src/protocols/responses/item_ids.ts";
import { responsesNames, responsesState } from "../../../../src/protocols/responses/state.ts";
import { responsesMeter, responsesObjects } from "../../../../src/protocols/responses/usage.ts";
import type { CallInput } from "../../../../src/protocols/wire.ts";

/** An upstream answer, as OpenAI gives it with `store: true`: reasoning, a call, a code run. */
const ANSWER = {
  id: "resp_68af2b0c9e1",
  object: "response",
  status: "completed",
  output: [
    { id: "rs_68af2b0c9e2", type: "reasoning", summary: [] },
    { id: "ci_68af2b0c9e3", type: "code_interpreter_call", container_id: "cntr_1", code: "1" },
    {
      id: "fc_68af2b0c9e4",
      type: "function_call",
      call_id: "call_1",
      name: "get_weather",
      arguments: "{}",
    },
  ],
  usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15 },
};

const CREATED = [
  { id: "resp_68af2b0c9e1", kind: "response" },
  { id: "rs_68af2b0c9e2", kind: "item" },
  { id: "ci_68af2b0c9e3", kind: "item" },
  { id: "cntr_1", kind: "container" },
  { id: "fc_68af2b0c9e4", kind: "item" },
];

Deno.test("a Responses answer creates itself, each of its output items, and its containers", () => {
  assert.deepEqual(responsesObjects(ANSWER), CREATED);
});

Deno.test("a Responses stream's meter knows the same objects as the answer", () => {
  const created = JSON.stringify({ type: "response.created", response: { id: ANSWER.id } });
  let text = encodeSse(created, "response.created");
  for (const item of ANSWER.output) {
    const event = JSON.stringify({ type: "response.output_item.added", item });
    text += encodeSse(event, "response.output_item.added");
  }
  const done = JSON.stringify({ type: "response.completed", response: ANSWER });
  text += encodeSse(done, "response.completed");
  const meter = responsesMeter();
  const scanner = new SseScanner((e) => meter.onEvent(e));
  scanner.push(new TextEncoder().encode(text));
  scanner.end();
  assert.deepEqual(
    [...meter.objects()].sort((a, b) => a.id.localeCompare(b.id)),
    [...CREATED].sort((a, b) => a.id.localeCompare(b.id)),
  );
});

/** A gateway-issued item id (of a translated answer the gateway keeps). */
const ISSUED = itemId("rs", `resp_${"ab".repeat(24)}`, 0);

Deno.test("item references name the gateway's kept answers, and upstream items continued where they are", () => {
  const names = responsesNames({
    model: "m",
    input: [
      { role: "user", content: "hi" },
      { type: "item_reference", id: ISSUED },
      { type: "item_reference", id: "rs_68af2b0c9e2" },
      { type: "item_reference", id: "rs_68af2b0c9e2" },
      { type: "item_reference", id: 7 },
    ],
  });
  assert.deepEqual(names.answers, [`resp_${"ab".repeat(24)}`]);
  assert.deepEqual(names.items, ["rs_68af2b0c9e2"]);
  // The call goes to the provider holding the item.
  assert.ok(names.continues?.includes("rs_68af2b0c9e2"));
});

/** A request's input whose caller owns `mine` (objects of those kinds), and nothing else. */
function inputOwning(mine: Record<string, ObjectKind>): CallInput {
  return {
    url: new URL("http://gateway.test/v1/responses"),
    headers: new Headers(),
    params: {},
    own: (id) => {
      throw new Error(`no stored object: ${String(id)}`);
    },
    owned: (id, kind) =>
      typeof id === "string" && mine[id] === kind ? { contextTokens: 0 } : undefined,
  };
}

Deno.test("a call passed through may refer to its caller's upstream items, and to no other", () => {
  const input = inputOwning({ rs_mine: "item", resp_mine: "response" });
  const body = (id: unknown) => ({
    model: "gpt-5.4",
    input: [{ role: "user", content: "go on" }, { type: "item_reference", id }],
  });
  assert.deepEqual(responsesState(input, body("rs_mine")), {});
  // Another account's item, one never seen, a response's id, a malformed one: the same 400.
  const refused = ["rs_theirs", "resp_mine", 7, ISSUED].map((id) => {
    try {
      responsesState(input, body(id));
    } catch (error) {
      return error as GatewayError;
    }
    assert.fail(`${String(id)} was let through`);
  });
  for (const error of refused) {
    assert.equal(error.status, 400);
    assert.equal(error.options.param, "input[1]");
    assert.match(error.message, /no item with id '.*' is kept for you/);
  }
});
