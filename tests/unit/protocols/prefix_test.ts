/**
 * A property test: what feeds a prompt cache is deterministic through translation. Seeded
 * conversations — generated tool lists and parameter schemas, a system prompt, turns of text,
 * calls (parallel ones too) and results — are written in each client protocol and translated to
 * each upstream one (every pair, through the `WireProtocol` records, as the pipeline does):
 * - the same request encoded twice gives byte-identical upstream bodies;
 * - the same request with its objects' members in another order — schema keywords, a body's,
 *   a tool's, a message's — gives the same bytes too (JSON's objects are unordered; what is
 *   ordered stays: tools, property names, arrays, and data such as a call's arguments);
 * - each call of a conversation repeats the previous call's prompt up to its last breakpoint
 *   (on a Messages upstream; the whole previous prompt on the others, which cache every prefix),
 *   byte for byte in the order the provider reads a prompt (tools, system, messages), breakpoint
 *   markers aside (they move each turn: they are not content); and a Messages upstream never
 *   gets more than four breakpoints.
 * `PREFIX_SEED` and `PREFIX_CASES` override the defaults.
 */
import assert from "node:assert/strict";
import { PROTOCOLS } from "../../../src/protocols/index.ts";
import type { Target } from "../../../src/translate/codec.ts";
import type { Json, ProtocolId } from "../../../src/translate/ir.ts";
import { prefixDifference, segmentsOf } from "../../helpers/prompt.ts";
import { int, pick, type Rand, random } from "../../helpers/random.ts";

const SEED = Number(Deno.env.get("PREFIX_SEED") ?? 20261205);
const CASES = Number(Deno.env.get("PREFIX_CASES") ?? 150);

const WORDS = ["path", "mode", "limit", "query", "city", "tags", "depth", "note", "when", "unit"];
const word = (rand: Rand) => pick(rand, WORDS) + int(rand, 0, 9);

// ---------------------------------------------------------------------------------------------
// Conversations, in no protocol

/** A JSON Schema of `depth` levels at most. */
function schemaOf(rand: Rand, depth: number): Json {
  const kind = depth > 1 ? pick(rand, ["string", "integer", "number", "boolean"]) : pick(rand, [
    "string",
    "integer",
    "number",
    "boolean",
    "array",
    "object",
    "object",
  ]);
  const schema: Json = { type: kind };
  if (rand() < 0.4) schema.description = `The ${word(rand)}.`;
  if (kind === "string" && rand() < 0.3) schema.enum = [word(rand), word(rand)];
  if (kind === "string" && rand() < 0.2) schema.minLength = 1;
  if (kind === "integer" && rand() < 0.4) Object.assign(schema, { minimum: 0, maximum: 100 });
  if (kind === "array") schema.items = schemaOf(rand, depth + 1);
  if (kind === "object") Object.assign(schema, objectSchema(rand, depth + 1));
  return schema;
}

function objectSchema(rand: Rand, depth: number): Json {
  const properties: Json = {};
  for (let i = int(rand, 0, 4); i > 0; i--) properties[word(rand)] = schemaOf(rand, depth);
  const names = Object.keys(properties);
  const schema: Json = { type: "object", properties };
  if (names.length && rand() < 0.7) schema.required = names.filter(() => rand() < 0.6);
  if (rand() < 0.3) schema.additionalProperties = false;
  return schema;
}

interface Tool {
  name: string;
  description?: string;
  parameters: Json;
}

/** A value an object schema takes (a call's arguments). */
function valueOf(rand: Rand, schema: Json): unknown {
  switch (schema.type) {
    case "string":
      return Array.isArray(schema.enum) ? pick(rand, schema.enum) : word(rand);
    case "integer":
      return int(rand, 0, 100);
    case "number":
      return int(rand, 0, 1000) / 10;
    case "boolean":
      return rand() < 0.5;
    case "array":
      return [valueOf(rand, schema.items as Json)];
    default:
      return Object.fromEntries(
        Object.entries((schema.properties ?? {}) as Json).map((
          [k, s],
        ) => [k, valueOf(rand, s as Json)]),
      );
  }
}

type Step =
  | { kind: "user"; text: string }
  | { kind: "assistant"; text?: string; calls: { id: string; name: string; args: unknown }[] }
  | { kind: "results"; results: { id: string; name: string; output: string }[] };

interface Conversation {
  system?: string;
  tools: Tool[];
  steps: Step[];
}

function conversationOf(rand: Rand): Conversation {
  const tools: Tool[] = [];
  const names = new Set<string>();
  for (let i = int(rand, 0, 4); i > 0; i--) {
    const name = `${word(rand)}_tool`;
    if (names.has(name)) continue;
    names.add(name);
    tools.push({
      name,
      ...(rand() < 0.8 ? { description: `Does ${word(rand)}.` } : {}),
      parameters: objectSchema(rand, 0),
    });
  }
  const steps: Step[] = [{ kind: "user", text: `Question ${word(rand)}?` }];
  let calls = 0;
  for (let turn = int(rand, 1, 4); turn > 0; turn--) {
    const calling = tools.length && rand() < 0.6;
    if (calling) {
      const made = Array.from({ length: int(rand, 1, 2) }, () => {
        const tool = pick(rand, tools);
        return { id: `call_${++calls}`, name: tool.name, args: valueOf(rand, tool.parameters) };
      });
      steps.push({
        kind: "assistant",
        ...(rand() < 0.4 ? { text: "Let me look." } : {}),
        calls: made,
      });
      steps.push({
        kind: "results",
        results: made.map((c) => ({ id: c.id, name: c.name, output: `${word(rand)} ok` })),
      });
    } else {
      steps.push({ kind: "assistant", text: `Answer ${word(rand)}.`, calls: [] });
      steps.push({ kind: "user", text: `Then ${word(rand)}?` });
    }
  }
  return { ...(rand() < 0.8 ? { system: `You are ${word(rand)}.` } : {}), tools, steps };
}

// ---------------------------------------------------------------------------------------------
// The conversation as each client writes it, one request per time the client speaks

function responsesBody(c: Conversation, steps: Step[]): Json {
  const input = steps.flatMap((s): Json[] => {
    if (s.kind === "user") {
      return [{ type: "message", role: "user", content: [{ type: "input_text", text: s.text }] }];
    }
    if (s.kind === "results") {
      return s.results.map((r) => ({
        type: "function_call_output",
        call_id: r.id,
        output: r.output,
      }));
    }
    return [
      ...(s.text
        ? [{ type: "message", role: "assistant", content: [{ type: "output_text", text: s.text }] }]
        : []),
      ...s.calls.map((call) => ({
        type: "function_call",
        call_id: call.id,
        name: call.name,
        arguments: JSON.stringify(call.args),
      })),
    ];
  });
  return {
    model: "client-model",
    ...(c.system ? { instructions: c.system } : {}),
    input,
    ...(c.tools.length
      ? {
        tools: c.tools.map((t) => ({
          type: "function",
          name: t.name,
          ...(t.description ? { description: t.description } : {}),
          parameters: t.parameters,
        })),
      }
      : {}),
    prompt_cache_key: "conversation-1",
  };
}

function chatBody(c: Conversation, steps: Step[]): Json {
  const messages = steps.flatMap((s): Json[] => {
    if (s.kind === "user") return [{ role: "user", content: s.text }];
    if (s.kind === "results") {
      return s.results.map((r) => ({ role: "tool", tool_call_id: r.id, content: r.output }));
    }
    return [{
      role: "assistant",
      content: s.text ?? null,
      ...(s.calls.length
        ? {
          tool_calls: s.calls.map((call) => ({
            id: call.id,
            type: "function",
            function: { name: call.name, arguments: JSON.stringify(call.args) },
          })),
        }
        : {}),
    }];
  });
  return {
    model: "client-model",
    messages: [...(c.system ? [{ role: "system", content: c.system }] : []), ...messages],
    ...(c.tools.length
      ? {
        tools: c.tools.map((t) => ({
          type: "function",
          function: {
            name: t.name,
            ...(t.description ? { description: t.description } : {}),
            parameters: t.parameters,
          },
        })),
      }
      : {}),
  };
}

/** As Claude Code writes it: a breakpoint on the system prompt and on the last block. */
function messagesBody(c: Conversation, steps: Step[]): Json {
  const messages = steps.map((s): Json => {
    if (s.kind === "user") return { role: "user", content: [{ type: "text", text: s.text }] };
    if (s.kind === "results") {
      return {
        role: "user",
        content: s.results.map((r) => ({
          type: "tool_result",
          tool_use_id: r.id,
          content: r.output,
        })),
      };
    }
    return {
      role: "assistant",
      content: [
        ...(s.text ? [{ type: "text", text: s.text }] : []),
        ...s.calls.map((call) => ({
          type: "tool_use",
          id: call.id,
          name: call.name,
          input: call.args,
        })),
      ],
    };
  });
  const last = messages.at(-1)!.content as Json[];
  last[last.length - 1] = { ...last.at(-1), cache_control: { type: "ephemeral" } };
  return {
    model: "client-model",
    max_tokens: 1024,
    ...(c.system
      ? { system: [{ type: "text", text: c.system, cache_control: { type: "ephemeral" } }] }
      : {}),
    messages,
    ...(c.tools.length
      ? {
        tools: c.tools.map((t) => ({
          name: t.name,
          ...(t.description ? { description: t.description } : {}),
          input_schema: t.parameters,
        })),
      }
      : {}),
  };
}

function generateBody(c: Conversation, steps: Step[]): Json {
  const contents = steps.map((s): Json => {
    if (s.kind === "user") return { role: "user", parts: [{ text: s.text }] };
    if (s.kind === "results") {
      return {
        role: "user",
        parts: s.results.map((r) => ({
          functionResponse: { name: r.name, response: { result: r.output } },
        })),
      };
    }
    return {
      role: "model",
      parts: [
        ...(s.text ? [{ text: s.text }] : []),
        ...s.calls.map((call) => ({ functionCall: { name: call.name, args: call.args } })),
      ],
    };
  });
  return {
    ...(c.system ? { systemInstruction: { parts: [{ text: c.system }] } } : {}),
    contents,
    ...(c.tools.length
      ? {
        tools: [{
          functionDeclarations: c.tools.map((t) => ({
            name: t.name,
            ...(t.description ? { description: t.description } : {}),
            parametersJsonSchema: t.parameters,
          })),
        }],
      }
      : {}),
  };
}

const WRITERS: Record<ProtocolId, (c: Conversation, steps: Step[]) => Json> = {
  responses: responsesBody,
  chat: chatBody,
  messages: messagesBody,
  generate: generateBody,
};

/** The requests of a conversation: one each time the client speaks (a user turn, results). */
function requestsOf(c: Conversation, protocol: ProtocolId): Json[] {
  return c.steps.flatMap((s, i) =>
    s.kind === "assistant" ? [] : [WRITERS[protocol](c, c.steps.slice(0, i + 1))]
  );
}

// ---------------------------------------------------------------------------------------------
// Member order shuffled where it means nothing

/** Members whose value is data (arguments, results, enumerations): left exactly as they are. */
const DATA = new Set(["input", "args", "response", "enum", "const", "default", "arguments"]);
/** Members whose value maps names in an order that matters (property names): kept in order. */
const NAMES = new Set(["properties", "$defs", "definitions"]);

function shuffled(value: unknown, rand: Rand): unknown {
  if (Array.isArray(value)) return value.map((v) => shuffled(v, rand));
  if (typeof value !== "object" || value === null) return value;
  const entries = Object.entries(value).map(([key, v]): [string, unknown] => [
    key,
    DATA.has(key)
      ? v
      : NAMES.has(key) && typeof v === "object" && v !== null
      ? Object.fromEntries(Object.entries(v).map(([n, s]) => [n, shuffled(s, rand)]))
      : shuffled(v, rand),
  ]);
  for (let i = entries.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [entries[i], entries[j]] = [entries[j], entries[i]];
  }
  return Object.fromEntries(entries);
}

// ---------------------------------------------------------------------------------------------
// The prompt as each upstream reads it

const TARGETS: Record<ProtocolId, Target> = {
  messages: { model: "claude-sonnet-4-5", provider: "anthropic", family: "anthropic" },
  responses: { model: "gpt-5.4", provider: "openai", family: "openai" },
  chat: { model: "qwen3-coder", provider: "local", family: "openai-compatible" },
  generate: { model: "gemini-3-pro-preview", provider: "gemini", family: "gemini" },
};

/** `body` of `from` as the upstream body `to` gets, written as the pipeline writes it. */
function upstreamText(from: ProtocolId, to: ProtocolId, body: Json): string {
  const canonical = PROTOCOLS[from].decodeRequest(structuredClone(body), {});
  return JSON.stringify(PROTOCOLS[to].encodeRequest(canonical, TARGETS[to]));
}

const PROTOCOL_IDS = Object.keys(PROTOCOLS) as ProtocolId[];

Deno.test(`prefix: ${CASES} conversations × every pair (seed ${SEED}): the same prompt, the same bytes`, () => {
  const rand = random(SEED);
  let placed = 0;
  for (let n = 0; n < CASES; n++) {
    const conversation = conversationOf(rand);
    for (const from of PROTOCOL_IDS) {
      const requests = requestsOf(conversation, from);
      for (const to of PROTOCOL_IDS) {
        const label = `case ${n} (seed ${SEED}) ${from}>${to}`;
        const sent = requests.map((body, turn) => {
          const text = upstreamText(from, to, body);
          assert.equal(upstreamText(from, to, body), text, `${label} turn ${turn}: encoded twice`);
          assert.equal(
            upstreamText(from, to, shuffled(body, rand) as Json),
            text,
            `${label} turn ${turn}: members in another order`,
          );
          return segmentsOf(to, JSON.parse(text));
        });
        for (let turn = 1; turn < sent.length; turn++) {
          // On Messages what the previous call cached: up to its last breakpoint; elsewhere the
          // provider caches the whole prompt.
          const difference = prefixDifference(sent[turn - 1], sent[turn], to !== "messages");
          assert.equal(difference, undefined, `${label}: turn ${turn} repeats turn ${turn - 1}`);
        }
        if (to !== "messages") continue;
        for (const segments of sent) {
          const count = segments.filter((s) => s.breakpoint).length;
          assert.ok(count <= 4, `${label}: ${count} breakpoints`);
          if (from !== "messages") placed += count;
        }
      }
    }
  }
  assert.ok(placed > CASES, `the gateway placed breakpoints (${placed})`);
});
