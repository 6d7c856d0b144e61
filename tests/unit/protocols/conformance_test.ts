/**
 * One conformance suite run over the four wire protocols, each used only through its
 * `WireProtocol` record (as Hono runs `common.case.test.ts` over every router and
 * `store_contract_test.ts` runs over both stores). Pure: no server, no network. For each
 * protocol:
 * - requests and answers survive encode then decode through the canonical form (synthetic ones,
 *   and the recorded exchanges of `fixtures/transcripts/`), and what it encodes its own `accept`
 *   takes;
 * - its stream encoder writes the protocol's grammar (the order of its events and how a stream
 *   ends, checked by `GRAMMAR`), and its own decoder reads the stream back to the same answer, at
 *   every byte split;
 * - the usage its bill reads (`prepare().usageFromJson`, `meter()`) from its own answers and
 *   streams is the usage they carry, also when the gateway rewrites it (`usageView`);
 * - its errors: a failed stream, the tail for a stream the upstream cut (`errorTail`), read back as
 *   errors by its own decoder; nothing written after the end; an error envelope is no answer.
 * What a protocol's usage does not carry is declared in `CARRIED`, not skipped silently.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { PROTOCOLS } from "../../../src/protocols/index.ts";
import type { CallInput, PreparedCall, WireProtocol } from "../../../src/protocols/wire.ts";
import { buildConfig } from "../../../src/config/load.ts";
import type { ResolvedModel } from "../../../src/catalog/catalog.ts";
import { errorBody } from "../../../src/http/errors.ts";
import { JsonArrayScanner } from "../../../src/http/json_array.ts";
import { type SseEvent, SseScanner } from "../../../src/http/sse.ts";
import { tokenUsageOf } from "../../../src/billing/usage.ts";
import type { AnswerInfo, Target } from "../../../src/translate/codec.ts";
import { collect } from "../../../src/translate/collect.ts";
import type {
  CanonicalEvent,
  CanonicalRequest,
  CanonicalResponse,
  FinishReason,
  Json,
  ProtocolId,
  TokenUsage,
} from "../../../src/translate/ir.ts";
import { toToken } from "../../../src/translate/opaque.ts";
import { decodeEverySplit, encodeAll, PARALLEL } from "../../helpers/codec.ts";

type Framing = "sse" | "json-array";

// ---------------------------------------------------------------------------------------------
// What each protocol declares (the only per-protocol knowledge the suite has)

/** The usage fields a protocol's answers carry (the others read back as 0). */
const CARRIED: Record<ProtocolId, (keyof TokenUsage)[]> = {
  responses: ["input", "cacheRead", "output", "reasoning"],
  messages: ["input", "cacheRead", "cacheWrite", "output"],
  generate: ["input", "cacheRead", "output", "reasoning"],
  chat: ["input", "cacheRead", "cacheWrite", "output", "reasoning"],
};

/** The framings a protocol's streams come in (Gemini's: SSE, or one JSON array). */
const FRAMINGS: Record<ProtocolId, Framing[]> = {
  responses: ["sse"],
  messages: ["sse"],
  generate: ["sse", "json-array"],
  chat: ["sse"],
};

/** A model of the default catalog whose provider speaks the protocol. */
const MODELS: Record<ProtocolId, string> = {
  responses: "gpt-5.4",
  messages: "claude-sonnet-4-5",
  generate: "gemini-2.5-flash",
  chat: "gpt-5.4",
};

/** The recorded exchanges of each protocol: whole answers, and streams. */
const RECORDED: Record<ProtocolId, { answers: string[]; streams: string[] }> = {
  responses: { answers: [], streams: ["openai/responses-text-stream.json"] },
  messages: {
    answers: ["anthropic/messages-tool-use.json"],
    streams: ["anthropic/messages-text-stream.json"],
  },
  generate: {
    answers: ["gemini/generate-text.json", "gemini/generate-function-call.json"],
    streams: ["gemini/stream-text.json"],
  },
  chat: {
    answers: ["openai/chat-text.json"],
    streams: ["openai/chat-tool-call-stream-usage.json"],
  },
};

// ---------------------------------------------------------------------------------------------
// Fixtures

const config = buildConfig(
  {},
  (name) => ({ OPENAI_API_KEY: "o", ANTHROPIC_API_KEY: "a", GEMINI_API_KEY: "g" })[name],
);

function modelFor(protocol: ProtocolId): ResolvedModel {
  const resolved = config.catalog.resolve(MODELS[protocol]);
  assert.ok(resolved.ok, `${MODELS[protocol]} resolves`);
  return resolved.model;
}

function targetFor(protocol: ProtocolId): Target {
  const model = modelFor(protocol);
  return { model: model.upstreamId, provider: model.provider.name, family: model.provider.type };
}

/** What a protocol reads of a request besides its body: a route of its own, no stored objects. */
function inputFor(protocol: ProtocolId, stream: boolean, framing: Framing = "sse"): CallInput {
  const model = MODELS[protocol];
  const path = {
    responses: "/v1/responses",
    messages: "/v1/messages",
    chat: "/v1/chat/completions",
    generate: `/v1beta/models/${model}:${stream ? "streamGenerateContent" : "generateContent"}${
      stream && framing === "sse" ? "?alt=sse" : ""
    }`,
  }[protocol];
  return {
    url: new URL(path, "http://gateway.test"),
    headers: new Headers(),
    params: { model },
    own: (id) => {
      throw new Error(`no stored object: ${String(id)}`);
    },
    owned: () => undefined,
  };
}

/** The call a pass-through of `body` to the protocol's own upstream is prepared as. */
function prepared(
  protocol: WireProtocol,
  body: Json,
  stream: boolean,
  framing: Framing = "sse",
): PreparedCall {
  return protocol.prepare(
    inputFor(protocol.id, stream, framing),
    { text: JSON.stringify(body), value: body },
    modelFor(protocol.id),
    { stream, passthrough: true, jsonArray: framing === "json-array", usageChunk: true },
  );
}

const INFO: AnswerInfo = {
  id: "ans_conformance",
  model: "client-model",
  created: 1_700_000_000,
  usageChunk: true,
  token: toToken,
};

const USAGE: TokenUsage = { input: 100, cacheRead: 40, cacheWrite: 10, output: 30, reasoning: 10 };
/** `USAGE` as the bill reads it (it does not tell reasoning apart). */
const USAGE_NO_R: TokenUsage = { ...USAGE, reasoning: 0 };

const REQUEST: CanonicalRequest = {
  system: [{ type: "text", text: "You are terse." }],
  messages: [
    { role: "user", content: [{ type: "text", text: "What is the weather in Paris?" }] },
    {
      role: "assistant",
      content: [
        { type: "text", text: "Let me look." },
        { type: "tool-call", id: "call_1", name: "get_weather", input: { city: "Paris" } },
      ],
    },
    {
      role: "tool",
      content: [{
        type: "tool-result",
        id: "call_1",
        name: "get_weather",
        content: [{ type: "text", text: "18°C, clear" }],
      }],
    },
    { role: "user", content: [{ type: "text", text: "And tomorrow?" }] },
  ],
  tools: [{
    name: "get_weather",
    description: "The weather in a city.",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  }],
  hostedTools: [],
  toolChoice: { type: "auto" },
  maxOutputTokens: 256,
  temperature: 0.5,
  topP: 0.9,
  stream: false,
  fields: { messages: "messages", tools: "tools" },
};

const RESPONSE: CanonicalResponse = {
  id: "up_1",
  model: "upstream-model",
  content: [
    { type: "reasoning", text: "The user wants the weather." },
    { type: "text", text: "Checking the weather." },
    { type: "tool-call", id: "call_a", name: "get_weather", input: { city: "Paris" } },
  ],
  finish: { reason: "tool-calls" },
  usage: USAGE,
};

/** A recorded exchange. */
function recorded(path: string): any {
  return JSON.parse(
    Deno.readTextFileSync(new URL(`../../fixtures/transcripts/${path}`, import.meta.url)),
  );
}

// ---------------------------------------------------------------------------------------------
// Views that leave out what a protocol may legitimately change

/** Call ids as the order they first appear in: a result must still answer its own call. */
function idNames(): (id: string) => string {
  const names = new Map<string, string>();
  return (id) => {
    if (!names.has(id)) names.set(id, `call#${names.size + 1}`);
    return names.get(id)!;
  };
}

/** What a request asks for; `parameters: false` leaves out the tools' schemas. */
function requestView(request: CanonicalRequest, { parameters = true } = {}) {
  const id = idNames();
  return {
    system: request.system.map((p) => p.text).join("\n\n"),
    messages: request.messages.map((m) => ({
      role: m.role,
      content: m.content.map((p: any) => {
        switch (p.type) {
          case "text":
            return { text: p.text };
          case "tool-call":
            return { call: id(p.id), name: p.name, input: p.input };
          case "tool-result":
            return {
              result: id(p.id),
              content: p.content.map((c: any) => c.text),
              error: !!p.isError,
            };
          default:
            return { [p.type]: p.text ?? p.mediaType };
        }
      }),
    })),
    tools: request.tools.map((t) => ({
      name: t.name,
      // An empty description is none.
      description: t.description || undefined,
      ...(parameters ? { parameters: t.parameters } : {}),
    })),
    toolChoice: request.toolChoice,
    maxOutputTokens: request.maxOutputTokens,
    temperature: request.temperature,
    topP: request.topP,
  };
}

function usageView(protocol: ProtocolId, usage: TokenUsage): Partial<TokenUsage> {
  return Object.fromEntries(CARRIED[protocol].map((key) => [key, usage[key]]));
}

/**
 * What an answer says; `parallel`: its calls in any order (a protocol whose calls come whole writes
 * parallel calls in the order their arguments end).
 */
function answerView(protocol: ProtocolId, response: CanonicalResponse, parallel = false) {
  const content = response.content.map((p) =>
    p.type === "tool-call"
      ? { call: p.name, input: p.input }
      : p.type === "hosted-call"
      ? { hosted: p.query }
      : { [p.type]: p.text }
  );
  const calls = content.filter((p) => "call" in p);
  if (parallel) calls.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  return {
    content: [...content.filter((p) => !("call" in p)), ...calls],
    finish: response.finish.reason,
    usage: usageView(protocol, response.usage),
  };
}

/** The canonical events of a whole answer, as a translated stream gives them. */
function eventsOf(response: CanonicalResponse): CanonicalEvent[] {
  const events: CanonicalEvent[] = [{ type: "start", id: response.id, model: response.model }];
  response.content.forEach((part, i) => {
    const id = `b${i}`;
    if (part.type === "text") {
      events.push({ type: "text-start", id }, { type: "text-delta", id, delta: part.text }, {
        type: "text-end",
        id,
      });
    } else if (part.type === "reasoning") {
      events.push(
        { type: "reasoning-start", id },
        { type: "reasoning-delta", id, delta: part.text },
        { type: "reasoning-end", id },
      );
    } else if (part.type === "tool-call") {
      events.push(
        { type: "tool-input-start", id: part.id, name: part.name },
        { type: "tool-input-delta", id: part.id, delta: JSON.stringify(part.input) },
        { type: "tool-input-end", id: part.id },
      );
    }
  });
  events.push({ type: "finish", reason: response.finish.reason, usage: response.usage });
  return events;
}

/** What an encoder writes for `events`, with the framing it is given. */
function encodeStream(
  protocol: WireProtocol,
  events: CanonicalEvent[],
  framing: Framing,
  failWith?: string,
): string {
  const info = { ...INFO, jsonArray: framing === "json-array" };
  return encodeAll((write) => protocol.streamEncoder(write, info), events, failWith);
}

/** A stream's units (SSE events, or JSON array elements as unnamed events). */
function unitsOf(text: string, framing: Framing): SseEvent[] {
  const units: SseEvent[] = [];
  const scanner = framing === "sse"
    ? new SseScanner((e) => units.push(e))
    : new JsonArrayScanner((e) => units.push(e));
  scanner.push(new TextEncoder().encode(text));
  scanner.end();
  return units;
}

/** The stream's units as (name, parsed data) pairs; `[DONE]` stays a string. */
function parsedUnits(text: string, framing: Framing): { event: string; data: any }[] {
  return unitsOf(text, framing).map((e) => {
    const data = e.data();
    return { event: e.event, data: data === "[DONE]" ? data : JSON.parse(data) };
  });
}

/** What the protocol's own decoder reads of `text`, at every byte split. */
function decodeStream(protocol: WireProtocol, text: string, framing: Framing): CanonicalEvent[] {
  return decodeEverySplit((emit) => protocol.streamDecoder(emit, "upstream"), text, framing);
}

function collected(events: CanonicalEvent[]): CanonicalResponse {
  const collector = collect();
  for (const event of events) collector.push(event);
  const result = collector.result();
  assert.ok(result, "the stream finished");
  return result;
}

/** What a meter reads of a stream, as the canonical usage. */
function metered(call: PreparedCall, text: string, framing: Framing) {
  const meter = call.meter();
  for (const unit of unitsOf(text, framing)) meter.onEvent(unit);
  const usage = meter.usage();
  assert.ok(usage, "the meter read a usage");
  return { meter, usage: tokenUsageOf(usage) };
}

/** The UTF-8 bytes of an answer's output: its text, reasoning and call arguments. */
function outputBytes(response: CanonicalResponse): number {
  const text = response.content.map((p) =>
    p.type === "tool-call" ? JSON.stringify(p.input) : p.type === "hosted-call" ? "" : p.text
  ).join("");
  return new TextEncoder().encode(text).length;
}

// ---------------------------------------------------------------------------------------------
// Each protocol's stream grammar

const GRAMMAR: Record<ProtocolId, (units: { event: string; data: any }[], text: string) => void> = {
  responses(units) {
    units.forEach((u, i) => {
      assert.equal(u.data.type, u.event, "each event names its type");
      assert.equal(u.data.sequence_number, i, "events are numbered in order");
    });
    assert.deepEqual(units.slice(0, 2).map((u) => u.event), [
      "response.created",
      "response.in_progress",
    ]);
    const terminal = units.findIndex((u) =>
      ["response.completed", "response.incomplete", "response.failed"].includes(u.event)
    );
    assert.equal(terminal, units.length - 1, "the terminal event is the last");
    // One item at a time: everything of an item between its `added` and its `done`.
    let open: number | null = null;
    const done: any[] = [];
    for (const u of units.slice(2, -1)) {
      if (u.event === "response.output_item.added") {
        assert.equal(open, null, "an item is added while another is open");
        assert.equal(u.data.output_index, done.length, "items are added in place");
        open = u.data.output_index;
      } else if (u.event === "response.output_item.done") {
        assert.equal(u.data.output_index, open);
        done.push(u.data.item);
        open = null;
      } else assert.equal(u.data.output_index, open, `${u.event} belongs to the open item`);
    }
    assert.equal(open, null, "every item is done");
    assert.deepEqual(units.at(-1)!.data.response.output, done, "the answer holds every item");
  },
  messages(units) {
    for (const u of units) assert.equal(u.data.type, u.event, "each event names its type");
    assert.equal(units[0].event, "message_start");
    assert.deepEqual(units.slice(-2).map((u) => u.event), ["message_delta", "message_stop"]);
    // Blocks one at a time, numbered from 0: start, deltas, stop.
    let open: number | null = null;
    let next = 0;
    for (const u of units.slice(1, -2)) {
      if (u.event === "content_block_start") {
        assert.equal(open, null, "a block starts while another is open");
        assert.equal(u.data.index, next++);
        open = u.data.index;
      } else if (u.event === "content_block_delta") assert.equal(u.data.index, open);
      else if (u.event === "content_block_stop") {
        assert.equal(u.data.index, open);
        open = null;
      } else assert.fail(`unexpected ${u.event} between the start and the end`);
    }
    assert.equal(open, null, "every block is stopped");
  },
  chat(units) {
    assert.ok(units.every((u) => u.event === ""), "chunks are unnamed");
    assert.equal(units.at(-1)!.data, "[DONE]", "[DONE] ends the stream");
    const chunks = units.slice(0, -1).map((u) => u.data);
    for (const chunk of chunks) {
      assert.equal(chunk.object, "chat.completion.chunk");
      assert.equal(chunk.id, INFO.id);
    }
    assert.equal(chunks[0].choices[0].delta.role, "assistant", "the role chunk is first");
    const finishing = chunks.findIndex((c) => c.choices[0]?.finish_reason);
    assert.ok(finishing > 0, "a chunk gives the finish reason");
    const after = chunks.slice(finishing + 1);
    assert.deepEqual(after.map((c) => c.choices), INFO.usageChunk ? [[]] : []);
    if (INFO.usageChunk) assert.ok(after[0].usage, "the usage chunk follows the finish");
  },
  generate(units, text) {
    assert.ok(units.every((u) => u.event === ""), "fragments are unnamed");
    for (const u of units) {
      assert.equal(u.data.responseId, INFO.id);
      assert.equal(u.data.candidates[0].content.role, "model");
    }
    const finishing = units.map((u) => !!u.data.candidates[0].finishReason);
    assert.deepEqual(finishing, units.map((_, i) => i === units.length - 1), "last finishes");
    assert.ok(units.at(-1)!.data.usageMetadata, "the last fragment carries the usage");
    if (text.startsWith("[")) {
      assert.deepEqual(JSON.parse(text), units.map((u) => u.data), "one JSON array");
    }
  },
};

// ---------------------------------------------------------------------------------------------
// The suite

for (const protocol of Object.values(PROTOCOLS)) {
  const id = protocol.id;
  const name = (what: string) => `[${id}] ${what}`;

  Deno.test(name("a request survives encode then decode, and its own accept takes it"), () => {
    const target = targetFor(id);
    const body = protocol.encodeRequest(REQUEST, target);
    const back = protocol.decodeRequest(body, {});
    assert.deepEqual(requestView(back), requestView(REQUEST));
    const accepted = protocol.accept(inputFor(id, false), {
      text: JSON.stringify(body),
      value: body,
    });
    assert.equal(accepted.stream, false);
    assert.equal(accepted.model, id === "generate" ? MODELS[id] : target.model);
    // Streamed: the body says so, or (Gemini) the route does.
    const streamed = protocol.encodeRequest({ ...REQUEST, stream: true }, target);
    assert.equal(protocol.decodeRequest(streamed, { stream: true }).stream, true);
    const input = inputFor(id, true);
    assert.equal(protocol.accept(input, { text: "", value: streamed }).stream, true);
  });

  Deno.test(name("recorded requests survive decode, encode and decode again"), () => {
    const paths = [...RECORDED[id].answers, ...RECORDED[id].streams];
    assert.ok(paths.length, "the protocol has recorded exchanges");
    for (const path of paths) {
      const body = recorded(path).request.body;
      const stream = body.stream === true || path.includes("stream");
      protocol.accept(inputFor(id, stream), { text: JSON.stringify(body), value: body });
      const first = protocol.decodeRequest(body, { stream });
      const roundTrip = (request: CanonicalRequest) =>
        protocol.decodeRequest(protocol.encodeRequest(request, targetFor(id)), { stream });
      const again = roundTrip(first);
      // Schemas may be cleaned to what the protocol's upstreams take (Gemini's subset) once…
      const shape = { parameters: false };
      assert.deepEqual(requestView(again, shape), requestView(first, shape), path);
      // …and are stable from then on.
      assert.deepEqual(requestView(roundTrip(again)), requestView(again), path);
    }
  });

  Deno.test(name("an answer survives encode then decode, for every finish reason"), () => {
    const answer = protocol.encodeResponse(RESPONSE, INFO);
    assert.ok(protocol.answers.usage.answer?.(answer) ?? true, "its own answer has its shape");
    const back = protocol.decodeResponse(answer, "upstream");
    assert.deepEqual(answerView(id, back), answerView(id, RESPONSE));
    const reasons: FinishReason[] = ["stop", "length", "content-filter"];
    for (const reason of reasons) {
      const plain: CanonicalResponse = {
        ...RESPONSE,
        content: [{ type: "text", text: "Fine." }],
        finish: { reason },
      };
      const decoded = protocol.decodeResponse(protocol.encodeResponse(plain, INFO), "upstream");
      assert.equal(decoded.finish.reason, reason);
    }
  });

  Deno.test(name("recorded answers survive decode, encode and decode again"), () => {
    for (const path of RECORDED[id].answers) {
      const body = JSON.parse(recorded(path).response.body_text);
      assert.ok(protocol.answers.usage.answer?.(body) ?? true, `${path} has the answer's shape`);
      const first = protocol.decodeResponse(body, "upstream");
      assert.ok(first.content.length, `${path} has content`);
      const again = protocol.decodeResponse(protocol.encodeResponse(first, INFO), "upstream");
      assert.deepEqual(answerView(id, again), answerView(id, first), path);
    }
  });

  Deno.test(name("the bill reads the usage of its own answers, and of a rewritten one"), () => {
    const call = prepared(protocol, protocol.encodeRequest(REQUEST, targetFor(id)), false);
    const read = (answer: Json) => {
      const usage = call.usageFromJson(answer);
      assert.ok(usage, "a usage is read");
      return usageView(id, { ...tokenUsageOf(usage), reasoning: 0 });
    };
    const carried = (usage: TokenUsage) => usageView(id, { ...usage, reasoning: 0 });
    const answer = protocol.encodeResponse(RESPONSE, INFO);
    assert.deepEqual(read(answer), carried(RESPONSE.usage));
    // The gateway's own figure (an estimate, a charge at the hold) in place of the upstream's.
    const decided = { input: 7, cacheRead: 2, cacheWrite: 1, output: 5, reasoning: 0 };
    assert.deepEqual(read(protocol.answers.usage.json(answer, decided)), carried(decided));
    // A recorded answer: the bill's reader and the codec's agree.
    for (const path of RECORDED[id].answers) {
      const body = JSON.parse(recorded(path).response.body_text);
      assert.deepEqual(read(body), carried(protocol.decodeResponse(body, "up").usage), path);
    }
  });

  for (const framing of FRAMINGS[id]) {
    const label = (what: string) => name(`${framing}: ${what}`);

    Deno.test(label("streams keep the grammar and decode back to the answer"), () => {
      for (const events of [eventsOf(RESPONSE), PARALLEL]) {
        const text = encodeStream(protocol, events, framing);
        GRAMMAR[id](parsedUnits(text, framing), text);
        const back = collected(decodeStream(protocol, text, framing));
        const parallel = events === PARALLEL;
        assert.deepEqual(
          answerView(id, back, parallel),
          answerView(id, collected(events), parallel),
        );
      }
    });

    Deno.test(label("the meter reads a stream's usage, its end and its output"), () => {
      const body = protocol.encodeRequest({ ...REQUEST, stream: true }, targetFor(id));
      const call = prepared(protocol, body, true, framing);
      assert.equal(call.framing, framing);
      const text = encodeStream(protocol, eventsOf(RESPONSE), framing);
      const { meter, usage } = metered(call, text, framing);
      assert.deepEqual(usageView(id, { ...usage, reasoning: 0 }), usageView(id, USAGE_NO_R));
      assert.ok(meter.complete(), "the final usage arrived");
      assert.ok(meter.finished(), "the end of the stream passed");
      assert.equal(meter.outputBytes(), outputBytes(RESPONSE));
      // The gateway's own figure, written in the event that carries the final usage.
      const view = protocol.answers.usage.event?.();
      if (!view) return;
      const decided = { input: 7, cacheRead: 2, cacheWrite: 1, output: 5, reasoning: 0 };
      const units = unitsOf(text, framing);
      const at = units.findIndex((e) => view.carries(e));
      assert.ok(at >= 0, "an event carries the final usage");
      const rewritten = units.map((e, i) => i === at ? view.write(e, decided) : e);
      const meter2 = call.meter();
      for (const e of rewritten) {
        if (typeof e !== "string") meter2.onEvent(e);
        else for (const unit of unitsOf(e, "sse")) meter2.onEvent(unit);
      }
      assert.deepEqual(
        usageView(id, { ...tokenUsageOf(meter2.usage()!), reasoning: 0 }),
        usageView(id, decided),
      );
    });

    Deno.test(label("a recorded stream decodes, re-encodes and decodes to the same answer"), () => {
      for (const path of RECORDED[id].streams) {
        const exchange = recorded(path);
        const recordedFraming: Framing = exchange.response.content_type.startsWith(
            "text/event-stream",
          )
          ? "sse"
          : "json-array";
        const first = collected(
          decodeStream(protocol, exchange.response.body_text, recordedFraming),
        );
        const text = encodeStream(protocol, eventsOf(first), framing);
        GRAMMAR[id](parsedUnits(text, framing), text);
        const again = collected(decodeStream(protocol, text, framing));
        assert.deepEqual(answerView(id, again), answerView(id, first), path);
        // The meter and the decoder read the same usage of the recorded stream.
        const call = prepared(protocol, exchange.request.body, true, recordedFraming);
        const { usage } = metered(call, exchange.response.body_text, recordedFraming);
        assert.deepEqual(
          usageView(id, { ...usage, reasoning: 0 }),
          usageView(id, { ...first.usage, reasoning: 0 }),
          path,
        );
      }
    });

    Deno.test(label("errors end a stream in a form its own decoder reads"), () => {
      const partial = eventsOf(RESPONSE).slice(0, 6); // start, reasoning, the first text
      // A failure mid-way: the content so far, then the error, then nothing.
      const failed = encodeStream(protocol, partial, framing, "the upstream went away");
      const events = decodeStream(protocol, failed, framing);
      const last = events.at(-1);
      assert.ok(last?.type === "error", "the stream ends with an error");
      assert.equal(last.message, "the upstream went away");
      assert.ok(!events.some((e) => e.type === "finish"), "a failed stream does not finish");
      assert.ok(events.some((e) => e.type === "text-delta"), "the content before it is kept");
      // An upstream's error event is the protocol's error too.
      const upstream = encodeStream(
        protocol,
        [...partial, { type: "error", message: "boom" }],
        framing,
      );
      assert.equal(decodeStream(protocol, upstream, framing).at(-1)?.type, "error");
      // The tail for a stream the upstream cut: alone, and after what was relayed.
      const jsonArray = framing === "json-array";
      const tail = new TextDecoder().decode(protocol.answers.errorTail(false, jsonArray));
      assert.equal(decodeStream(protocol, tail, framing).at(-1)?.type, "error");
      let relayed = encodeStream(protocol, partial, framing);
      relayed += new TextDecoder().decode(
        protocol.answers.errorTail(relayed.length > 0, jsonArray),
      );
      const cut = decodeStream(protocol, relayed, framing);
      assert.equal(cut.at(-1)?.type, "error");
      assert.ok(cut.some((e) => e.type === "text-delta"), "what was relayed is kept");
      if (jsonArray) assert.ok(Array.isArray(JSON.parse(relayed)), "the array stays valid JSON");
    });

    Deno.test(label("nothing is written after a stream's end"), () => {
      let text = "";
      const info = { ...INFO, jsonArray: framing === "json-array" };
      const encoder = protocol.streamEncoder((t) => text += t, info);
      for (const event of eventsOf(RESPONSE)) encoder.push(event);
      const ended = text;
      encoder.push({ type: "text-start", id: "late" });
      encoder.push({ type: "text-delta", id: "late", delta: "late" });
      encoder.push({ type: "error", message: "late" });
      encoder.fail("late");
      assert.equal(text, ended);
      let failed = "";
      const failing = protocol.streamEncoder((t) => failed += t, info);
      failing.push(eventsOf(RESPONSE)[0]);
      failing.fail("first");
      const afterFail = failed;
      failing.fail("second");
      failing.push({ type: "finish", reason: "stop" });
      assert.equal(failed, afterFail);
    });
  }

  Deno.test(name("an error envelope is not an answer; ids are fresh"), () => {
    const envelope = errorBody(protocol.errors, 500, "The upstream failed.") as Json;
    if (protocol.answers.usage.answer) assert.equal(protocol.answers.usage.answer(envelope), false);
    assert.notEqual(protocol.answers.id(), protocol.answers.id());
  });

  Deno.test(name("a token count it answers reads back as the count"), () => {
    const client = protocol.count?.client;
    const upstream = protocol.count?.upstream;
    if (!client || !upstream) return; // chat has no counting route
    assert.equal(upstream.read(client.answer(1234)), 1234);
  });
}
