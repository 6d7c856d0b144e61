/**
 * The Responses converters (pure): Codex- and Agents-SDK-shaped requests, answers, and streams
 * both ways (decoded at every byte split; encoded in the exact grammar the SDKs accumulate).
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { decodeRequest } from "../../../../src/protocols/responses/decode_request.ts";
import { encodeRequest } from "../../../../src/protocols/responses/encode_request.ts";
import { decodeResponse } from "../../../../src/protocols/responses/decode_response.ts";
import { encodeResponse } from "../../../../src/protocols/responses/encode_response.ts";
import { responsesDecoder, responsesEncoder } from "../../../../src/protocols/responses/stream.ts";
import { messages } from "../../../../src/protocols/messages/index.ts";
import { messagesDecoder } from "../../../../src/protocols/messages/stream.ts";
import type { GatewayError } from "../../../../src/http/errors.ts";
import type { AnswerInfo } from "../../../../src/translate/codec.ts";
import type { CanonicalEvent, CanonicalRequest, Opaque } from "../../../../src/translate/ir.ts";
import { fromToken, toToken } from "../../../../src/translate/opaque.ts";
import { toolForms } from "../../../../src/translate/tool_forms.ts";
import { collect } from "../../../../src/translate/collect.ts";
import { zeroUsage } from "../../../../src/translate/ir.ts";
import { issuedIn, itemId } from "../../../../src/protocols/responses/item_ids.ts";
import { decodeEverySplit, encodeAll, INFO, PARALLEL } from "../../../helpers/codec.ts";
import { sseEvents } from "../../../helpers/http.ts";

const TRANSCRIPTS = new URL("../../../fixtures/transcripts/openai/", import.meta.url);
const transcript = (name: string) => JSON.parse(Deno.readTextFileSync(new URL(name, TRANSCRIPTS)));
const openai = { model: "gpt-5.4", provider: "openai", family: "openai" as const };
const anthropic = { model: "claude-x", provider: "anthropic", family: "anthropic" as const };

/** A 400 naming `param`. */
const names = (param: string) => (e: GatewayError) => e.status === 400 && e.options.param === param;

const PATCH_GRAMMAR = 'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin Patch" LF';

/** What Codex sends: namespaced functions, a free-form tool, cached search, stateless history. */
const CODEX = {
  model: "m",
  instructions: "You are Codex.",
  store: false,
  stream: true,
  include: ["reasoning.encrypted_content"],
  prompt_cache_key: "thread-1",
  parallel_tool_calls: true,
  tool_choice: "auto",
  reasoning: { effort: "medium", summary: "auto" },
  tools: [
    {
      type: "function",
      name: "exec_command",
      description: "Run a command.",
      strict: false,
      parameters: { type: "object", properties: { cmd: { type: "string" } }, required: ["cmd"] },
    },
    {
      type: "custom",
      name: "apply_patch",
      description: "Patch files.",
      format: { type: "grammar", syntax: "lark", definition: PATCH_GRAMMAR },
    },
    {
      type: "namespace",
      name: "mcp__files",
      description: "Tools in the mcp__files namespace.",
      tools: [{
        type: "function",
        name: "read",
        description: "Read a file.",
        strict: false,
        parameters: { type: "object", properties: { path: { type: "string" } } },
      }],
    },
    { type: "web_search", external_web_access: false },
  ],
  input: [
    {
      type: "message",
      role: "developer",
      content: [{ type: "input_text", text: "Sandbox: read-only." }],
    },
    { type: "message", role: "user", content: [{ type: "input_text", text: "Fix it." }] },
    {
      type: "reasoning",
      id: "rs_native",
      summary: [{ type: "summary_text", text: "Plan." }, { type: "summary_text", text: "Act." }],
      encrypted_content: "gAAAA-native",
    },
    { type: "function_call", call_id: "c1", name: "exec_command", arguments: '{"cmd":"ls"}' },
    { type: "function_call_output", call_id: "c1", output: "a.txt" },
    {
      type: "reasoning",
      summary: [],
      encrypted_content: toToken(
        { provider: "anthropic", kind: "thinking-signature", value: "S" },
        "Exact thinking.",
      ),
    },
    { type: "custom_tool_call", call_id: "c2", name: "apply_patch", input: "*** Begin Patch" },
    { type: "custom_tool_call_output", call_id: "c2", output: "Done" },
    {
      type: "reasoning",
      summary: [],
      encrypted_content: toToken({ provider: "gemini", kind: "thought-signature", value: "TS" }),
    },
    {
      type: "function_call",
      call_id: "c3",
      namespace: "mcp__files",
      name: "read",
      arguments: '{"path":"a.txt"}',
    },
    {
      type: "function_call",
      call_id: "c4",
      namespace: "mcp__files",
      name: "read",
      arguments: '{"path":"b.txt"}',
    },
    { type: "function_call_output", call_id: "c3", output: "A" },
    { type: "function_call_output", call_id: "c4", output: [{ type: "input_text", text: "B" }] },
    { type: "web_search_call", status: "completed", action: { type: "search", query: "deno" } },
    { type: "message", role: "developer", content: "Now be brief." },
  ],
};

Deno.test("a Codex request decodes: namespaces flattened, free-form tools, search, reasoning tokens", () => {
  const request = decodeRequest(CODEX, {});
  assert.deepEqual(request.system.map((p) => p.text), ["You are Codex.", "Sandbox: read-only."]);
  assert.deepEqual(request.tools.map((t) => [t.name, t.kind ?? "function", t.namespace]), [
    ["exec_command", "function", undefined],
    ["apply_patch", "custom", undefined],
    ["mcp__files__read", "function", "mcp__files"],
  ]);
  const patch = request.tools[1].parameters as any;
  assert.deepEqual(patch.required, ["input"]);
  assert.ok(patch.properties.input.description.includes(PATCH_GRAMMAR), "the grammar is the hint");
  assert.deepEqual(request.hostedTools, [{ type: "web_search", field: "tools[3]" }]);
  assert.deepEqual(request.reasoning, { effort: "medium", visible: true });
  assert.deepEqual([request.toolChoice, request.parallelToolCalls, request.stream], [
    { type: "auto" },
    true,
    true,
  ]);
  assert.deepEqual(request.fields, { messages: "input", tools: "tools", reasoning: "reasoning" });

  assert.deepEqual(request.messages.map((m) => m.role), [
    "user",
    "assistant",
    "tool",
    "assistant",
    "tool",
    "assistant",
    "tool",
    "assistant",
    "system",
  ]);
  const [, first, , second, , third, results] = request.messages as any[];
  // A native value names no provider: it is kept for the record, never replayed anywhere.
  assert.deepEqual(first.content[0], {
    type: "reasoning",
    text: "Plan.\n\nAct.",
    opaque: {
      provider: "",
      kind: "encrypted-reasoning",
      value: "gAAAA-native",
      itemId: "rs_native",
    },
  });
  // A token carries the exact thinking text of its provider.
  assert.deepEqual(second.content[0], {
    type: "reasoning",
    text: "Exact thinking.",
    opaque: { provider: "anthropic", kind: "thinking-signature", value: "S" },
  });
  assert.deepEqual(second.content[1], {
    type: "tool-call",
    id: "c2",
    name: "apply_patch",
    input: { input: "*** Begin Patch" },
    kind: "custom",
  });
  // A Gemini signature on the reasoning item before a call goes back onto the call.
  assert.deepEqual(third.content.map((p: any) => [p.type, p.name, p.opaque?.value]), [
    ["tool-call", "mcp__files__read", "TS"],
    ["tool-call", "mcp__files__read", undefined],
  ]);
  assert.deepEqual(results.content.map((p: any) => [p.id, p.name, p.content[0].text]), [
    ["c3", "mcp__files__read", "A"],
    ["c4", "mcp__files__read", "B"],
  ]);
  assert.deepEqual(request.messages[7].content, [{
    type: "hosted-call",
    tool: "web_search",
    id: "",
    query: "deno",
  }]);
  assert.deepEqual(request.messages[8].content, [{ type: "text", text: "Now be brief." }]);
});

Deno.test("an Agents SDK request: easy messages, files, structured output, allowed tools", () => {
  const request = decodeRequest({
    model: "m",
    input: [
      { role: "user", content: "Look." },
      {
        role: "user",
        content: [
          { type: "input_image", image_url: "data:image/png;base64,AAAA", detail: "high" },
          { type: "input_image", image_url: "https://x.test/cat.jpg" },
          { type: "input_file", file_data: "data:application/pdf;base64,JVBE", filename: "a.pdf" },
          { type: "input_file", file_url: "https://x.test/notes.txt" },
        ],
      },
      {
        type: "message",
        role: "assistant",
        id: "msg_1",
        status: "completed",
        content: [{ type: "output_text", text: "Seen.", annotations: [] }],
      },
    ],
    tools: [
      { type: "function", name: "a", parameters: { type: "object" }, strict: true },
      { type: "function", name: "b", parameters: { type: "object" }, strict: true },
      { type: "file_search", vector_store_ids: ["vs_1"] },
    ],
    tool_choice: {
      type: "allowed_tools",
      mode: "required",
      tools: [{ type: "function", name: "b" }],
    },
    text: {
      format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true },
    },
    reasoning: { effort: "none" },
    safety_identifier: "u1",
    max_output_tokens: 500,
    temperature: 0.3,
    top_p: 0.9,
  }, {});
  assert.deepEqual(request.messages[1].content, [
    { type: "file", mediaType: "image/png", data: { base64: "AAAA" }, detail: "high" },
    { type: "file", mediaType: "image/jpeg", data: { url: "https://x.test/cat.jpg" } },
    { type: "file", mediaType: "application/pdf", data: { base64: "JVBE" }, filename: "a.pdf" },
    { type: "file", mediaType: "text/plain", data: { url: "https://x.test/notes.txt" } },
  ]);
  // Only the allowed tools are offered, with the mode.
  assert.deepEqual(request.tools.map((t) => [t.name, t.strict]), [["b", true]]);
  assert.deepEqual(request.hostedTools, []);
  assert.deepEqual(request.toolChoice, { type: "required" });
  assert.deepEqual(request.responseFormat, {
    type: "json",
    schema: { type: "object" },
    name: "out",
    strict: true,
  });
  assert.deepEqual(request.reasoning, { off: true });
  assert.deepEqual(
    [request.user, request.maxOutputTokens, request.temperature, request.topP],
    ["u1", 500, 0.3, 0.9],
  );
  assert.deepEqual(decodeRequest({ model: "m", input: "hi" }, {}).messages, [
    { role: "user", content: [{ type: "text", text: "hi" }] },
  ]);
});

Deno.test("what only OpenAI holds or cannot be carried is refused by name", () => {
  const refused: [Record<string, unknown>, string][] = [
    [{ conversation: "conv_1" }, "conversation"],
    [{ prompt: { id: "pmpt_1" } }, "prompt"],
    [{ top_logprobs: 2 }, "top_logprobs"],
    [{ input: [{ type: "item_reference", id: "msg_1" }] }, "input[0]"],
    [{ input: [{ role: "user", content: "a" }, { type: "local_shell_call" }] }, "input[1]"],
    [{ input: [{ type: "compaction", encrypted_content: "x" }] }, "input[0]"],
    [
      { input: [{ role: "user", content: [{ type: "input_image", file_id: "file_1" }] }] },
      "input[0].content[0].file_id",
    ],
    [{ tool_choice: { type: "web_search_preview" } }, "tool_choice"],
    [{ input: [{ role: "robot", content: "x" }] }, "input[0].role"],
    [
      {
        tools: [{ type: "function", name: "x" }, { type: "namespace", name: "n", tools: [] }, {
          type: "function",
          name: "x",
        }],
      },
      "tools[2]",
    ],
  ];
  for (const [extra, param] of refused) {
    assert.throws(
      () => decodeRequest({ model: "m", input: [], ...extra }, {}),
      names(param),
      param,
    );
  }
});

Deno.test("encoding for a Responses upstream: stateless, reasoning replayed only to its provider", () => {
  const own: Opaque = {
    provider: "openai",
    kind: "encrypted-reasoning",
    value: "ENC",
    itemId: "rs_own",
  };
  const request = decodeRequest({
    ...CODEX,
    input: [
      { role: "user", content: "hi" },
      {
        type: "reasoning",
        summary: [{ type: "summary_text", text: "S" }],
        encrypted_content: toToken(own),
      },
      { type: "reasoning", summary: [], encrypted_content: "gAAAA-native" },
      {
        type: "reasoning",
        summary: [],
        encrypted_content: toToken({
          provider: "anthropic",
          kind: "thinking-signature",
          value: "SIG",
        }, "t"),
      },
      { type: "function_call", call_id: "c1", name: "exec_command", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: "ok" },
    ],
  }, {});
  const body = encodeRequest(request, openai) as Record<string, any>;
  assert.equal(body.model, "gpt-5.4");
  assert.equal(body.store, false);
  assert.deepEqual(body.include, ["reasoning.encrypted_content"]);
  assert.equal(body.instructions, "You are Codex.");
  assert.deepEqual(body.input.filter((i: any) => i.type === "reasoning"), [{
    type: "reasoning",
    id: "rs_own",
    summary: [{ type: "summary_text", text: "S" }],
    encrypted_content: "ENC",
  }]);
  assert.deepEqual(body.tools.map((t: any) => [t.type, t.name]), [
    ["function", "exec_command"],
    ["custom", "apply_patch"],
    ["function", "mcp__files__read"],
    ["web_search", undefined],
  ]);
  assert.deepEqual([body.tool_choice, body.parallel_tool_calls], ["auto", true]);
  assert.deepEqual(body.reasoning, { effort: "medium", summary: "auto" });
  assert.equal(body.stream, true);
  // To another provider, none of it is sent; nothing is forged.
  const other = encodeRequest(request, { ...openai, provider: "xai" }) as Record<string, any>;
  assert.equal(other.input.filter((i: any) => i.type === "reasoning").length, 0);
});

Deno.test("encoding the canonical parts: files, results, formats, limits and refusals", () => {
  const base: CanonicalRequest = {
    system: [{ type: "text", text: "A" }, { type: "text", text: "B" }],
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "see" },
          { type: "file", mediaType: "image/png", data: { base64: "AAAA" } },
          { type: "file", mediaType: "application/pdf", data: { base64: "JVBE" } },
          { type: "file", mediaType: "text/plain", data: { base64: "aGk=" } },
          { type: "file", mediaType: "application/pdf", data: { url: "https://x.test/a.pdf" } },
        ],
      },
      { role: "system", content: [{ type: "text", text: "Mid." }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "One" },
          { type: "text", text: "Two" },
          {
            type: "reasoning",
            text: "foreign",
            opaque: { provider: "anthropic", kind: "thinking-signature", value: "x" },
          },
          { type: "hosted-call", tool: "web_search", id: "srvtoolu_1", query: "q" },
          { type: "tool-call", id: "t1", name: "f", input: { a: 1 } },
          {
            type: "tool-call",
            id: "t2",
            name: "apply_patch",
            input: { input: "*** Begin" },
            kind: "custom",
          },
          { type: "tool-call", id: "t3", name: "g", input: { _raw: "{bad" } },
        ],
      },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            id: "t1",
            content: [{ type: "text", text: "boom" }],
            isError: true,
          },
          {
            type: "tool-result",
            id: "t2",
            content: [{ type: "text", text: "ok" }],
            kind: "custom",
          },
          {
            type: "tool-result",
            id: "t3",
            content: [{ type: "text", text: "pic" }, {
              type: "file",
              mediaType: "image/png",
              data: { base64: "BB" },
            }],
          },
        ],
      },
    ],
    tools: [
      { name: "f", parameters: { type: "object" } },
      { name: "apply_patch", parameters: { type: "object" }, kind: "custom", description: "P" },
    ],
    hostedTools: [],
    toolChoice: { type: "tool", name: "apply_patch" },
    parallelToolCalls: false,
    maxOutputTokens: 4,
    temperature: 0.5,
    topK: 5,
    seed: 1,
    presencePenalty: 1,
    responseFormat: { type: "json", schema: { type: "object" } },
    reasoning: { budgetTokens: 2000, visible: false },
    user: "x".repeat(100),
    stream: false,
    fields: { messages: "messages", tools: "tools", stop: "stop_sequences" },
  };
  const body = encodeRequest(base, openai) as Record<string, any>;
  assert.equal(body.instructions, "A\n\nB");
  assert.deepEqual(body.input[0].content, [
    { type: "input_text", text: "see" },
    { type: "input_image", image_url: "data:image/png;base64,AAAA", detail: "auto" },
    { type: "input_file", file_data: "data:application/pdf;base64,JVBE", filename: "file.pdf" },
    { type: "input_file", file_data: "data:text/plain;base64,aGk=", filename: "file.txt" },
    { type: "input_file", file_url: "https://x.test/a.pdf" },
  ]);
  assert.deepEqual(body.input[1], {
    type: "message",
    role: "developer",
    content: [{ type: "input_text", text: "Mid." }],
  });
  assert.deepEqual(body.input.slice(2).map((i: any) => i.type), [
    "message",
    "function_call",
    "custom_tool_call",
    "function_call",
    "function_call_output",
    "custom_tool_call_output",
    "function_call_output",
  ]);
  assert.deepEqual(body.input[2].content.map((c: any) => c.text), ["One", "Two"]);
  assert.equal(body.input[3].arguments, '{"a":1}');
  assert.deepEqual(body.input[4], {
    type: "custom_tool_call",
    call_id: "t2",
    name: "apply_patch",
    input: "*** Begin",
  });
  assert.equal(body.input[5].arguments, "{bad");
  assert.equal(body.input[6].output, "Error: boom");
  assert.equal(body.input[7].output, "ok");
  assert.deepEqual(body.input[8].output, [
    { type: "input_text", text: "pic" },
    { type: "input_image", image_url: "data:image/png;base64,BB", detail: "auto" },
  ]);
  assert.deepEqual(body.tools, [
    { type: "function", name: "f", parameters: { type: "object" }, strict: false },
    { type: "custom", name: "apply_patch", description: "P" },
  ]);
  assert.deepEqual(body.tool_choice, { type: "custom", name: "apply_patch" });
  assert.equal(body.parallel_tool_calls, false);
  assert.equal(body.max_output_tokens, 16);
  assert.equal(body.temperature, 0.5);
  for (const dropped of ["top_k", "seed", "presence_penalty", "stop"]) {
    assert.ok(!(dropped in body));
  }
  assert.deepEqual(body.text, {
    format: { type: "json_schema", name: "response", schema: { type: "object" }, strict: false },
  });
  assert.deepEqual(body.reasoning, { effort: "low" });
  assert.ok(body.safety_identifier.length <= 64);
  assert.equal(
    (encodeRequest(base, openai) as any).safety_identifier,
    body.safety_identifier,
    "a stable hash",
  );
  assert.ok(!("stream" in body));
  assert.deepEqual(
    (encodeRequest(
      { ...base, responseFormat: { type: "json" }, reasoning: { off: true } },
      openai,
    ) as any)
      .text,
    { format: { type: "json_object" } },
  );
  assert.ok(!("reasoning" in encodeRequest({ ...base, reasoning: { off: true } }, openai)));

  // Refusals name the client's own field.
  assert.throws(() => encodeRequest({ ...base, stop: ["x"] }, openai), names("stop_sequences"));
  assert.throws(
    () =>
      encodeRequest(
        { ...base, stop: ["x"], fields: { messages: "contents", tools: "tools" } },
        openai,
      ),
    names("stop"),
  );
  assert.throws(
    () => encodeRequest({ ...base, choices: 2, fields: { ...base.fields, choices: "n" } }, openai),
    names("n"),
  );
  assert.throws(
    () =>
      encodeRequest({
        ...base,
        hostedTools: [{ type: "other", field: "tools[3].type", name: "code_execution_20250825" }],
      }, openai),
    names("tools[3].type"),
  );
  assert.throws(
    () =>
      encodeRequest({
        ...base,
        messages: [{
          role: "user",
          content: [{ type: "file", mediaType: "audio/wav", data: { base64: "UklG" } }],
        }],
      }, openai),
    names("messages"),
  );
});

Deno.test("a free-form tool round trip: Codex through Claude and back as custom_tool_call", () => {
  // The Codex request as a Messages body: apply_patch is a tool with one string `input`.
  const request = decodeRequest(CODEX, {});
  const upstream = messages.encodeRequest(request, anthropic) as Record<string, any>;
  const tool = upstream.tools.find((t: any) => t.name === "apply_patch");
  assert.deepEqual(tool.input_schema.required, ["input"]);
  const history = upstream.messages.flatMap((m: any) => m.content);
  assert.deepEqual(history.find((b: any) => b.type === "tool_use" && b.id === "c2").input, {
    input: "*** Begin Patch",
  });
  assert.ok(history.some((b: any) => b.type === "tool_result" && b.tool_use_id === "c2"));

  // Claude answers with tool_use {input}: the Codex client gets a custom_tool_call.
  const info: AnswerInfo = {
    ...INFO,
    customTools: new Set(["apply_patch"]),
    namespaced: new Map([["mcp__files__read", { namespace: "mcp__files", name: "read" }]]),
  };
  const answer = messages.decodeResponse({
    id: "msg_1",
    model: "claude-x",
    stop_reason: "tool_use",
    content: [
      {
        type: "tool_use",
        id: "toolu_1",
        name: "apply_patch",
        input: { input: "*** Begin Patch\n" },
      },
      { type: "tool_use", id: "toolu_2", name: "mcp__files__read", input: { path: "a" } },
    ],
    usage: { input_tokens: 10, output_tokens: 5 },
  }, "anthropic");
  const client = encodeResponse(answer, info) as Record<string, any>;
  assert.deepEqual(
    client.output.map((i: any) => [i.type, i.name, i.namespace, i.input ?? i.arguments]),
    [
      ["custom_tool_call", "apply_patch", undefined, "*** Begin Patch\n"],
      ["function_call", "read", "mcp__files", '{"path":"a"}'],
    ],
  );
  assert.match(client.output[0].id, /^ctc_/);
  assert.match(client.output[1].id, /^fc_/);

  // The same answer streamed: the free-form input is written whole once the call ends.
  const sse = [
    ["message_start", {
      type: "message_start",
      message: { id: "msg_1", model: "claude-x", usage: { input_tokens: 10, output_tokens: 1 } },
    }],
    ["content_block_start", {
      type: "content_block_start",
      index: 0,
      content_block: { type: "tool_use", id: "toolu_1", name: "apply_patch", input: {} },
    }],
    ["content_block_delta", {
      type: "content_block_delta",
      index: 0,
      delta: { type: "input_json_delta", partial_json: '{"input":"*** Begin' },
    }],
    ["content_block_delta", {
      type: "content_block_delta",
      index: 0,
      delta: { type: "input_json_delta", partial_json: ' Patch\\n"}' },
    }],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    ["message_delta", {
      type: "message_delta",
      delta: { stop_reason: "tool_use" },
      usage: { output_tokens: 5 },
    }],
    ["message_stop", { type: "message_stop" }],
  ].map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join("");
  const canonical = decodeEverySplit((emit) => messagesDecoder(emit, "anthropic"), sse);
  const events = sseEvents(encodeAll((w) => responsesEncoder(w, info), canonical));
  const kinds = events.map((e) => e.event);
  assert.ok(!kinds.includes("response.function_call_arguments.delta"));
  const input = events.filter((e) => e.event.startsWith("response.custom_tool_call_input"));
  assert.deepEqual(input.map((e) => [e.event, (e.data as any).delta ?? (e.data as any).input]), [
    ["response.custom_tool_call_input.delta", "*** Begin Patch\n"],
    ["response.custom_tool_call_input.done", "*** Begin Patch\n"],
  ]);
  const completed = events.at(-1)!.data as any;
  assert.equal(completed.type, "response.completed");
  assert.deepEqual(completed.response.output[0].input, "*** Begin Patch\n");
});

Deno.test("tools the client runs that are not functions: functions elsewhere, their own items here", () => {
  const body = {
    model: "m",
    tools: [
      { type: "tool_search", execution: "client" },
      { type: "local_shell" },
      { type: "shell", environment: { type: "local" } },
      { type: "apply_patch" },
      {
        type: "computer_use_preview",
        display_width: 1024,
        display_height: 768,
        environment: "browser",
      },
      // Run by OpenAI: hosted tools, which other providers do not have.
      { type: "tool_search" },
      { type: "shell", environment: { type: "container_auto" } },
    ],
    input: [
      { role: "user", content: "go" },
      {
        type: "tool_search_call",
        call_id: "s1",
        execution: "client",
        arguments: { paths: ["crm"] },
      },
      {
        type: "tool_search_output",
        call_id: "s1",
        execution: "client",
        tools: [
          { type: "function", name: "lookup", parameters: { type: "object", properties: {} } },
          { type: "apply_patch" }, // already offered: not twice
        ],
      },
      {
        type: "local_shell_call",
        id: "lsh_1",
        call_id: "l1",
        status: "completed",
        action: { type: "exec", command: ["ls"], env: {} },
      },
      { type: "local_shell_call_output", id: "l1", output: "a.txt" },
      {
        type: "shell_call",
        call_id: "h1",
        action: { commands: ["pwd"], timeout_ms: null, max_output_length: null },
      },
      {
        type: "shell_call_output",
        call_id: "h1",
        output: [{ stdout: "/", stderr: "", outcome: { type: "exit", exit_code: 0 } }],
      },
      {
        type: "apply_patch_call",
        call_id: "p1",
        status: "completed",
        operation: { type: "delete_file", path: "a.txt" },
      },
      { type: "apply_patch_call_output", call_id: "p1", status: "failed", output: "no such file" },
      { type: "computer_call", call_id: "c1", action: { type: "screenshot" } },
      {
        type: "computer_call_output",
        call_id: "c1",
        output: { type: "computer_screenshot", image_url: "data:image/png;base64,iVBO" },
      },
    ],
  };
  const request = decodeRequest(body, {});
  assert.deepEqual(request.tools.map((t) => [t.name, t.clientType]), [
    ["tool_search", "tool_search"],
    ["local_shell", "local_shell"],
    ["shell", "shell"],
    ["apply_patch", "apply_patch"],
    ["computer", "computer_use_preview"],
    ["lookup", undefined],
  ]);
  assert.deepEqual(request.tools[0].parameters.required, ["paths"], "OpenAI's default schema");
  assert.match(request.tools[4].description!, /browser screen of 1024x768/);
  assert.deepEqual(request.hostedTools.map((h) => h.field), ["tools[5]", "tools[6]"]);
  const calls = request.messages.flatMap((m) =>
    m.role === "assistant" ? m.content.filter((p) => p.type === "tool-call") : []
  ) as any[];
  assert.deepEqual(calls.map((c) => [c.id, c.name, c.input]), [
    ["s1", "tool_search", { paths: ["crm"] }],
    ["l1", "local_shell", { command: ["ls"], env: {} }],
    ["h1", "shell", { commands: ["pwd"] }],
    ["p1", "apply_patch", { type: "delete_file", path: "a.txt" }],
    ["c1", "computer", { type: "screenshot" }],
  ]);
  const results = request.messages.flatMap((m) => m.role === "tool" ? m.content : []);
  assert.deepEqual(results.map((r) => [r.id, r.name, r.isError ?? false]), [
    ["s1", "tool_search", false],
    ["l1", "local_shell", false],
    ["h1", "shell", false],
    ["p1", "apply_patch", true],
    ["c1", "computer", false],
  ]);
  assert.match((results[0].content[0] as any).text, /"lookup"/);
  assert.deepEqual(results[4].content[0], {
    type: "file",
    mediaType: "image/png",
    data: { base64: "iVBO" },
  });
  // Forcing one, or allowing it, is forcing or allowing its function.
  assert.deepEqual(
    decodeRequest({ ...body, tool_choice: { type: "apply_patch" } }, {}).toolChoice,
    { type: "tool", name: "apply_patch" },
  );
  const allowed = decodeRequest({
    ...body,
    input: [],
    tool_choice: { type: "allowed_tools", mode: "auto", tools: [{ type: "tool_search" }] },
  }, {});
  assert.deepEqual(allowed.tools.map((t) => t.name), ["tool_search"]);

  // To Claude they are functions (those OpenAI runs are refused by name); Claude's calls come
  // back as the client's own call items.
  assert.throws(() => messages.encodeRequest(request, anthropic), names("tools[5]"));
  const upstream = messages.encodeRequest(
    { ...request, hostedTools: [] },
    anthropic,
  ) as Record<string, any>;
  assert.deepEqual(upstream.tools.map((t: any) => t.name), [
    "tool_search",
    "local_shell",
    "shell",
    "apply_patch",
    "computer",
    "lookup",
  ]);
  const info: AnswerInfo = { ...INFO, ...toolForms(request.tools) };
  const answer = {
    id: "up",
    model: "claude-x",
    content: calls.map((c) => ({ ...c, id: `new_${c.id}` })),
    finish: { reason: "tool-calls" as const },
    usage: { input: 1, cacheRead: 0, cacheWrite: 0, output: 1, reasoning: 0 },
  };
  const client = encodeResponse(answer, info) as Record<string, any>;
  assert.deepEqual(client.output.map((i: any) => [i.type, i.id.split("_")[0], i.call_id]), [
    ["tool_search_call", "tsc", "new_s1"],
    ["local_shell_call", "lsh", "new_l1"],
    ["shell_call", "sh", "new_h1"],
    ["apply_patch_call", "apc", "new_p1"],
    ["computer_call", "cu", "new_c1"],
  ]);
  assert.deepEqual(client.output[0].execution, "client");
  assert.deepEqual(client.output[0].arguments, { paths: ["crm"] });
  assert.deepEqual(client.output[1].action, { type: "exec", command: ["ls"], env: {} });
  assert.deepEqual(client.output[2].action, {
    commands: ["pwd"],
    timeout_ms: null,
    max_output_length: null,
  });
  assert.deepEqual(client.output[3].operation, { type: "delete_file", path: "a.txt" });
  assert.deepEqual(client.output[4].action, { type: "screenshot" });
  // Replayed as they came, they read as the same calls.
  const again = decodeRequest({ ...body, input: client.output }, {});
  assert.deepEqual(
    (again.messages[0].content as any[]).map((c) => [c.id, c.name, c.input]),
    answer.content.map((c) => [c.id, c.name, c.input]),
  );

  // Streamed: each added in progress and done whole, with no function-call events.
  const events = sseEvents(encodeAll((w) => responsesEncoder(w, info), [
    { type: "start" },
    { type: "tool-input-start", id: "call_9", name: "tool_search" },
    { type: "tool-input-delta", id: "call_9", delta: '{"paths":' },
    { type: "tool-input-delta", id: "call_9", delta: '["crm"]}' },
    { type: "tool-input-end", id: "call_9" },
    { type: "finish", reason: "tool-calls", usage: answer.usage },
  ])) as any[];
  checkGrammar(events);
  assert.ok(!events.some((e) => e.event.startsWith("response.function_call")));
  const added = events.find((e) => e.event === "response.output_item.added")!.data.item;
  assert.deepEqual([added.type, added.status], ["tool_search_call", "in_progress"]);
  assert.deepEqual(events.at(-1)!.data.response.output[0], {
    id: added.id,
    type: "tool_search_call",
    call_id: "call_9",
    status: "completed",
    execution: "client",
    arguments: { paths: ["crm"] },
  });
});

/** An answer id of the form the gateway issues (`resp_` and 48 hex digits). */
const ISSUED: AnswerInfo = { ...INFO, id: `resp_${"ab12".repeat(12)}` };

/** A translated answer with every kind of item, as canonical content. */
const EVERY_ITEM: CanonicalEvent[] = [
  { type: "start" },
  { type: "reasoning-start", id: "r" },
  { type: "reasoning-delta", id: "r", delta: "Hm." },
  {
    type: "reasoning-end",
    id: "r",
    opaque: { provider: "anthropic", kind: "thinking-signature", value: "SIG" },
  },
  { type: "text-start", id: "t1" },
  { type: "text-delta", id: "t1", delta: "Hello " },
  { type: "text-end", id: "t1" },
  { type: "text-start", id: "empty" },
  { type: "text-end", id: "empty" },
  { type: "text-start", id: "t2" },
  { type: "text-delta", id: "t2", delta: "world." },
  { type: "text-end", id: "t2" },
  { type: "hosted-call", part: { type: "hosted-call", tool: "web_search", id: "srv_1" } },
  { type: "text-start", id: "t3" },
  { type: "text-delta", id: "t3", delta: "Found." },
  { type: "text-end", id: "t3" },
  {
    type: "tool-input-start",
    id: "call_1",
    name: "f",
    opaque: { provider: "gemini", kind: "thought-signature", value: "TS" },
  },
  { type: "tool-input-delta", id: "call_1", delta: '{"a":1}' },
  { type: "tool-input-end", id: "call_1" },
  { type: "finish", reason: "tool-calls", usage: zeroUsage() },
];

Deno.test("item ids name the answer and the place they were issued in, stream and whole alike", () => {
  assert.equal(itemId("msg", ISSUED.id, 10), `msg_${"ab12".repeat(12)}000a`);
  assert.deepEqual(issuedIn(itemId("fc", ISSUED.id, 10)), { answerId: ISSUED.id, index: 10 });
  assert.equal(issuedIn(itemId("msg", "ans_1", 0)), undefined, "another answer id: a hash");
  assert.equal(issuedIn("msg_68af2b0c9e1d"), undefined);

  // The stream writes the items the whole answer has, with the same ids.
  const events = sseEvents(encodeAll((w) => responsesEncoder(w, ISSUED), EVERY_ITEM)) as any[];
  checkGrammar(events);
  const streamed = events.at(-1)!.data.response.output;
  const collector = collect();
  EVERY_ITEM.forEach((e) => collector.push(e));
  const whole = encodeResponse(collector.result()!, ISSUED) as Record<string, any>;
  assert.deepEqual(streamed, whole.output);
  assert.deepEqual(whole.output.map((i: any) => i.type), [
    "reasoning",
    "message",
    "web_search_call",
    "message",
    "reasoning",
    "function_call",
  ]);
  assert.equal(whole.output[1].content[0].text, "Hello world.", "consecutive text: one message");
  assert.deepEqual(whole.output.map((i: any) => issuedIn(i.id)?.index), [0, 1, 2, 3, 4, 5]);
});

Deno.test("an item reference reads as the item the gateway issued, from the answer it keeps", () => {
  const collector = collect();
  EVERY_ITEM.forEach((e) => collector.push(e));
  const content = collector.result()!.content;
  const output = (encodeResponse(collector.result()!, ISSUED) as any).output;
  const kept = (id: string) => id === ISSUED.id ? structuredClone(content) : undefined;
  const referred = decodeRequest({
    model: "m",
    input: [
      { role: "user", content: "go" },
      ...output.map((item: any) => ({ type: "item_reference", id: item.id })),
    ],
  }, { kept });
  const inline = decodeRequest({
    model: "m",
    input: [{ role: "user", content: "go" }, ...output],
  }, {});
  assert.deepEqual(referred.messages, inline.messages, "the same as the items sent whole");
  const parts = referred.messages[1].content as any[];
  assert.deepEqual(parts[0].opaque, {
    provider: "anthropic",
    kind: "thinking-signature",
    value: "SIG",
  });
  assert.deepEqual(parts.at(-1).opaque, {
    provider: "gemini",
    kind: "thought-signature",
    value: "TS",
  });

  // Read in the forms the request's tools give: a free-form tool's call is a custom call.
  const custom = decodeRequest({
    model: "m",
    tools: [{ type: "custom", name: "f" }],
    input: [{ type: "item_reference", id: output[5].id }],
  }, { kept });
  assert.deepEqual(custom.messages[0].content, [
    { type: "tool-call", id: "call_1", name: "f", input: { input: '{"a":1}' }, kind: "custom" },
  ]);

  // No such item, no such answer kept, or an id of another form: a 400 at the reference.
  const beyond = itemId("msg", ISSUED.id, 6);
  const elsewhere = itemId("msg", `resp_${"cd34".repeat(12)}`, 1);
  for (const id of [beyond, elsewhere, "msg_68af2b0c9e1d", output[1].id.replace("msg_", "rs_")]) {
    assert.throws(
      () =>
        decodeRequest({
          model: "m",
          input: [{ role: "user", content: "go" }, { type: "item_reference", id }],
        }, { kept }),
      names("input[1]"),
      id,
    );
  }
  assert.throws(
    () => decodeRequest({ model: "m", input: [{ type: "item_reference", id: output[1].id }] }, {}),
    names("input[0]"),
    "nothing is kept",
  );
});

Deno.test("answers: usage arithmetic, refusals, incomplete is length over tool calls", () => {
  const usage = {
    input_tokens: 100,
    input_tokens_details: { cached_tokens: 30 },
    output_tokens: 50,
    output_tokens_details: { reasoning_tokens: 20 },
    total_tokens: 150,
  };
  const answer = decodeResponse({
    id: "resp_1",
    model: "gpt-5.4",
    status: "incomplete",
    incomplete_details: { reason: "max_output_tokens" },
    output: [
      {
        type: "reasoning",
        id: "rs_1",
        summary: [{ type: "summary_text", text: "Hm." }],
        encrypted_content: "E",
      },
      { type: "reasoning", id: "rs_2", summary: [] },
      { type: "function_call", id: "fc_1", call_id: "c1", name: "f", arguments: '{"a":1}' },
      {
        type: "web_search_call",
        id: "ws_1",
        status: "completed",
        action: { type: "search", query: "q" },
      },
    ],
    usage,
  }, "openai");
  assert.deepEqual(answer.finish, { reason: "length", raw: "max_output_tokens" });
  assert.deepEqual(answer.usage, {
    input: 100,
    cacheRead: 30,
    cacheWrite: 0,
    output: 50,
    reasoning: 20,
  });
  assert.deepEqual(answer.content.map((p) => p.type), ["reasoning", "tool-call", "hosted-call"]);
  assert.deepEqual((answer.content[0] as any).opaque, {
    provider: "openai",
    kind: "encrypted-reasoning",
    value: "E",
    itemId: "rs_1",
  });
  assert.deepEqual(answer.content[2], {
    type: "hosted-call",
    tool: "web_search",
    id: "ws_1",
    query: "q",
  });
  assert.equal(
    decodeResponse({
      status: "completed",
      output: [{ type: "function_call", call_id: "c", name: "f" }],
    }, "o")
      .finish.reason,
    "tool-calls",
  );
  assert.equal(
    decodeResponse({
      status: "completed",
      output: [{ type: "message", content: [{ type: "refusal", refusal: "No." }] }],
    }, "o").finish.reason,
    "content-filter",
  );

  // Back to a client: the same numbers in the Responses shape; every item in order.
  const client = encodeResponse(answer, INFO) as Record<string, any>;
  assert.deepEqual(client.usage, usage);
  assert.deepEqual([client.status, client.incomplete_details], [
    "incomplete",
    { reason: "max_output_tokens" },
  ]);
  assert.deepEqual(client.output.map((i: any) => i.type), [
    "reasoning",
    "function_call",
    "web_search_call",
  ]);
  assert.deepEqual(fromToken(client.output[0].encrypted_content), {
    opaque: { provider: "openai", kind: "encrypted-reasoning", value: "E", itemId: "rs_1" },
    text: "Hm.",
  });
  // Canonical input includes cache reads and writes: Responses input_tokens is that total.
  const fromClaude = encodeResponse({
    ...answer,
    finish: { reason: "content-filter" },
    usage: { input: 1200, cacheRead: 1000, cacheWrite: 150, output: 40, reasoning: 0 },
  }, INFO) as Record<string, any>;
  assert.deepEqual(fromClaude.usage, {
    input_tokens: 1200,
    input_tokens_details: { cached_tokens: 1000 },
    output_tokens: 40,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 1240,
  });
  assert.deepEqual(fromClaude.incomplete_details, { reason: "content_filter" });
});

Deno.test("the client's answer object: SDK fields, stable item ids, signatures before calls", () => {
  const gemini: Opaque = { provider: "gemini", kind: "thought-signature", value: "TS" };
  const response = {
    id: "up",
    model: "up-model",
    content: [
      {
        type: "reasoning" as const,
        text: "",
        opaque: { provider: "anthropic", kind: "redacted-thinking" as const, value: "R" },
      },
      { type: "reasoning" as const, text: "" },
      { type: "text" as const, text: "Hello " },
      { type: "text" as const, text: "world." },
      { type: "tool-call" as const, id: "call_1", name: "f", input: {}, opaque: gemini },
    ],
    finish: { reason: "tool-calls" as const },
    usage: { input: 1, cacheRead: 0, cacheWrite: 0, output: 2, reasoning: 0 },
  };
  const client = encodeResponse(response, INFO) as Record<string, any>;
  assert.equal(client.id, INFO.id);
  assert.equal(client.object, "response");
  assert.equal(client.model, INFO.model);
  assert.equal(client.status, "completed");
  assert.equal(client.incomplete_details, null);
  assert.equal(client.error, null);
  assert.ok(!("output_text" in client), "the SDKs compute output_text");
  for (
    const field of [
      "parallel_tool_calls",
      "tool_choice",
      "tools",
      "text",
      "reasoning",
      "store",
      "metadata",
    ]
  ) {
    assert.ok(field in client, field);
  }
  assert.deepEqual(client.output.map((i: any) => [i.type, i.id.split("_")[0]]), [
    ["reasoning", "rs"],
    ["message", "msg"],
    ["reasoning", "rs"],
    ["function_call", "fc"],
  ]);
  assert.deepEqual(client.output[1].content, [
    { type: "output_text", text: "Hello world.", annotations: [], logprobs: [] },
  ]);
  assert.deepEqual(client.output[2].summary, []);
  assert.equal(fromToken(client.output[2].encrypted_content)?.opaque.value, "TS");
  assert.equal(new Set(client.output.map((i: any) => i.id)).size, 4);
  assert.deepEqual(encodeResponse(response, INFO), client, "ids are derived, not random");

  // Replayed by the client, the signature goes back onto its call, and only to Gemini.
  const next = decodeRequest({
    model: "m",
    input: [{ role: "user", content: "go" }, ...client.output],
  }, {});
  const call = next.messages[1].content.find((p) => p.type === "tool-call") as any;
  assert.deepEqual(call.opaque, gemini);
});

const ev = (data: Record<string, unknown>, eol = "\n") =>
  `event: ${data.type}${eol}data: ${JSON.stringify(data)}${eol}${eol}`;

Deno.test("the recorded text stream decodes identically at every byte split", () => {
  const recorded = transcript("responses-text-stream.json").response.body_text as string;
  const events = decodeEverySplit((emit) => responsesDecoder(emit, "openai"), recorded);
  const id = "msg_0dbef2d9d14a548c00696d5e6fb1a08190941cffd38695ae38:0";
  assert.deepEqual(events, [
    {
      type: "start",
      id: "resp_0dbef2d9d14a548c00696d5e6f5080819086a0a3791c4d6b0c",
      model: "gpt-5.2-2025-12-11",
    },
    { type: "text-start", id },
    ...["2", "+", "2", " =", " ", "4"].map((delta) => ({ type: "text-delta", id, delta })),
    { type: "text-end", id },
    {
      type: "finish",
      reason: "stop",
      usage: { input: 20, cacheRead: 0, cacheWrite: 0, output: 10, reasoning: 0 },
    },
  ]);
});

Deno.test("a reasoning, parallel-call stream decodes at every byte split; arguments only in .done", () => {
  let n = 0;
  const e = (data: Record<string, unknown>) => ev({ ...data, sequence_number: n++ }, "\r\n");
  const text = [
    e({
      type: "response.created",
      response: { id: "resp_1", model: "gpt-5.4", status: "in_progress", output: [] },
    }),
    e({ type: "response.in_progress", response: { id: "resp_1" } }),
    e({
      type: "response.output_item.added",
      output_index: 0,
      item: { id: "rs_1", type: "reasoning", summary: [] },
    }),
    e({
      type: "response.reasoning_summary_part.added",
      item_id: "rs_1",
      output_index: 0,
      summary_index: 0,
    }),
    e({
      type: "response.reasoning_summary_text.delta",
      item_id: "rs_1",
      output_index: 0,
      summary_index: 0,
      delta: "First",
    }),
    e({
      type: "response.reasoning_summary_text.delta",
      item_id: "rs_1",
      output_index: 0,
      summary_index: 1,
      delta: "Second",
    }),
    e({
      type: "response.output_item.done",
      output_index: 0,
      item: { id: "rs_1", type: "reasoning", summary: [], encrypted_content: "ENC==" },
    }),
    e({
      type: "response.output_item.added",
      output_index: 1,
      item: { id: "fa", type: "function_call", call_id: "call_a", name: "f", arguments: "" },
    }),
    e({
      type: "response.output_item.added",
      output_index: 2,
      item: { id: "fb", type: "function_call", call_id: "call_b", name: "g", arguments: "" },
    }),
    e({
      type: "response.function_call_arguments.delta",
      item_id: "fa",
      output_index: 1,
      delta: '{"x":',
    }),
    e({
      type: "response.function_call_arguments.done",
      item_id: "fb",
      output_index: 2,
      arguments: '{"y":2}',
    }),
    e({
      type: "response.function_call_arguments.delta",
      item_id: "fa",
      output_index: 1,
      delta: "1}",
    }),
    e({
      type: "response.output_item.done",
      output_index: 2,
      item: { id: "fb", type: "function_call", call_id: "call_b", name: "g", arguments: '{"y":2}' },
    }),
    e({
      type: "response.output_item.done",
      output_index: 1,
      item: { id: "fa", type: "function_call", call_id: "call_a", name: "f", arguments: '{"x":1}' },
    }),
    // Arguments given only on the finished item.
    e({
      type: "response.output_item.added",
      output_index: 3,
      item: {
        id: "fc",
        type: "function_call",
        call_id: "call_c",
        name: "read",
        namespace: "mcp__files",
      },
    }),
    e({
      type: "response.output_item.done",
      output_index: 3,
      item: {
        id: "fc",
        type: "function_call",
        call_id: "call_c",
        name: "read",
        namespace: "mcp__files",
        arguments: '{"p":"é"}',
      },
    }),
    e({
      type: "response.output_item.added",
      output_index: 4,
      item: {
        id: "ct",
        type: "custom_tool_call",
        call_id: "call_d",
        name: "apply_patch",
        input: "",
      },
    }),
    e({
      type: "response.custom_tool_call_input.delta",
      item_id: "ct",
      output_index: 4,
      delta: '*** Begin "Patch"',
    }),
    e({
      type: "response.custom_tool_call_input.delta",
      item_id: "ct",
      output_index: 4,
      delta: "\n",
    }),
    e({
      type: "response.output_item.done",
      output_index: 4,
      item: {
        id: "ct",
        type: "custom_tool_call",
        call_id: "call_d",
        name: "apply_patch",
        input: '*** Begin "Patch"\n',
      },
    }),
    e({
      type: "response.output_item.added",
      output_index: 5,
      item: { id: "ws_1", type: "web_search_call", status: "in_progress" },
    }),
    e({
      type: "response.output_item.done",
      output_index: 5,
      item: {
        id: "ws_1",
        type: "web_search_call",
        status: "completed",
        action: { type: "search", query: "deno" },
      },
    }),
    ": keep-alive comment\r\n\r\n",
    e({
      type: "response.completed",
      response: {
        id: "resp_1",
        status: "completed",
        usage: {
          input_tokens: 30,
          input_tokens_details: { cached_tokens: 10 },
          output_tokens: 12,
          output_tokens_details: { reasoning_tokens: 5 },
        },
      },
    }),
    e({ type: "response.output_text.delta", item_id: "late", delta: "ignored after the end" }),
  ].join("");
  const events = decodeEverySplit((emit) => responsesDecoder(emit, "openai"), text);
  assert.deepEqual(events.slice(0, 5), [
    { type: "start", id: "resp_1", model: "gpt-5.4" },
    { type: "reasoning-start", id: "rs_1" },
    { type: "reasoning-delta", id: "rs_1", delta: "First" },
    { type: "reasoning-delta", id: "rs_1", delta: "\n\nSecond" },
    {
      type: "reasoning-end",
      id: "rs_1",
      opaque: { provider: "openai", kind: "encrypted-reasoning", value: "ENC==", itemId: "rs_1" },
    },
  ]);
  const args = (id: string) =>
    events.flatMap((x) => x.type === "tool-input-delta" && x.id === id ? [x.delta] : []).join("");
  assert.equal(args("call_a"), '{"x":1}');
  assert.equal(args("call_b"), '{"y":2}', "given only in .done, once");
  assert.equal(args("call_c"), '{"p":"é"}', "given only on the finished item");
  assert.deepEqual(JSON.parse(args("call_d")), { input: '*** Begin "Patch"\n' });
  const starts = events.filter((x) => x.type === "tool-input-start");
  assert.deepEqual(starts.map((x: any) => [x.id, x.name, x.kind]), [
    ["call_a", "f", undefined],
    ["call_b", "g", undefined],
    ["call_c", "mcp__files__read", undefined],
    ["call_d", "apply_patch", "custom"],
  ]);
  assert.equal(events.filter((x) => x.type === "tool-input-end").length, 4);
  assert.deepEqual(events.find((x) => x.type === "hosted-call"), {
    type: "hosted-call",
    part: { type: "hosted-call", tool: "web_search", id: "ws_1", query: "deno" },
  });
  assert.deepEqual(events.at(-1), {
    type: "finish",
    reason: "tool-calls",
    usage: { input: 30, cacheRead: 10, cacheWrite: 0, output: 12, reasoning: 5 },
  });
});

Deno.test("cut short: incomplete is length over the calls; failed and error events are errors", () => {
  const head = [
    ev({ type: "response.created", response: { id: "r", model: "m" } }),
    ev({
      type: "response.output_item.added",
      output_index: 0,
      item: { id: "fa", type: "function_call", call_id: "a", name: "f" },
    }),
    ev({
      type: "response.function_call_arguments.delta",
      item_id: "fa",
      output_index: 0,
      delta: '{"x"',
    }),
  ].join("");
  const incomplete = decodeEverySplit(
    (emit) => responsesDecoder(emit, "openai"),
    head + ev({
      type: "response.incomplete",
      response: {
        status: "incomplete",
        incomplete_details: { reason: "max_output_tokens" },
        usage: { input_tokens: 3, output_tokens: 9 },
      },
    }),
  );
  assert.deepEqual(incomplete.at(-1), {
    type: "finish",
    reason: "length",
    raw: "max_output_tokens",
    usage: { input: 3, cacheRead: 0, cacheWrite: 0, output: 9, reasoning: 0 },
  });
  const failed = decodeEverySplit(
    (emit) => responsesDecoder(emit, "openai"),
    head + ev({
      type: "response.failed",
      response: {
        status: "failed",
        error: { code: "server_error", message: "Boom." },
        usage: { input_tokens: 3, output_tokens: 1 },
      },
    }),
  );
  assert.deepEqual(failed.slice(-2), [
    { type: "usage", usage: { input: 3, cacheRead: 0, cacheWrite: 0, output: 1, reasoning: 0 } },
    { type: "error", message: "Boom.", code: "server_error" },
  ]);
  const error = decodeEverySplit(
    (emit) => responsesDecoder(emit, "openai"),
    head + ev({ type: "error", code: "rate_limit_exceeded", message: "Slow down.", param: null }),
  );
  assert.deepEqual(error.at(-1), {
    type: "error",
    message: "Slow down.",
    code: "rate_limit_exceeded",
  });
  const refusal = decodeEverySplit(
    (emit) => responsesDecoder(emit, "openai"),
    [
      ev({ type: "response.created", response: { id: "r" } }),
      ev({
        type: "response.output_item.added",
        output_index: 0,
        item: { id: "m", type: "message", content: [] },
      }),
      ev({
        type: "response.refusal.delta",
        item_id: "m",
        output_index: 0,
        content_index: 0,
        delta: "No.",
      }),
      ev({ type: "response.completed", response: { status: "completed" } }),
    ].join(""),
  );
  assert.deepEqual(refusal.map((x) => x.type), ["start", "text-start", "text-delta", "finish"]);
  assert.equal((refusal.at(-1) as any).reason, "content-filter");
});

/**
 * What openai-node's `ResponseStream` does with the events (`#accumulateResponse`): the snapshot
 * from `response.created`, items pushed at `output_item.added`, parts and deltas applied by
 * `output_index`; it throws where a real client would.
 */
function accumulate(events: { event: string; data: any }[]): any {
  let snapshot: any = null;
  for (const { data } of events) {
    if (!snapshot) {
      assert.equal(data.type, "response.created");
      snapshot = structuredClone(data.response);
      continue;
    }
    const output = snapshot.output[data.output_index];
    switch (data.type) {
      case "response.output_item.added":
        assert.equal(data.output_index, snapshot.output.length, "items are added in order");
        snapshot.output.push(structuredClone(data.item));
        break;
      case "response.content_part.added":
        assert.equal(output.type, "message");
        output.content.push(structuredClone(data.part));
        break;
      case "response.output_text.delta":
        assert.equal(output.content[data.content_index].type, "output_text");
        output.content[data.content_index].text += data.delta;
        break;
      case "response.function_call_arguments.delta":
        assert.equal(output.type, "function_call");
        output.arguments += data.delta;
        break;
      case "response.completed":
      case "response.incomplete":
        return { snapshot, final: data.response };
    }
  }
  return { snapshot, final: null };
}

/** The grammar every encoded stream keeps. */
function checkGrammar(events: { event: string; data: any }[]): void {
  assert.deepEqual(events.map((e) => e.data.sequence_number), events.map((_, i) => i));
  assert.ok(events.every((e) => e.event === e.data.type));
  assert.deepEqual(events.slice(0, 2).map((e) => e.event), [
    "response.created",
    "response.in_progress",
  ]);
  assert.equal(events[0].data.response.status, "in_progress");
  assert.deepEqual(events[0].data.response.output, []);
  const added = events.filter((e) => e.event === "response.output_item.added");
  const done = events.filter((e) => e.event === "response.output_item.done");
  assert.deepEqual(added.map((e) => e.data.output_index), done.map((e) => e.data.output_index));
  // One item at a time: each item's events come together, in output order.
  const order = events.flatMap((e) =>
    typeof e.data.output_index === "number" ? [e.data.output_index] : []
  );
  assert.deepEqual(order, [...order].sort((a, b) => a - b));
  for (const e of events) {
    if (e.data.item_id !== undefined) {
      assert.equal(
        e.data.item_id,
        added.find((a) => a.data.output_index === e.data.output_index)!.data.item.id,
      );
    }
  }
  const { snapshot, final } = accumulate(events);
  assert.ok(final, "the stream ends with the full response");
  assert.deepEqual(final.output, done.map((e) => e.data.item), "completed carries every item");
  // The deltas add up to the finished items.
  assert.equal(snapshot.output.length, final.output.length);
  final.output.forEach((item: any, i: number) => {
    const got = snapshot.output[i];
    assert.equal(got.id, item.id);
    assert.equal(got.type, item.type);
    if (item.type === "message") assert.deepEqual(got.content, item.content);
    if (item.type === "function_call") assert.equal(got.arguments, item.arguments);
  });
  assert.ok(final.usage);
}

Deno.test("the encoder writes the exact grammar: numbered events, paired added/done, every item in completed", () => {
  const events = sseEvents(encodeAll((w) => responsesEncoder(w, INFO), PARALLEL)) as any[];
  checkGrammar(events);
  const completed = events.at(-1)!.data;
  assert.equal(completed.type, "response.completed");
  assert.deepEqual(
    completed.response.output.map((i: any) => [i.type, i.arguments ?? i.content?.[0].text]),
    [
      ["message", "Checking."],
      ["function_call", '{"city":"Paris"}'],
      ["function_call", '{"zone":"UTC"}'],
    ],
  );
  assert.deepEqual(completed.response.usage, {
    input_tokens: 100,
    input_tokens_details: { cached_tokens: 40 },
    output_tokens: 30,
    output_tokens_details: { reasoning_tokens: 10 },
    total_tokens: 130,
  });
  assert.equal(completed.response.id, INFO.id);
  assert.ok(events.every((e) => !e.data.response || e.data.response.id === INFO.id));

  // Length over tool calls: response.incomplete with its reason.
  const length: CanonicalEvent[] = [...PARALLEL.slice(0, -1), { type: "finish", reason: "length" }];
  const cut = sseEvents(encodeAll((w) => responsesEncoder(w, INFO), length)) as any[];
  checkGrammar(cut);
  assert.equal(cut.at(-1)!.event, "response.incomplete");
  assert.deepEqual(cut.at(-1)!.data.response.incomplete_details, { reason: "max_output_tokens" });
});

Deno.test("reasoning, signatures, free-form and namespaced calls, search: each item in its grammar", () => {
  const signature: Opaque = { provider: "gemini", kind: "thought-signature", value: "TS" };
  const thinking: Opaque = { provider: "anthropic", kind: "thinking-signature", value: "SIG" };
  const stream: CanonicalEvent[] = [
    { type: "start", id: "up", model: "m", usage: { input: 7 } },
    { type: "reasoning-start", id: "r0" },
    { type: "reasoning-end", id: "r0" }, // nothing to show or replay: no item
    { type: "reasoning-start", id: "r1" },
    { type: "reasoning-delta", id: "r1", delta: "Think" },
    { type: "reasoning-delta", id: "r1", delta: "ing." },
    { type: "reasoning-end", id: "r1", opaque: thinking },
    { type: "reasoning-start", id: "r2" },
    { type: "reasoning-end", id: "r2", opaque: thinking },
    { type: "text-start", id: "t0" },
    { type: "text-end", id: "t0" }, // an empty text is never an item
    { type: "tool-input-start", id: "call_1", name: "apply_patch", opaque: signature },
    { type: "tool-input-start", id: "call_2", name: "mcp__files__read" },
    { type: "tool-input-delta", id: "call_2", delta: '{"path":"a"}' },
    { type: "tool-input-delta", id: "call_1", delta: '{"input":"*** Begin' },
    { type: "tool-input-delta", id: "call_1", delta: ' Patch"}' },
    { type: "tool-input-end", id: "call_2" },
    { type: "tool-input-end", id: "call_1" },
    { type: "tool-input-start", id: "call_3", name: "f" },
    { type: "tool-input-end", id: "call_3" },
    {
      type: "hosted-call",
      part: { type: "hosted-call", tool: "web_search", id: "srvtoolu_1", query: "q" },
    },
    { type: "usage", usage: { output: 9 } },
    { type: "finish", reason: "tool-calls" },
  ];
  const info: AnswerInfo = {
    ...INFO,
    customTools: new Set(["apply_patch"]),
    namespaced: new Map([["mcp__files__read", { namespace: "mcp__files", name: "read" }]]),
  };
  const events = sseEvents(encodeAll((w) => responsesEncoder(w, info), stream)) as any[];
  checkGrammar(events);
  const output = events.at(-1)!.data.response.output;
  assert.deepEqual(output.map((i: any) => i.type), [
    "reasoning",
    "reasoning",
    "reasoning",
    "custom_tool_call",
    "function_call",
    "function_call",
    "web_search_call",
  ]);
  assert.deepEqual(output[0].summary, [{ type: "summary_text", text: "Thinking." }]);
  assert.deepEqual(fromToken(output[0].encrypted_content), { opaque: thinking, text: "Thinking." });
  assert.deepEqual([output[1].summary, fromToken(output[1].encrypted_content)?.opaque], [
    [],
    thinking,
  ]);
  assert.deepEqual([output[2].summary, fromToken(output[2].encrypted_content)?.opaque], [
    [],
    signature,
  ]);
  assert.deepEqual([output[3].name, output[3].call_id, output[3].input], [
    "apply_patch",
    "call_1",
    "*** Begin Patch",
  ]);
  assert.deepEqual([output[4].namespace, output[4].name, output[4].arguments], [
    "mcp__files",
    "read",
    '{"path":"a"}',
  ]);
  assert.equal(output[5].arguments, "{}");
  // Under the gateway's id, as every item of the answer (the provider's is not the client's).
  assert.deepEqual(output[6], {
    id: output[6].id,
    type: "web_search_call",
    status: "completed",
    action: { type: "search", query: "q" },
  });
  assert.match(output[6].id, /^ws_/);
  assert.deepEqual(events.at(-1)!.data.response.usage.input_tokens, 7);
  assert.deepEqual(events.at(-1)!.data.response.usage.output_tokens, 9);

  const kinds = events.map((e) => e.event);
  // The reasoning summary: part added, deltas, text done, part done.
  const first = events.filter((e) => e.data.output_index === 0).map((e) => e.event);
  assert.deepEqual(first, [
    "response.output_item.added",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.reasoning_summary_part.done",
    "response.output_item.done",
  ]);
  // An empty reasoning item with state has no summary part.
  assert.deepEqual(events.filter((e) => e.data.output_index === 1).map((e) => e.event), [
    "response.output_item.added",
    "response.output_item.done",
  ]);
  // Free-form input comes whole, never as function arguments.
  assert.deepEqual(events.filter((e) => e.data.output_index === 3).map((e) => e.event), [
    "response.output_item.added",
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
    "response.output_item.done",
  ]);
  // A call with no streamed arguments still gets one delta with the whole string.
  const empty = events.filter((e) => e.data.output_index === 5);
  assert.deepEqual(empty.map((e) => e.event), [
    "response.output_item.added",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.output_item.done",
  ]);
  assert.equal(empty[1].data.delta, "{}");
  assert.equal(kinds.filter((k) => k === "response.completed").length, 1);
});

Deno.test("a failure ends the stream with the error event, and nothing after it", () => {
  let out = "";
  const encoder = responsesEncoder((t) => out += t, INFO);
  for (const event of PARALLEL.slice(0, 5)) encoder.push(event);
  encoder.fail("cut");
  encoder.push({ type: "finish", reason: "stop" });
  encoder.fail("again");
  const events = sseEvents(out) as any[];
  assert.deepEqual(events.at(-1), {
    event: "error",
    data: {
      type: "error",
      code: "upstream_error",
      message: "cut",
      param: null,
      sequence_number: events.length - 1,
    },
  });
  assert.equal(events.filter((e) => e.event === "error").length, 1);
  assert.ok(!events.some((e) => e.event === "response.completed"));

  const errored = sseEvents(
    encodeAll((w) => responsesEncoder(w, INFO), [
      { type: "start" },
      { type: "error", message: "Overloaded.", code: "overloaded", status: 529 },
      { type: "finish", reason: "stop" },
    ]),
  ) as any[];
  assert.deepEqual(errored.map((e) => e.event), [
    "response.created",
    "response.in_progress",
    "error",
  ]);
  assert.deepEqual([errored[2].data.code, errored[2].data.message], ["overloaded", "Overloaded."]);
});

Deno.test("the encoder's delta events, written as text, are what JSON.stringify writes of their fields", () => {
  const tricky = [
    'say "hi"',
    "a\\b",
    "line\nbreak\r\n",
    "tab\t\u0001",
    "\u2028\u2029",
    "😀 é",
    "\ud800",
  ];
  const events: CanonicalEvent[] = [
    { type: "start", id: "up_1", model: "m" },
    { type: "reasoning-start", id: "r" },
    ...tricky.map((delta) => ({ type: "reasoning-delta", id: "r", delta }) as CanonicalEvent),
    { type: "reasoning-end", id: "r" },
    { type: "text-start", id: "t" },
    ...tricky.map((delta) => ({ type: "text-delta", id: "t", delta }) as CanonicalEvent),
    { type: "text-end", id: "t" },
    ...PARALLEL.slice(4),
  ];
  const out = encodeAll((w) => responsesEncoder(w, INFO), events);
  const order: Record<string, string[]> = {
    "response.output_text.delta": ["content_index", "delta", "logprobs"],
    "response.reasoning_summary_text.delta": ["summary_index", "delta"],
    "response.function_call_arguments.delta": ["delta"],
  };
  const seen = new Set<string>();
  const deltas: Record<string, string[]> = {};
  for (const raw of out.split("\n\n").filter(Boolean)) {
    const [eventLine, dataLine, ...rest] = raw.split("\n");
    assert.deepEqual(rest, []);
    const type = eventLine.slice("event: ".length);
    const data = dataLine.slice("data: ".length);
    const value = JSON.parse(data);
    // Compact, and the fields in the order the object was built in.
    assert.equal(JSON.stringify(value), data);
    assert.equal(value.type, type);
    if (!order[type]) continue;
    seen.add(type);
    assert.deepEqual(Object.keys(value), [
      "type",
      "item_id",
      "output_index",
      ...order[type],
      "sequence_number",
    ]);
    (deltas[type] ??= []).push(value.delta);
  }
  assert.deepEqual([...seen].sort(), Object.keys(order).sort());
  assert.deepEqual(deltas["response.output_text.delta"], tricky);
  assert.deepEqual(deltas["response.reasoning_summary_text.delta"], tricky);
});
