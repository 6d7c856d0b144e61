/** The Responses converters (pure): requests, answers, and streams both ways. */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import {
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
} from "../../src/protocols/responses/codec.ts";
import { responsesDecoder, responsesEncoder } from "../../src/protocols/responses/stream.ts";
import type { GatewayError } from "../../src/http/errors.ts";
import type { CanonicalEvent } from "../../src/translate/ir.ts";
import { fromToken, toToken } from "../../src/translate/opaque.ts";
import { decodeEverySplit, encodeAll, INFO, PARALLEL, parseSse } from "../helpers/codec.ts";

const TRANSCRIPTS = new URL("../../../shared/transcripts/openai/", import.meta.url);
const transcript = (name: string) => JSON.parse(Deno.readTextFileSync(new URL(name, TRANSCRIPTS)));
const openai = { model: "gpt-5.4", provider: "openai", family: "openai" as const };

/** A Codex-like request: namespaced functions, a free-form tool, hosted search, history. */
const CODEX = {
  model: "m",
  instructions: "You are Codex.",
  store: false,
  include: ["reasoning.encrypted_content"],
  reasoning: { effort: "medium", summary: "auto" },
  tools: [
    { type: "function", name: "exec_command", parameters: { type: "object" }, strict: false },
    {
      type: "custom",
      name: "apply_patch",
      description: "Patch files.",
      format: { type: "grammar" },
    },
    {
      type: "namespace",
      name: "multi_agent_v1",
      description: "Agents.",
      tools: [{ type: "function", name: "close_agent", parameters: { type: "object" } }],
    },
    { type: "web_search", external_web_access: false },
  ],
  input: [
    { type: "message", role: "developer", content: [{ type: "input_text", text: "Be careful." }] },
    { type: "message", role: "user", content: [{ type: "input_text", text: "Fix it." }] },
    {
      type: "reasoning",
      id: "rs_1",
      summary: [{ type: "summary_text", text: "Plan." }],
      encrypted_content: "gAAAA-native",
    },
    { type: "function_call", call_id: "c1", name: "exec_command", arguments: '{"cmd":"ls"}' },
    { type: "function_call_output", call_id: "c1", output: "a.txt" },
    { type: "custom_tool_call", call_id: "c2", name: "apply_patch", input: "*** Begin Patch" },
    { type: "custom_tool_call_output", call_id: "c2", output: "Done" },
    {
      type: "function_call",
      call_id: "c3",
      namespace: "multi_agent_v1",
      name: "close_agent",
      arguments: '{"target":"a1"}',
    },
  ],
};

Deno.test("a Codex request decodes: system, namespaces flattened, free-form tools, reasoning, hosted search", () => {
  const request = decodeRequest(CODEX, {});
  assert.deepEqual(request.system.map((p) => p.text), ["You are Codex.", "Be careful."]);
  assert.deepEqual(request.tools.map((t) => [t.name, t.kind ?? "function", t.namespace]), [
    ["exec_command", "function", undefined],
    ["apply_patch", "custom", undefined],
    ["multi_agent_v1__close_agent", "function", "multi_agent_v1"],
  ]);
  assert.deepEqual(request.hostedTools, [{ type: "web_search", field: "tools[3]" }]);
  assert.deepEqual(request.reasoning, { effort: "medium", visible: true });
  const assistant = request.messages[1];
  assert.equal(assistant.role, "assistant");
  const reasoning = assistant.content[0];
  assert.ok(reasoning.type === "reasoning");
  // A native value names no provider: it is never replayed anywhere.
  assert.deepEqual(reasoning.opaque, {
    provider: "",
    kind: "encrypted-reasoning",
    value: "gAAAA-native",
    itemId: "rs_1",
  });
  const custom = request.messages.flatMap((m) => m.role === "assistant" ? m.content : [])
    .find((p) => p.type === "tool-call" && p.kind === "custom");
  assert.deepEqual(custom && custom.type === "tool-call" && custom.input, {
    input: "*** Begin Patch",
  });
  const last = request.messages.at(-1)!;
  assert.ok(last.role === "assistant" && last.content[0].type === "tool-call");
  assert.equal(
    last.content[0].type === "tool-call" && last.content[0].name,
    "multi_agent_v1__close_agent",
  );
});

Deno.test("encoding for a Responses upstream: stateless, reasoning replayed only to its provider, stop refused", () => {
  const request = decodeRequest({
    ...CODEX,
    input: [
      { role: "user", content: "hi" },
      {
        type: "reasoning",
        id: "rs_own",
        summary: [],
        encrypted_content: toToken({
          provider: "openai",
          kind: "encrypted-reasoning",
          value: "ENC",
          itemId: "rs_own",
        }),
      },
      {
        type: "reasoning",
        id: "rs_other",
        summary: [],
        encrypted_content: toToken({
          provider: "anthropic",
          kind: "thinking-signature",
          value: "SIG",
        }, "thinking"),
      },
      { type: "function_call", call_id: "c1", name: "exec_command", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: "ok" },
    ],
  }, {});
  const body = encodeRequest(request, openai) as Record<string, any>;
  assert.equal(body.store, false);
  assert.deepEqual(body.include, ["reasoning.encrypted_content"]);
  assert.equal(body.instructions, "You are Codex.");
  const reasoning = body.input.filter((i: any) => i.type === "reasoning");
  assert.deepEqual(reasoning, [{
    type: "reasoning",
    id: "rs_own",
    summary: [],
    encrypted_content: "ENC",
  }]);
  assert.deepEqual(body.tools.map((t: any) => t.type), [
    "function",
    "custom",
    "function",
    "web_search",
  ]);
  // To another provider, none of it is sent.
  const other = encodeRequest(request, { ...openai, provider: "xai" }) as Record<string, any>;
  assert.equal(other.input.filter((i: any) => i.type === "reasoning").length, 0);
  assert.throws(
    () =>
      encodeRequest({
        ...request,
        stop: ["x"],
        fields: { ...request.fields, stop: "stop_sequences" },
      }, openai),
    (e: GatewayError) => e.status === 400 && e.options.param === "stop_sequences",
  );
});

Deno.test("answers: usage includes cached tokens, incomplete is length, calls come back as the client declared them", () => {
  const answer = decodeResponse({
    id: "resp_1",
    status: "incomplete",
    incomplete_details: { reason: "max_output_tokens" },
    output: [
      {
        type: "reasoning",
        id: "rs_1",
        summary: [{ type: "summary_text", text: "Hm." }],
        encrypted_content: "E",
      },
      {
        type: "function_call",
        id: "fc_1",
        call_id: "c1",
        name: "multi_agent_v1__close_agent",
        arguments: '{"target":"a"}',
      },
    ],
    usage: {
      input_tokens: 100,
      input_tokens_details: { cached_tokens: 30 },
      output_tokens: 50,
      output_tokens_details: { reasoning_tokens: 20 },
    },
  }, "openai");
  assert.equal(answer.finish.reason, "length", "length wins over the tool call");
  assert.deepEqual(answer.usage, {
    input: 100,
    cacheRead: 30,
    cacheWrite: 0,
    output: 50,
    reasoning: 20,
  });
  const client = encodeResponse(answer, {
    ...INFO,
    namespaced: new Map([["multi_agent_v1__close_agent", {
      namespace: "multi_agent_v1",
      name: "close_agent",
    }]]),
  }) as Record<string, any>;
  assert.equal(client.status, "incomplete");
  assert.deepEqual(client.incomplete_details, { reason: "max_output_tokens" });
  const call = client.output.find((i: any) => i.type === "function_call");
  assert.equal(call.name, "close_agent");
  assert.equal(call.namespace, "multi_agent_v1");
  const reasoning = client.output[0];
  assert.deepEqual(fromToken(reasoning.encrypted_content)?.opaque, {
    provider: "openai",
    kind: "encrypted-reasoning",
    value: "E",
    itemId: "rs_1",
  });
  assert.deepEqual(client.usage.input_tokens_details, { cached_tokens: 30 });
  // A free-form call answered as a function with {input} is a custom call for the client.
  const custom = encodeResponse({
    ...answer,
    content: [{ type: "tool-call", id: "t1", name: "apply_patch", input: { input: "*** Begin" } }],
  }, { ...INFO, customTools: new Set(["apply_patch"]) }) as Record<string, any>;
  assert.deepEqual(
    [custom.output[0].type, custom.output[0].input],
    ["custom_tool_call", "*** Begin"],
  );
});

Deno.test("the recorded text stream decodes identically at every byte split", () => {
  const recorded = transcript("responses-text-stream.json").response.body_text as string;
  const events = decodeEverySplit((emit) => responsesDecoder(emit, "openai"), recorded);
  assert.equal(events[0].type, "start");
  const text = events.flatMap((e) => e.type === "text-delta" ? [e.delta] : []).join("");
  assert.ok(text.length > 0);
  const finish = events.at(-1)!;
  assert.ok(finish.type === "finish" && finish.reason === "stop" && finish.usage!.input > 0);
});

Deno.test("parallel calls, and arguments given only in .done, decode to their own deltas", () => {
  const ev = (data: Record<string, unknown>) =>
    `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
  const text = [
    ev({ type: "response.created", response: { id: "r", model: "m" } }),
    ev({
      type: "response.output_item.added",
      output_index: 0,
      item: { id: "fa", type: "function_call", call_id: "a", name: "f", arguments: "" },
    }),
    ev({
      type: "response.output_item.added",
      output_index: 1,
      item: { id: "fb", type: "function_call", call_id: "b", name: "g", arguments: "" },
    }),
    ev({ type: "response.function_call_arguments.delta", item_id: "fa", delta: '{"x":' }),
    ev({ type: "response.function_call_arguments.delta", item_id: "fa", delta: "1}" }),
    ev({
      type: "response.output_item.done",
      output_index: 0,
      item: { id: "fa", type: "function_call", call_id: "a", name: "f", arguments: '{"x":1}' },
    }),
    ev({
      type: "response.output_item.done",
      output_index: 1,
      item: { id: "fb", type: "function_call", call_id: "b", name: "g", arguments: '{"y":2}' },
    }),
    ev({
      type: "response.completed",
      response: { status: "completed", usage: { input_tokens: 3, output_tokens: 4 } },
    }),
  ].join("");
  const events = decodeEverySplit((emit) => responsesDecoder(emit, "openai"), text);
  const args = (id: string) =>
    events.flatMap((e) => e.type === "tool-input-delta" && e.id === id ? [e.delta] : []).join("");
  assert.equal(args("a"), '{"x":1}');
  assert.equal(args("b"), '{"y":2}');
  assert.equal((events.at(-1) as any).reason, "tool-calls");
});

Deno.test("the encoder writes the exact grammar: numbered events, paired added/done, every item in completed", () => {
  const events = parseSse(encodeAll((w) => responsesEncoder(w, INFO), PARALLEL));
  assert.deepEqual(events.map((e) => (e.data as any).sequence_number), events.map((_, i) => i));
  assert.ok(events.every((e) => e.event === (e.data as any).type));
  assert.equal(events[0].event, "response.created");
  assert.equal(events[1].event, "response.in_progress");
  const added = events.filter((e) => e.event === "response.output_item.added").length;
  const done = events.filter((e) => e.event === "response.output_item.done").length;
  assert.equal(added, 3);
  assert.equal(done, 3);
  // One item open at a time: each item's events come together, in output order.
  const order = events.flatMap((e) =>
    typeof (e.data as any).output_index === "number" ? [(e.data as any).output_index] : []
  );
  assert.deepEqual(order, [...order].sort((a, b) => a - b));
  const completed = events.at(-1)!.data as any;
  assert.equal(completed.type, "response.completed");
  assert.deepEqual(
    completed.response.output.map((i: any) => [i.type, i.arguments ?? i.content?.[0].text]),
    [
      ["message", "Checking."],
      ["function_call", '{"city":"Paris"}'],
      ["function_call", '{"zone":"UTC"}'],
    ],
  );
  assert.equal(completed.response.usage.input_tokens, 100);
  assert.equal(completed.response.id, INFO.id);
  const length: CanonicalEvent[] = [...PARALLEL.slice(0, -1), { type: "finish", reason: "length" }];
  assert.equal(
    parseSse(encodeAll((w) => responsesEncoder(w, INFO), length)).at(-1)!.event,
    "response.incomplete",
  );
  const failed = parseSse(encodeAll((w) => responsesEncoder(w, INFO), PARALLEL.slice(0, 3), "cut"));
  assert.deepEqual([failed.at(-1)!.event, (failed.at(-1)!.data as any).message], ["error", "cut"]);
});
