/**
 * Chat-completions streams (`openai-other.md` §1.4): taking out what the gateway's asking the
 * upstream for usage caused when the client did not ask, and the translation of chunks to and from canonical
 * events (errors are in `errors.ts`). Chat streams are flat deltas of one
 * choice with no `event:` lines: blocks are implicit (text after reasoning starts a new block),
 * tool calls are told apart by `index`, the finish reason comes in a chunk of its own, the usage
 * chunk (`choices: []`) follows it only when asked for, and `data: [DONE]` ends the stream.
 * Policies: a free-form (custom) call is written to the client whole, as a `custom` tool call,
 * when its input is complete (its input is one string, not JSON to stream); an upstream's custom
 * call streams as the JSON text of `{input}`; reasoning is written as `reasoning_content`, the
 * vendors' field; opaque state has no slot in a chat stream and is not written.
 */
import { isObject } from "../../http/json.ts";
import { hasMember, memberName } from "../../http/json_bytes.ts";
import { encodeSse, type SseEvent } from "../../http/sse.ts";
import type { AnswerInfo, StreamDecoder, StreamEncoder } from "../../translate/codec.ts";
import { isCustomCall } from "../../translate/custom_tools.ts";
import type { CanonicalEvent, Json, TokenUsage } from "../../translate/ir.ts";
import { streamEncoder } from "../../translate/stream_encoder.ts";
import { parseArguments } from "../../translate/tool_ids.ts";
import { firstChoice } from "./decode_response.ts";
import { errorChunk, readError } from "./errors.ts";
import { decodeFinishReason, encodeFinishReason } from "./finish_reason.ts";
import { decodeTokenUsage, encodeTokenUsage } from "./token_usage.ts";
import { plainDeltaReader } from "./plain_delta.ts";

/** `"usage":null` as a member of a compact JSON object (quotes inside strings are escaped). */
const NULL_USAGE = /,\s*"usage"\s*:\s*null(?=\s*[,}])|"usage"\s*:\s*null\s*,/g;
const USAGE = memberName("usage");

/**
 * One chunk for a pass-through client that did not ask for usage, as the upstream would have sent
 * it had the gateway not asked (`stream_options.include_usage`): the usage-only chunk
 * (`choices: []` with a `usage` object) is dropped (""), the `usage: null` members asking put on
 * every chunk are removed (the chunk re-encoded); null — the chunk passes as the upstream sent
 * it — for any other, a usage the upstream sends unasked (on its last content chunk) included.
 */
export function withoutUsage(event: SseEvent): string | null {
  if (!hasMember(event.raw(), USAGE)) return null;
  const data = event.data();
  const stripped = data.replace(NULL_USAGE, "");
  if (stripped !== data) return encodeSse(stripped, event.event || undefined);
  return isUsageChunk(data) ? "" : null;
}

/** Whether a chunk's data is the usage-only chunk: no choices, a `usage` object. */
function isUsageChunk(data: string): boolean {
  if (!/"usage"\s*:\s*\{/.test(data)) return false;
  try {
    const chunk = JSON.parse(data);
    return Array.isArray(chunk?.choices) && chunk.choices.length === 0 && isObject(chunk.usage);
  } catch {
    return false; // not a JSON chunk: relayed as it is
  }
}

// ---------------------------------------------------------------------------------------------
// Translation: upstream chunks → canonical events

/** A chunk's JSON; null for `[DONE]`; undefined for what is no chunk (blank, unparsable). */
function parseChunk(event: SseEvent): Json | null | undefined {
  const raw = event.data();
  const data = raw.trim();
  if (data === "[DONE]") return null;
  if (!data) return undefined;
  try {
    // Parsed once for the meter and the decoder, where the event keeps it (and nothing was trimmed).
    const value = data === raw && event.json ? event.json() : JSON.parse(data);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** A JSON string's inside: a fragment of a custom call's raw input as a fragment of its JSON. */
const jsonInside = (text: string): string => JSON.stringify(text).slice(1, -1);

interface OpenCall {
  /** The canonical id: the upstream's call id (made unique), or one made up when it gave none. */
  id: string;
  /** The id the upstream gave the call, if any. */
  upstreamId?: string;
  custom: boolean;
}

/**
 * Upstream chat chunks → canonical events. Tool calls are told apart by their `index` (never by
 * whether an id is present; a different id at an index already in use is a new call, for servers
 * that reuse `index: 0`); the finish waits for the usage chunk that follows it, and is given at
 * `[DONE]` — or at the end of a stream that gave a finish reason but no `[DONE]`. Keep-alive
 * comments and unparsable data are ignored; a top-level `error` ends the stream with an error.
 * After the first chunk (which gives the start its id and model), a chunk that is only text is
 * read by `plain` (`plainDelta`: without parsing it), any other parsed; tests pass a `plain` that
 * reads none, for the parse alone.
 */
export function chatDecoder(
  emit: (event: CanonicalEvent) => void,
  _provider: string,
  plain: (data: string) => string | undefined = plainDeltaReader(),
): StreamDecoder {
  let started = false;
  let done = false;
  let blocks = 0;
  let text: string | null = null;
  let reasoning: string | null = null;
  /** Open calls by the upstream's index. */
  const calls = new Map<number, OpenCall>();
  const usedIds = new Set<string>();
  let lastIndex = -1;
  let finish: unknown = null;
  let finished = false;
  let refused = false;
  let hasCalls = false;
  let usage: TokenUsage | undefined;

  const closeText = () => {
    if (text) emit({ type: "text-end", id: text });
    text = null;
  };
  const closeReasoning = () => {
    if (reasoning) emit({ type: "reasoning-end", id: reasoning });
    reasoning = null;
  };
  const closeCall = (index: number) => {
    const call = calls.get(index);
    if (!call) return;
    calls.delete(index);
    if (call.custom) emit({ type: "tool-input-delta", id: call.id, delta: '"}' });
    emit({ type: "tool-input-end", id: call.id });
  };
  const closeAll = () => {
    closeReasoning();
    closeText();
    for (const index of [...calls.keys()]) closeCall(index);
  };
  const finishNow = () => {
    if (done) return;
    done = true;
    closeAll();
    emit({
      type: "finish",
      reason: decodeFinishReason(finish, refused, hasCalls),
      ...(typeof finish === "string" ? { raw: finish } : {}),
      ...(usage ? { usage } : {}),
    });
  };

  const onReasoning = (delta: string) => {
    if (!reasoning) {
      closeText();
      reasoning = `reasoning_${blocks++}`;
      emit({ type: "reasoning-start", id: reasoning });
    }
    emit({ type: "reasoning-delta", id: reasoning, delta });
  };
  const onText = (delta: string) => {
    closeReasoning();
    if (!text) {
      text = `text_${blocks++}`;
      emit({ type: "text-start", id: text });
    }
    emit({ type: "text-delta", id: text, delta });
  };

  /** The index a `tool_calls` entry belongs to (servers that omit it: by id, else the last). */
  const indexOf = (raw: Json, id: string | undefined): number => {
    if (typeof raw.index === "number") return raw.index;
    for (const [index, call] of calls) if (id && call.upstreamId === id) return index;
    return id || lastIndex < 0 ? Math.max(lastIndex, ...calls.keys()) + 1 : lastIndex;
  };

  const startCall = (index: number, upstreamId: string | undefined, raw: Json): OpenCall => {
    closeReasoning();
    closeText();
    const custom = raw.type === "custom" || (!isObject(raw.function) && isObject(raw.custom));
    const spec = custom ? raw.custom : raw.function;
    const name = isObject(spec) && typeof spec.name === "string" ? spec.name : "";
    let id = upstreamId ?? `call_${index}_${blocks}`;
    if (usedIds.has(id)) id = `${id}_${blocks}`;
    blocks++;
    usedIds.add(id);
    hasCalls = true;
    const call: OpenCall = { id, ...(upstreamId ? { upstreamId } : {}), custom };
    calls.set(index, call);
    emit({ type: "tool-input-start", id, name, ...(custom ? { kind: "custom" as const } : {}) });
    if (custom) emit({ type: "tool-input-delta", id, delta: '{"input":"' });
    return call;
  };

  const onToolCall = (raw: Json) => {
    const upstreamId = typeof raw.id === "string" && raw.id ? raw.id : undefined;
    const index = indexOf(raw, upstreamId);
    lastIndex = index;
    let call = calls.get(index);
    if (call?.upstreamId && upstreamId && upstreamId !== call.upstreamId) {
      // A server that reuses an index for the next call: that call is complete.
      closeCall(index);
      call = undefined;
    }
    call ??= startCall(index, upstreamId, raw);
    const spec = call.custom ? raw.custom : raw.function;
    const fragment = isObject(spec) ? (call.custom ? spec.input : spec.arguments) : undefined;
    if (typeof fragment === "string" && fragment) {
      const delta = call.custom ? jsonInside(fragment) : fragment;
      emit({ type: "tool-input-delta", id: call.id, delta });
    }
  };

  return {
    push(event) {
      if (done) return;
      if (started) {
        const content = plain(event.data());
        if (content !== undefined) {
          if (content) onText(content);
          return;
        }
      }
      const chunk = parseChunk(event);
      if (chunk === undefined) return;
      if (chunk === null) return finishNow();
      if (chunk.error !== undefined && chunk.error !== null) {
        done = true;
        emit(readError(chunk.error));
        return;
      }
      const choice = firstChoice(chunk.choices);
      const rawUsage = chunk.usage ?? choice?.usage;
      const counted = isObject(rawUsage) ? decodeTokenUsage(rawUsage) : undefined;
      if (counted) usage = counted;
      if (!started) {
        // The start carries the first chunk's usage, for servers that send it on every chunk.
        started = true;
        emit({
          type: "start",
          ...(typeof chunk.id === "string" ? { id: chunk.id } : {}),
          ...(typeof chunk.model === "string" ? { model: chunk.model } : {}),
          ...(counted ? { usage: counted } : {}),
        });
      } else if (counted) emit({ type: "usage", usage: counted });
      if (!choice) return;
      const delta = isObject(choice.delta) ? choice.delta : {};
      const thought = delta.reasoning_content ?? delta.reasoning;
      if (typeof thought === "string" && thought) onReasoning(thought);
      if (typeof delta.content === "string" && delta.content) onText(delta.content);
      if (typeof delta.refusal === "string" && delta.refusal) {
        refused = true;
        onText(delta.refusal);
      }
      if (Array.isArray(delta.tool_calls)) {
        for (const raw of delta.tool_calls) if (isObject(raw)) onToolCall(raw);
      }
      if (choice.finish_reason) {
        finish = choice.finish_reason;
        finished = true;
        closeAll();
      }
    },
    end() {
      if (finished) finishNow();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Translation: canonical events → a client's chunks

/** A client's pending free-form call: its input JSON, gathered until the call ends. */
interface PendingCustom {
  index: number;
  name: string;
  json: string;
}

/**
 * Canonical events → a chat SSE stream for the client: a role chunk first, one chunk per delta,
 * tool calls numbered 0, 1, … in the order they start (their fragments may interleave), a chunk
 * with the finish reason, the usage chunk only when the client asked (every chunk then carries
 * `usage: null`, as OpenAI's do), `data: [DONE]` last. A failure writes the top-level `error`
 * payload and ends the stream; nothing is written after a finish or a failure.
 */
export function chatEncoder(write: (text: string) => void, info: AnswerInfo): StreamEncoder {
  const indexes = new Map<string, number>();
  const custom = new Map<string, PendingCustom>();

  // Every chunk is one object of the same members, written as text around its `choices` (and
  // `usage`): what `JSON.stringify` writes for the whole, member for member.
  const head = "data: " + JSON.stringify({
    id: info.id,
    object: "chat.completion.chunk",
    created: info.created,
    model: info.model,
    system_fingerprint: null,
    choices: 0,
  }).slice(0, -2);
  const usageNull = info.usageChunk ? ',"usage":null' : "";
  /** A chunk's SSE event, its `choices` (and `usage`, in place of `null`) as JSON text. */
  const envelope = (choices: string, usage?: string): string =>
    head + choices + (usage === undefined ? usageNull : ',"usage":' + usage) + "}\n\n";
  /** A chunk of one choice: its `delta` as JSON text. */
  const choice = (delta: string, finish: string | null = null) =>
    write(envelope(
      '[{"index":0,"delta":' + delta + ',"logprobs":null,"finish_reason":' +
        JSON.stringify(finish) + "}]",
    ));
  const chunk = (delta: Json, finish: string | null = null) =>
    choice(JSON.stringify(delta), finish);

  /** A free-form call, whole, once its input is known. */
  const writeCustom = (id: string) => {
    const pending = custom.get(id);
    if (!pending) return;
    custom.delete(id);
    const input = parseArguments(pending.json).input;
    chunk({
      tool_calls: [{
        index: pending.index,
        id,
        type: "custom",
        custom: { name: pending.name, input: typeof input === "string" ? input : pending.json },
      }],
    });
  };

  const startCall = (
    event: Extract<CanonicalEvent, { type: "tool-input-start" }>,
    open: () => void,
  ) => {
    if (indexes.has(event.id)) return;
    open();
    const index = indexes.size;
    indexes.set(event.id, index);
    if (isCustomCall(event, info)) {
      custom.set(event.id, { index, name: event.name, json: "" });
      return;
    }
    chunk({
      tool_calls: [{
        index,
        id: event.id,
        type: "function",
        function: { name: event.name, arguments: "" },
      }],
    });
  };

  const callDelta = (id: string, delta: string) => {
    const index = indexes.get(id);
    if (index === undefined || !delta) return;
    const pending = custom.get(id);
    if (pending) pending.json += delta;
    else chunk({ tool_calls: [{ index, function: { arguments: delta } }] });
  };

  return streamEncoder({
    open: () => chunk({ role: "assistant", content: "" }),
    content(event, open) {
      switch (event.type) {
        case "text-start":
        case "reasoning-start":
          return open();
        case "text-delta":
          open();
          if (event.delta) choice('{"content":' + JSON.stringify(event.delta) + "}");
          return;
        case "reasoning-delta":
          open();
          if (event.delta) choice('{"reasoning_content":' + JSON.stringify(event.delta) + "}");
          return;
        case "tool-input-start":
          return startCall(event, open);
        case "tool-input-delta":
          return callDelta(event.id, event.delta);
        case "tool-input-end":
          return writeCustom(event.id);
      }
    },
    finish(event, usage) {
      for (const id of [...custom.keys()]) writeCustom(id);
      chunk({}, encodeFinishReason(event.reason));
      if (info.usageChunk) write(envelope("[]", JSON.stringify(encodeTokenUsage(usage))));
      write("data: [DONE]\n\n");
    },
    error: (message) => write(errorChunk(message)),
  });
}
