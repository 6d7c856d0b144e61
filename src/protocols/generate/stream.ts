/**
 * generateContent streams (`gemini.md` §4): the translation of fragments to and from canonical
 * events. Each fragment is a partial answer with only its new parts; a call comes whole in one
 * part; usage comes on every fragment (the prompt counted from the first, the last authoritative),
 * the finish reason on the last, and the stream ends when the connection closes (SSE) or the array
 * does. Errors are in `errors.ts`.
 */
import { eventJson, isObject } from "../../http/json.ts";
import type { AnswerInfo, StreamDecoder, StreamEncoder } from "../../translate/codec.ts";
import type { CanonicalEvent, Json, Opaque, TokenUsage } from "../../translate/ir.ts";
import { streamEncoder } from "../../translate/stream_encoder.ts";
import { parseArguments, synthesizeId } from "../../translate/tool_ids.ts";
import { readAnswerPart } from "./decode_response.ts";
import { callPart, isForeign } from "./encode_response.ts";
import { gatewayErrorFragment, readError } from "./errors.ts";
import { decodeFinishReason, encodeFinishReason } from "./finish_reason.ts";
import { decodeTokenUsage, encodeTokenUsage } from "./token_usage.ts";

// ---------------------------------------------------------------------------------------------
// Translation: generateContent fragments ⇄ canonical events

/**
 * Upstream fragments (SSE events or JSON-array elements, both read with `data()`) → canonical
 * events. Text and thought parts continue their open block (switching kind closes the other); a
 * signature on a part ends its block with it (an empty part carrying only one ends the open
 * block); a call is whole in one part: start (with its signature), one delta of its arguments,
 * end. The start carries the first fragment's usage, later fragments' usage comes as updates; the
 * finish comes when the upstream closes, with the last usage and finish reason.
 */
export function generateDecoder(
  emit: (event: CanonicalEvent) => void,
  provider: string,
): StreamDecoder {
  let started = false;
  let done = false;
  let open: { id: string; kind: "text" | "reasoning" } | null = null;
  let blocks = 0;
  let parts = 0;
  let calls = 0;
  let usage: TokenUsage | undefined;
  let finish: unknown;
  let blocked: unknown;
  let responseId = "";

  const close = (opaque?: Opaque) => {
    if (!open) return;
    const { id, kind } = open;
    open = null;
    const end = opaque ? { id, opaque } : { id };
    emit(kind === "text" ? { type: "text-end", ...end } : { type: "reasoning-end", ...end });
  };
  const openBlock = (kind: "text" | "reasoning") => {
    if (open?.kind === kind) return open.id;
    close();
    open = { id: `${kind === "text" ? "t" : "r"}${blocks++}`, kind };
    emit({ type: kind === "text" ? "text-start" : "reasoning-start", id: open.id });
    return open.id;
  };
  const fail = (error: Json) => {
    done = true;
    emit(readError(error));
  };
  const part = (raw: unknown) => {
    const index = parts++;
    const read = isObject(raw) ? readAnswerPart(raw, provider) : undefined;
    if (!read) return;
    if (read.type === "call") {
      close();
      calls++;
      const id = read.id ?? synthesizeId(`${responseId}:${index}:${read.name}`);
      emit({
        type: "tool-input-start",
        id,
        name: read.name,
        ...(read.opaque ? { opaque: read.opaque } : {}),
      });
      emit({ type: "tool-input-delta", id, delta: JSON.stringify(read.input) });
      emit({ type: "tool-input-end", id });
      return;
    }
    if (read.text) {
      const id = openBlock(read.type);
      emit({
        type: read.type === "text" ? "text-delta" : "reasoning-delta",
        id,
        delta: read.text,
      });
    }
    if (read.opaque) {
      if (!open) openBlock(read.type);
      close(read.opaque);
    }
  };

  return {
    push(event) {
      if (done) return;
      const chunk = eventJson(event);
      if (isObject(chunk.error)) return fail(chunk.error);
      const counted = isObject(chunk.usageMetadata)
        ? decodeTokenUsage(chunk.usageMetadata)
        : undefined;
      if (counted) usage = counted;
      if (!started) {
        // The start carries the first fragment's usage: Gemini counts the prompt from the first.
        started = true;
        responseId = typeof chunk.responseId === "string" ? chunk.responseId : "";
        emit({
          type: "start",
          ...(responseId ? { id: responseId } : {}),
          ...(typeof chunk.modelVersion === "string" ? { model: chunk.modelVersion } : {}),
          ...(counted ? { usage: counted } : {}),
        });
      } else if (counted) emit({ type: "usage", usage: counted });
      if (isObject(chunk.promptFeedback) && chunk.promptFeedback.blockReason) {
        blocked = chunk.promptFeedback.blockReason;
      }
      const candidate = Array.isArray(chunk.candidates) && isObject(chunk.candidates[0])
        ? chunk.candidates[0]
        : undefined;
      if (!candidate) return;
      const content = isObject(candidate.content) ? candidate.content : {};
      for (const raw of Array.isArray(content.parts) ? content.parts : []) part(raw);
      if (candidate.finishReason) finish = candidate.finishReason;
    },
    end() {
      if (done) return;
      if (!started) {
        return fail({ message: "The upstream provider ended the stream without an answer." });
      }
      close();
      done = true;
      const raw = typeof finish === "string"
        ? finish
        : typeof blocked === "string"
        ? blocked
        : undefined;
      emit({
        type: "finish",
        reason: decodeFinishReason(finish, calls > 0, !!blocked),
        ...(raw ? { raw } : {}),
        ...(usage ? { usage } : {}),
      });
    },
  };
}

/**
 * Canonical events → a generateContent stream for the client: SSE (`data: {…}` and CRLF, as
 * Google writes it) or one JSON array (`[{…},\r\n{…}]`). Each text or thought delta is a
 * fragment; a call is written whole when its arguments end; opaque state goes as
 * `thoughtSignature` tokens (another provider's reasoning state on the call that follows its
 * reasoning, else on a thought part of its own); the finish is a last fragment with the finish
 * reason and the usage. A failure ends the stream with a fragment carrying `error`.
 */
export function generateEncoder(write: (text: string) => void, info: AnswerInfo): StreamEncoder {
  let elements = 0;
  const calls = new Map<string, { name: string; json: string; opaque?: Opaque }>();
  const reasoning = new Map<string, string>();
  /** Another provider's reasoning token, held for a call that follows its reasoning. */
  let carry: string | undefined;

  const element = (text: string) => {
    if (info.jsonArray) write(`${elements === 0 ? "[" : ",\r\n"}${text}`);
    else write("data: " + text + "\r\n\r\n");
    elements++;
  };
  // A fragment written as text around its parts: what `JSON.stringify` writes for the object
  // `{candidates: [{content: {role, parts}, finishReason?, index: 0}], usageMetadata?,
  // modelVersion, responseId}`, member for member.
  const ids = JSON.stringify({ modelVersion: info.model, responseId: info.id });
  const tail = ids === "{}" ? "}" : "," + ids.slice(1);
  /** A fragment of `parts`; the last one with the finish reason and the usage. */
  const chunk = (parts: Json[], last?: { finishReason: string; usage: TokenUsage }) =>
    element(
      '{"candidates":[{"content":{"role":"model","parts":' + JSON.stringify(parts) + "}" +
        (last ? ',"finishReason":' + JSON.stringify(last.finishReason) : "") +
        ',"index":0}]' +
        (last ? ',"usageMetadata":' + JSON.stringify(encodeTokenUsage(last.usage)) : "") + tail,
    );
  /** A held token that no call took rides on a thought part of its own. */
  const flush = () => {
    if (carry === undefined) return;
    chunk([{ text: "", thought: true, thoughtSignature: carry }]);
    carry = undefined;
  };
  const writeCall = (id: string, call: { name: string; json: string; opaque?: Opaque }) => {
    if (call.opaque) flush();
    const signature = call.opaque ? info.token(call.opaque) : carry;
    carry = undefined;
    chunk([callPart({ id, name: call.name, input: parseArguments(call.json) }, signature)]);
  };

  // No opening: the first fragment is the first content.
  return streamEncoder({
    content(event) {
      switch (event.type) {
        case "text-delta":
          if (!event.delta) return;
          flush();
          return chunk([{ text: event.delta }]);
        case "text-end":
          if (event.opaque) chunk([{ text: "", thoughtSignature: info.token(event.opaque) }]);
          return;
        case "reasoning-start":
          flush();
          reasoning.set(event.id, "");
          return;
        case "reasoning-delta":
          if (!event.delta) return;
          reasoning.set(event.id, (reasoning.get(event.id) ?? "") + event.delta);
          return chunk([{ text: event.delta, thought: true }]);
        case "reasoning-end": {
          const text = reasoning.get(event.id) ?? "";
          reasoning.delete(event.id);
          if (isForeign(event.opaque)) carry = info.token(event.opaque, text);
          else if (event.opaque) {
            chunk([{ text: "", thought: true, thoughtSignature: info.token(event.opaque) }]);
          }
          return;
        }
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
          return writeCall(event.id, call);
        }
      }
    },
    finish(event, usage) {
      for (const [id, call] of calls) writeCall(id, call);
      calls.clear();
      flush();
      chunk([{ text: "" }], { finishReason: encodeFinishReason(event.reason), usage });
      if (info.jsonArray) write("]");
    },
    error: (message, event) =>
      write(gatewayErrorFragment(message, event?.status, !!info.jsonArray, elements > 0)),
  });
}
