/**
 * generateContent streams: the error forms the gateway writes for a cut stream, and the
 * translation of fragments to and from canonical events. Each fragment is a partial answer with
 * only its new parts; usage and the finish reason come on the last (`gemini.md` §3).
 */
import { encodeSse, type SseEvent } from "../../http/sse.ts";
import type { AnswerInfo, StreamDecoder, StreamEncoder } from "../../translate/codec.ts";
import type { CanonicalEvent, Json, Opaque, TokenUsage } from "../../translate/ir.ts";
import { zeroUsage } from "../../translate/ir.ts";
import { fromGemini, toGemini } from "../../translate/finish.ts";
import { isObject } from "../../translate/read.ts";
import { parseArguments } from "../../translate/tool_ids.ts";
import { callPart, decodePart, encodeUsage, usageFromGemini } from "./codec.ts";

const encoder = new TextEncoder();
const CUT = {
  error: {
    code: 502,
    message: "The upstream provider ended the stream unexpectedly.",
    status: "UNAVAILABLE",
  },
};

/** A fragment carrying `error` (js-genai throws on it) for an SSE stream the upstream cut. */
export function streamErrorEvent(): Uint8Array {
  return encoder.encode(encodeSse(JSON.stringify(CUT), undefined, "\r\n"));
}

/**
 * The end of a cut JSON-array stream: a last element carrying `error`, and the array closed (or a
 * whole array of it when nothing was sent), so the client reads valid JSON that ends in an error.
 */
export function streamErrorElement(started: boolean): Uint8Array {
  return encoder.encode(`${started ? ",\r\n" : "["}${JSON.stringify(CUT)}\n]`);
}

// ---------------------------------------------------------------------------------------------
// Translation: generateContent fragments ⇄ canonical events

function parse(event: SseEvent): Json {
  try {
    const value = JSON.parse(event.data());
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}

/**
 * Upstream fragments (SSE events or JSON-array elements) → canonical events. Text and thought
 * parts continue their open block; a signature on a part ends its block with it; a call is whole
 * in one part (start, one delta of its arguments, end). The finish comes when the upstream
 * closes, with the last usage and finish reason.
 */
export function generateDecoder(
  emit: (event: CanonicalEvent) => void,
  provider: string,
): StreamDecoder {
  let started = false;
  let open: { id: string; kind: "text" | "reasoning" } | null = null;
  let blocks = 0;
  let calls = 0;
  let usage: TokenUsage | undefined;
  let finish: unknown;
  let blocked: unknown;
  let responseId = "";
  let failed = false;
  const close = (opaque?: Opaque) => {
    if (!open) return;
    const { id, kind } = open;
    open = null;
    if (kind === "text") emit({ type: "text-end", id, ...(opaque ? { opaque } : {}) });
    else emit({ type: "reasoning-end", id, ...(opaque ? { opaque } : {}) });
  };
  const openBlock = (kind: "text" | "reasoning") => {
    if (open?.kind === kind) return open.id;
    close();
    open = { id: `${kind[0]}${blocks++}`, kind };
    emit({ type: kind === "text" ? "text-start" : "reasoning-start", id: open.id });
    return open.id;
  };
  return {
    push(event) {
      if (failed) return;
      const chunk = parse(event);
      if (isObject(chunk.error)) {
        failed = true;
        emit({
          type: "error",
          message: typeof chunk.error.message === "string"
            ? chunk.error.message
            : "The upstream failed.",
          ...(typeof chunk.error.code === "number" ? { status: chunk.error.code } : {}),
        });
        return;
      }
      if (!started) {
        started = true;
        responseId = typeof chunk.responseId === "string" ? chunk.responseId : "";
        emit({
          type: "start",
          ...(responseId ? { id: responseId } : {}),
          ...(typeof chunk.modelVersion === "string" ? { model: chunk.modelVersion } : {}),
        });
      }
      if (isObject(chunk.usageMetadata)) {
        usage = usageFromGemini(chunk.usageMetadata);
        emit({ type: "usage", usage });
      }
      if (isObject(chunk.promptFeedback) && chunk.promptFeedback.blockReason) {
        blocked = chunk.promptFeedback.blockReason;
      }
      const candidate = Array.isArray(chunk.candidates) && isObject(chunk.candidates[0])
        ? chunk.candidates[0]
        : undefined;
      if (!candidate) return;
      const content = isObject(candidate.content) ? candidate.content : {};
      for (const raw of Array.isArray(content.parts) ? content.parts : []) {
        if (!isObject(raw)) continue;
        for (const part of decodePart(raw, provider, `${responseId}:${calls}:${blocks}`)) {
          if (part.type === "tool-call") {
            close();
            calls++;
            emit({
              type: "tool-input-start",
              id: part.id,
              name: part.name,
              ...(part.opaque ? { opaque: part.opaque } : {}),
            });
            emit({ type: "tool-input-delta", id: part.id, delta: JSON.stringify(part.input) });
            emit({ type: "tool-input-end", id: part.id });
          } else if (part.type === "text" || part.type === "reasoning") {
            if (part.text) {
              const id = openBlock(part.type);
              emit({
                type: part.type === "text" ? "text-delta" : "reasoning-delta",
                id,
                delta: part.text,
              });
            }
            if (part.opaque) {
              if (!open) openBlock(part.type);
              close(part.opaque);
            }
          }
        }
      }
      if (candidate.finishReason) finish = candidate.finishReason;
    },
    end() {
      if (failed || !started) return;
      close();
      failed = true;
      emit({
        type: "finish",
        reason: blocked && finish === undefined ? "content-filter" : fromGemini(finish, calls > 0),
        ...(typeof finish === "string" ? { raw: finish } : {}),
        ...(usage ? { usage } : {}),
      });
    },
  };
}

/** Canonical events → a generateContent stream for the client (SSE, or one JSON array). */
export function generateEncoder(write: (text: string) => void, info: AnswerInfo): StreamEncoder {
  let elements = 0;
  let done = false;
  let usage: TokenUsage | undefined;
  const calls = new Map<string, { name: string; json: string; opaque?: Opaque }>();
  /** A foreign reasoning token held for the call that follows its block. */
  let carry: string | undefined;
  const reasoning = new Map<string, string>();
  const element = (json: Json) => {
    const text = JSON.stringify(json);
    if (info.jsonArray) write(`${elements === 0 ? "[" : ",\r\n"}${text}`);
    else write(encodeSse(text, undefined, "\r\n"));
    elements++;
  };
  const chunk = (parts: Json[], extra: Json = {}) =>
    element({
      candidates: [{ content: { role: "model", parts }, index: 0, ...extra }],
      ...(extra.finishReason && usage ? { usageMetadata: encodeUsage(usage) } : {}),
      modelVersion: info.model,
      responseId: info.id,
    });
  const fail = (message: string) => {
    if (done) return;
    done = true;
    const error = { error: { code: 502, message, status: "UNAVAILABLE" } };
    if (info.jsonArray) write(`${elements ? ",\r\n" : "["}${JSON.stringify(error)}\n]`);
    else write(encodeSse(JSON.stringify(error), undefined, "\r\n"));
  };
  return {
    push(event) {
      if (done) return;
      switch (event.type) {
        case "text-delta":
          if (event.delta) chunk([{ text: event.delta }]);
          return;
        case "reasoning-start":
          reasoning.set(event.id, "");
          return;
        case "reasoning-delta":
          reasoning.set(event.id, (reasoning.get(event.id) ?? "") + event.delta);
          if (event.delta) chunk([{ text: event.delta, thought: true }]);
          return;
        case "reasoning-end": {
          const text = reasoning.get(event.id) ?? "";
          reasoning.delete(event.id);
          if (!event.opaque) return;
          if (event.opaque.kind === "thought-signature") {
            chunk([{ text: "", thought: true, thoughtSignature: info.token(event.opaque) }]);
          } else carry = info.token(event.opaque, text);
          return;
        }
        case "text-end":
          if (event.opaque) chunk([{ text: "", thoughtSignature: info.token(event.opaque) }]);
          return;
        case "tool-input-start":
          calls.set(event.id, {
            name: event.name,
            json: "",
            ...(event.opaque ? { opaque: event.opaque } : {}),
          });
          return;
        case "tool-input-delta": {
          const call = calls.get(event.id);
          if (call) call.json += event.delta;
          return;
        }
        case "tool-input-end": {
          const call = calls.get(event.id);
          if (!call) return;
          calls.delete(event.id);
          const signature = call.opaque ? info.token(call.opaque) : carry;
          carry = undefined;
          chunk([
            callPart(
              { id: event.id, name: call.name, input: parseArguments(call.json) },
              signature,
            ),
          ]);
          return;
        }
        case "usage":
          usage = { ...(usage ?? zeroUsage()), ...event.usage };
          return;
        case "finish": {
          if (event.usage) usage = event.usage;
          usage ??= zeroUsage();
          // A reasoning token no call took rides on a last thought part.
          const tail: Json[] = carry ? [{ text: "", thought: true, thoughtSignature: carry }] : [];
          chunk([...tail, { text: "" }], { finishReason: toGemini(event.reason) });
          if (info.jsonArray) write("]");
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
