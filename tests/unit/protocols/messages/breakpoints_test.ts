/**
 * Messages breakpoints: `cache_control` read and written, and the gateway's own placed at the
 * stable prefix — the previous turn, the system prompt, the tools — within Anthropic's four.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../../../src/http/errors.ts";
import {
  cacheControl,
  MAX_BREAKPOINTS,
  readMark,
  withBreakpoints,
} from "../../../../src/protocols/messages/breakpoints.ts";

type Json = Record<string, unknown>;
const EPHEMERAL = { type: "ephemeral" };
const HOUR = { type: "ephemeral", ttl: "1h" };

/** Where `body` has breakpoints, in the order Anthropic reads the prompt, with their TTLs. */
function breakpoints(body: Json): string[] {
  const found: string[] = [];
  const at = (where: string, block: unknown) => {
    const control = (block as Json)?.cache_control as Json | undefined;
    if (control) found.push(`${where}${control.ttl ? `:${control.ttl}` : ""}`);
  };
  ((body.tools ?? []) as Json[]).forEach((t, i) => at(`tools[${i}]`, t));
  if (Array.isArray(body.system)) body.system.forEach((b, i) => at(`system[${i}]`, b));
  ((body.messages ?? []) as Json[]).forEach((m, i) => {
    if (Array.isArray(m.content)) m.content.forEach((b, j) => at(`messages[${i}][${j}]`, b));
  });
  if (body.cache_control) found.push("top");
  return found;
}

const TOOLS = [
  { name: "read", input_schema: { type: "object" } },
  { name: "write", input_schema: { type: "object" } },
];

/** A conversation on its third turn: two answered, the final user turn last. */
function thirdTurn(): Json {
  return {
    model: "claude",
    tools: structuredClone(TOOLS),
    system: "You are terse.",
    messages: [
      { role: "user", content: "first" },
      { role: "assistant", content: [{ type: "text", text: "one" }] },
      { role: "user", content: [{ type: "text", text: "second" }] },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "t", signature: "s" },
          { type: "text", text: "calling" },
          { type: "tool_use", id: "toolu_1", name: "read", input: {} },
        ],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "x" }] },
    ],
  };
}

Deno.test("cache_control is read with its lifetime; anything else is a 400 naming it", () => {
  assert.equal(readMark(undefined, "f"), undefined);
  assert.equal(readMark(null, "f"), undefined);
  assert.deepEqual(readMark({ type: "ephemeral" }, "f"), {});
  assert.deepEqual(readMark({ type: "ephemeral", ttl: "1h" }, "f"), { ttl: "1h" });
  assert.deepEqual(readMark({ type: "ephemeral", ttl: "5m" }, "f"), { ttl: "5m" });
  for (
    const [value, param] of [["yes", "f"], [{ type: "other" }, "f.type"], [
      { type: "ephemeral", ttl: "2h" },
      "f.ttl",
    ]] as const
  ) {
    assert.throws(
      () => readMark(value, "f"),
      (e) => e instanceof GatewayError && e.status === 400 && e.options.param === param,
    );
  }
  assert.deepEqual(cacheControl({}), EPHEMERAL);
  assert.deepEqual(cacheControl({ ttl: "1h" }), HOUR);
});

Deno.test("the gateway places three: the previous turn's end, the system prompt, the last tool", () => {
  const body = thirdTurn();
  const before = structuredClone(body) as { messages: Json[] };
  const marked = withBreakpoints(body);
  assert.deepEqual(body, before, "the body given is not changed");
  assert.deepEqual(breakpoints(marked), ["tools[1]", "system[0]", "messages[3][2]"]);
  // The system prompt becomes its one block; the rest is as it was, but for the marks.
  assert.deepEqual(marked.system, [{
    type: "text",
    text: "You are terse.",
    cache_control: EPHEMERAL,
  }]);
  const messages = marked.messages as Json[];
  assert.deepEqual(messages[3].content, [
    { type: "thinking", thinking: "t", signature: "s" },
    { type: "text", text: "calling" },
    { type: "tool_use", id: "toolu_1", name: "read", input: {}, cache_control: EPHEMERAL },
  ]);
  assert.deepEqual(messages.slice(0, 3), before.messages.slice(0, 3));
  assert.deepEqual(messages[4], before.messages[4], "the final user turn is not marked");
});

Deno.test("for an hour when asked; a first turn has no previous turn to mark", () => {
  const first = {
    model: "claude",
    tools: structuredClone(TOOLS),
    system: [{ type: "text", text: "a" }, { type: "text", text: "b" }],
    messages: [{ role: "user", content: "hi" }],
  };
  assert.deepEqual(breakpoints(withBreakpoints(first, "1h")), ["tools[1]:1h", "system[1]:1h"]);
  // Nothing to mark: no tools, no system, one message.
  const bare = { model: "m", messages: [{ role: "user", content: "hi" }] };
  assert.deepEqual(withBreakpoints(bare), bare);
  // A previous turn given as a string is made one text block to carry it.
  const strings = {
    model: "m",
    messages: [
      { role: "user", content: "a" },
      { role: "assistant", content: "b" },
      { role: "user", content: "c" },
    ],
  };
  assert.deepEqual((withBreakpoints(strings).messages as Json[])[1], {
    role: "assistant",
    content: [{ type: "text", text: "b", cache_control: EPHEMERAL }],
  });
});

Deno.test("a prefill's final user turn is the one before it; a turn of thinking alone is not marked", () => {
  const prefill = {
    model: "m",
    messages: [
      { role: "user", content: "a" },
      { role: "assistant", content: "b" },
      { role: "user", content: "c" },
      { role: "assistant", content: "{" },
    ],
  };
  assert.deepEqual(breakpoints(withBreakpoints(prefill)), ["messages[1][0]"]);
  const thinking = {
    model: "m",
    messages: [
      { role: "user", content: "a" },
      { role: "assistant", content: [{ type: "redacted_thinking", data: "x" }] },
      { role: "user", content: "c" },
    ],
  };
  assert.deepEqual(breakpoints(withBreakpoints(thinking)), []);
});

Deno.test("the client's own count toward the four, and a marked place is not marked twice", () => {
  const body = thirdTurn();
  const messages = body.messages as Json[];
  (messages[0] as Json).content = [{ type: "text", text: "first", cache_control: EPHEMERAL }];
  (messages[2].content as Json[])[0].cache_control = EPHEMERAL;
  (body.tools as Json[])[1].cache_control = EPHEMERAL;
  // Two of the client's in the messages and one on the last tool: one place is left, the
  // previous turn's end (the tools are marked already).
  assert.deepEqual(breakpoints(withBreakpoints(body)), [
    "tools[1]",
    "messages[0][0]",
    "messages[2][0]",
    "messages[3][2]",
  ]);
  // A top-level cache_control is one of the four.
  const top: Json = { ...thirdTurn(), cache_control: EPHEMERAL };
  (top.tools as Json[])[0].cache_control = EPHEMERAL;
  assert.deepEqual(breakpoints(withBreakpoints(top)), [
    "tools[0]",
    "system[0]",
    "messages[3][2]",
    "top",
  ]);
  // Four already: none placed.
  const full = thirdTurn();
  const fullMessages = full.messages as Json[];
  for (const i of [0, 1, 2, 3]) {
    fullMessages[i].content = [{ type: "text", text: `m${i}`, cache_control: EPHEMERAL }];
  }
  assert.equal(breakpoints(withBreakpoints(full)).length, MAX_BREAKPOINTS);
  assert.deepEqual(withBreakpoints(full), full);
});

Deno.test("no longer-lived breakpoint follows a shorter-lived one: the default lifetime instead", () => {
  const body = thirdTurn();
  (body.tools as Json[])[0].cache_control = EPHEMERAL;
  // A 5-minute breakpoint on the first tool: an hour after it would be refused upstream.
  assert.deepEqual(breakpoints(withBreakpoints(body, "1h")), [
    "tools[0]",
    "tools[1]",
    "system[0]",
    "messages[3][2]",
  ]);
  // An hour-long one later on: what comes before may live an hour.
  const later = thirdTurn();
  ((later.messages as Json[])[4].content as Json[])[0].cache_control = HOUR;
  assert.deepEqual(breakpoints(withBreakpoints(later, "1h")), [
    "tools[1]:1h",
    "system[0]:1h",
    "messages[3][2]:1h",
    "messages[4][0]:1h",
  ]);
  // Before an hour-long one, a 5-minute one cannot stand: with a 5-minute lifetime asked, none.
  assert.deepEqual(breakpoints(withBreakpoints(later)), ["messages[4][0]:1h"]);
});

Deno.test("a previous turn with no block is not marked, nor is the system prompt in its place", () => {
  const body = {
    model: "m",
    system: "s",
    messages: [{ role: "assistant", content: [] }, { role: "user", content: "hi" }],
  };
  assert.deepEqual(breakpoints(withBreakpoints(body)), ["system[0]"]);
  const none = { model: "m", messages: [{ role: "user", content: "hi" }] };
  assert.deepEqual(withBreakpoints(none), none);
});
