/**
 * Chat-completions streams: dropping the usage chunk the gateway asked the upstream for when the
 * client did not, the error payload for streams the upstream cuts, and the translation of chunks
 * to and from canonical events (flat deltas of one choice; tool calls by `index`; the usage chunk
 * only when the client asked; `[DONE]` last).
 */
import { encodeSse, type SseEvent } from "../../http/sse.ts";
import type { AnswerInfo, StreamDecoder, StreamEncoder } from "../../translate/codec.ts";
import type { CanonicalEvent, Json, TokenUsage } from "../../translate/ir.ts";
import { zeroUsage } from "../../translate/ir.ts";
import { fromChat, toChat } from "../../translate/finish.ts";
import { isObject } from "../../translate/read.ts";
import { parseArguments } from "../../translate/tool_ids.ts";
import { encodeUsage, usageFromChat } from "./codec.ts";

/** `"usage":null` as a member of a compact JSON object (quotes inside strings are escaped). */
const NULL_USAGE = /,\s*"usage"\s*:\s*null(?=\s*[,}])|"usage"\s*:\s*null\s*,/g;

/**
 * Re-encodes one chunk for a client that did not ask for usage, as the upstream would have sent
 * it: the usage-only chunk (`choices: []`) is dropped, and the `usage` member (null, or the
 * usage some vendors put in the last choice) removed; everything else is unchanged.
 */
export function withoutUsage(event: SseEvent): string | null {
  const data = event.data().replace(NULL_USAGE, "");
  if (/"usage"\s*:\s*\{/.test(data)) {
    try {
      const chunk = JSON.parse(data);
      if (Array.isArray(chunk.choices) && chunk.choices.length === 0) return null;
      delete chunk.usage;
      for (const choice of chunk.choices ?? []) delete choice.usage;
      return encodeSse(JSON.stringify(chunk), event.event || undefined);
    } catch { /* not a JSON chunk: relayed as it is */ }
  }
  return encodeSse(data, event.event || undefined);
}

/** The mid-stream error payload (top-level `error`, which openai-node throws on). */
export function streamErrorChunk(): Uint8Array {
  const error = {
    message: "The upstream provider ended the stream unexpectedly.",
    type: "server_error",
    param: null,
    code: "upstream_error",
  };
  return new TextEncoder().encode(encodeSse(JSON.stringify({ error })));
}

// ---------------------------------------------------------------------------------------------
// Translation: chat chunks ⇄ canonical events

function parse(event: SseEvent): Json | null {
  const data = event.data();
  if (data === "[DONE]") return null;
  try {
    const value = JSON.parse(data);
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}

/**
 * Upstream chat chunks → canonical events. Tool calls are told apart by their `index` (never by
 * an id's presence); the finish waits for the usage chunk that follows it, and is given at
 * `[DONE]` — or at the end of a stream that gave a finish reason but no `[DONE]`.
 */
export function chatDecoder(
  emit: (event: CanonicalEvent) => void,
  _provider: string,
): StreamDecoder {
  let started = false;
  let text: string | null = null;
  let reasoning: string | null = null;
  const calls = new Map<number, string>();
  let finish: unknown = null;
  let usage: TokenUsage | undefined;
  let done = false;
  let blocks = 0;

  const closeText = () => {
    if (text) emit({ type: "text-end", id: text });
    text = null;
  };
  const closeReasoning = () => {
    if (reasoning) emit({ type: "reasoning-end", id: reasoning });
    reasoning = null;
  };
  const closeCalls = () => {
    for (const id of calls.values()) emit({ type: "tool-input-end", id });
    calls.clear();
  };
  const finishNow = () => {
    if (done) return;
    done = true;
    closeReasoning();
    closeText();
    closeCalls();
    emit({
      type: "finish",
      reason: fromChat(finish),
      ...(typeof finish === "string" ? { raw: finish } : {}),
      ...(usage ? { usage } : {}),
    });
  };

  return {
    push(event) {
      if (done) return;
      const chunk = parse(event);
      if (chunk === null) return finishNow();
      if (isObject(chunk.error)) {
        done = true;
        emit({
          type: "error",
          message: typeof chunk.error.message === "string"
            ? chunk.error.message
            : "The upstream provider failed.",
        });
        return;
      }
      if (!started) {
        started = true;
        emit({
          type: "start",
          ...(typeof chunk.id === "string" ? { id: chunk.id } : {}),
          ...(typeof chunk.model === "string" ? { model: chunk.model } : {}),
        });
      }
      const choice = Array.isArray(chunk.choices) && isObject(chunk.choices[0])
        ? chunk.choices[0]
        : undefined;
      const rawUsage = chunk.usage ?? choice?.usage;
      if (isObject(rawUsage)) {
        usage = usageFromChat(rawUsage);
        emit({ type: "usage", usage });
      }
      if (!choice) return;
      const delta = isObject(choice.delta) ? choice.delta : {};
      const thought = delta.reasoning_content ?? delta.reasoning;
      if (typeof thought === "string" && thought) {
        if (!reasoning) {
          closeText();
          reasoning = `r${blocks++}`;
          emit({ type: "reasoning-start", id: reasoning });
        }
        emit({ type: "reasoning-delta", id: reasoning, delta: thought });
      }
      if (typeof delta.content === "string" && delta.content) {
        closeReasoning();
        if (!text) {
          text = `t${blocks++}`;
          emit({ type: "text-start", id: text });
        }
        emit({ type: "text-delta", id: text, delta: delta.content });
      }
      if (Array.isArray(delta.tool_calls)) {
        for (const raw of delta.tool_calls) {
          if (!isObject(raw)) continue;
          const index = typeof raw.index === "number" ? raw.index : calls.size;
          const fn = isObject(raw.function) ? raw.function : {};
          let id = calls.get(index);
          if (!id) {
            closeReasoning();
            closeText();
            id = typeof raw.id === "string" && raw.id ? raw.id : `call_${index}_${blocks}`;
            blocks++;
            calls.set(index, id);
            emit({ type: "tool-input-start", id, name: String(fn.name ?? "") });
          }
          if (typeof fn.arguments === "string" && fn.arguments) {
            emit({ type: "tool-input-delta", id, delta: fn.arguments });
          }
        }
      }
      if (choice.finish_reason) {
        finish = choice.finish_reason;
        closeReasoning();
        closeText();
        closeCalls();
      }
    },
    end() {
      if (finish !== null) finishNow();
    },
  };
}

/** Canonical events → a chat SSE stream for the client (`[DONE]` last). */
export function chatEncoder(write: (text: string) => void, info: AnswerInfo): StreamEncoder {
  let started = false;
  let done = false;
  const indexes = new Map<string, number>();
  const custom = new Map<string, { name: string; json: string }>();
  let usage: TokenUsage | undefined;
  const chunk = (delta: Json, finish: string | null = null) =>
    write(encodeSse(JSON.stringify({
      id: info.id,
      object: "chat.completion.chunk",
      created: info.created,
      model: info.model,
      system_fingerprint: null,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    })));
  const start = () => {
    if (started) return;
    started = true;
    chunk({ role: "assistant", content: "" });
  };
  const fail = (message: string) => {
    if (done) return;
    done = true;
    const error = { message, type: "server_error", param: null, code: "upstream_error" };
    write(encodeSse(JSON.stringify({ error })));
  };
  return {
    push(event) {
      if (done) return;
      switch (event.type) {
        case "start":
          return start();
        case "text-delta":
          start();
          if (event.delta) chunk({ content: event.delta });
          return;
        case "reasoning-delta":
          start();
          if (event.delta) chunk({ reasoning_content: event.delta });
          return;
        case "tool-input-start": {
          start();
          const index = indexes.size;
          indexes.set(event.id, index);
          if (event.kind === "custom" || info.customTools?.has(event.name)) {
            // A free-form call's input is one string: written whole when its JSON is complete.
            custom.set(event.id, { name: event.name, json: "" });
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
          return;
        }
        case "tool-input-delta": {
          const index = indexes.get(event.id);
          if (index === undefined || !event.delta) return;
          const pending = custom.get(event.id);
          if (pending) pending.json += event.delta;
          else chunk({ tool_calls: [{ index, function: { arguments: event.delta } }] });
          return;
        }
        case "tool-input-end": {
          const pending = custom.get(event.id);
          if (!pending) return;
          custom.delete(event.id);
          const input = parseArguments(pending.json).input;
          chunk({
            tool_calls: [{
              index: indexes.get(event.id),
              id: event.id,
              type: "custom",
              custom: {
                name: pending.name,
                input: typeof input === "string" ? input : pending.json,
              },
            }],
          });
          return;
        }
        case "usage":
          usage = { ...(usage ?? zeroUsage()), ...event.usage };
          return;
        case "finish": {
          start();
          chunk({}, toChat(event.reason));
          const final = event.usage ?? usage ?? zeroUsage();
          if (info.usageChunk) {
            write(encodeSse(JSON.stringify({
              id: info.id,
              object: "chat.completion.chunk",
              created: info.created,
              model: info.model,
              system_fingerprint: null,
              choices: [],
              usage: encodeUsage(final),
            })));
          }
          write(encodeSse("[DONE]"));
          done = true;
          return;
        }
        case "error":
          return fail(event.message);
        default:
          return;
      }
    },
    fail,
  };
}
