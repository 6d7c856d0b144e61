/**
 * Messages streams (`anthropic-messages.md` §5): the decoder reads an upstream's named events
 * into canonical events; the encoder writes the exact grammar — `message_start`, one content block
 * open at a time (start, deltas, stop), `message_delta` with the cumulative usage, `message_stop`.
 * `message_start` carries the input as the upstream's first event counted it, else the gateway's
 * estimate (`AnswerInfo.inputEstimate`); `message_delta` carries the final counts, input included.
 * Blocks never interleave: events of a block that arrive while another is open (parallel tool
 * calls whose arguments interleave) are held and written when that block's turn comes
 * (`translate/sequence.ts`). No empty text block is ever written. Errors are in `errors.ts`.
 */
import { eventJson, isObject } from "../../http/json.ts";
import { sseLine } from "../../http/sse.ts";
import type { AnswerInfo, StreamDecoder, StreamEncoder } from "../../translate/codec.ts";
import type { CanonicalEvent, Json, Opaque } from "../../translate/ir.ts";
import { sequencedContent } from "../../translate/sequence.ts";
import { streamEncoder } from "../../translate/stream_encoder.ts";
import { newId } from "../../translate/tool_ids.ts";
import { webSearchCall } from "./decode_response.ts";
import { errorEvent, readError } from "./errors.ts";
import { decodeStopReason, encodeStopReason } from "./stop_reason.ts";
import { decodeTokenUsage, encodeTokenUsage, mergeUsage } from "./token_usage.ts";

/** Upstream Messages events → canonical events; `provider` tags signatures. */
export function messagesDecoder(
  emit: (event: CanonicalEvent) => void,
  provider: string,
): StreamDecoder {
  /** Open blocks by index: their canonical id and kind. */
  const blocks = new Map<number, { id: string; kind: "text" | "reasoning" | "tool" }>();
  const signatures = new Map<number, string>();
  let usage: Json = {};
  let stopReason: unknown = null;
  let stopped = false;
  return {
    push(event) {
      switch (event.event) {
        case "message_start": {
          const data = eventJson(event);
          const message = isObject(data.message) ? data.message : {};
          usage = mergeUsage({}, message.usage);
          emit({
            type: "start",
            ...(typeof message.id === "string" ? { id: message.id } : {}),
            ...(typeof message.model === "string" ? { model: message.model } : {}),
            usage: decodeTokenUsage(usage),
          });
          return;
        }
        case "content_block_start": {
          const data = eventJson(event);
          const index = typeof data.index === "number" ? data.index : blocks.size;
          const block = isObject(data.content_block) ? data.content_block : {};
          const id = `b${index}`;
          if (block.type === "text") {
            blocks.set(index, { id, kind: "text" });
            emit({ type: "text-start", id });
            if (typeof block.text === "string" && block.text) {
              emit({ type: "text-delta", id, delta: block.text });
            }
          } else if (block.type === "thinking") {
            blocks.set(index, { id, kind: "reasoning" });
            emit({ type: "reasoning-start", id });
            if (typeof block.thinking === "string" && block.thinking) {
              emit({ type: "reasoning-delta", id, delta: block.thinking });
            }
          } else if (block.type === "redacted_thinking") {
            emit({ type: "reasoning-start", id });
            emit({
              type: "reasoning-end",
              id,
              opaque: { provider, kind: "redacted-thinking", value: String(block.data ?? "") },
            });
          } else if (block.type === "tool_use") {
            const callId = String(block.id ?? id);
            blocks.set(index, { id: callId, kind: "tool" });
            emit({ type: "tool-input-start", id: callId, name: String(block.name ?? "") });
          } else if (block.type === "server_tool_use" && block.name === "web_search") {
            emit({ type: "hosted-call", part: webSearchCall(block, String(block.id ?? id)) });
          }
          return;
        }
        case "content_block_delta": {
          const data = eventJson(event);
          const block = blocks.get(data.index as number);
          const delta = isObject(data.delta) ? data.delta : {};
          if (!block) return;
          if (delta.type === "text_delta" && typeof delta.text === "string") {
            emit({ type: "text-delta", id: block.id, delta: delta.text });
          } else if (delta.type === "thinking_delta" && typeof delta.thinking === "string") {
            emit({ type: "reasoning-delta", id: block.id, delta: delta.thinking });
          } else if (delta.type === "signature_delta" && typeof delta.signature === "string") {
            signatures.set(data.index as number, delta.signature);
          } else if (delta.type === "input_json_delta" && typeof delta.partial_json === "string") {
            if (delta.partial_json) {
              emit({ type: "tool-input-delta", id: block.id, delta: delta.partial_json });
            }
          }
          return;
        }
        case "content_block_stop": {
          const index = eventJson(event).index as number;
          const block = blocks.get(index);
          if (!block) return;
          blocks.delete(index);
          if (block.kind === "text") emit({ type: "text-end", id: block.id });
          else if (block.kind === "tool") emit({ type: "tool-input-end", id: block.id });
          else {
            const signature = signatures.get(index);
            const opaque: Opaque | undefined = signature
              ? { provider, kind: "thinking-signature", value: signature }
              : undefined;
            emit({ type: "reasoning-end", id: block.id, ...(opaque ? { opaque } : {}) });
          }
          return;
        }
        case "message_delta": {
          const data = eventJson(event);
          usage = mergeUsage(usage, data.usage);
          if (isObject(data.delta) && data.delta.stop_reason) stopReason = data.delta.stop_reason;
          emit({ type: "usage", usage: decodeTokenUsage(usage) });
          return;
        }
        case "message_stop":
          if (stopped) return;
          stopped = true;
          emit({
            type: "finish",
            reason: decodeStopReason(stopReason),
            ...(typeof stopReason === "string" ? { raw: stopReason } : {}),
            usage: decodeTokenUsage(usage),
          });
          return;
        case "error":
          emit(readError(eventJson(event)));
          return;
      }
    },
    end() {},
  };
}

/** What the encoder keeps of a block while it waits or is written. */
interface BlockData {
  name?: string;
  /** A call's opaque state (a Gemini signature), written as a thinking block before it. */
  opaque?: Opaque;
  /** A thinking block's text, which its signature token carries. */
  text: string;
  /** A thinking block's opaque state, known at its end. */
  endOpaque?: Opaque;
}

/** The start of a `content_block_delta` event, up to its index. */
const DELTA_HEAD = 'event: content_block_delta\ndata: {"type":"content_block_delta","index":';
/** What follows the index in a block's delta, up to its text. */
const DELTA_KIND = {
  text: ',"delta":{"type":"text_delta","text":',
  reasoning: ',"delta":{"type":"thinking_delta","thinking":',
  tool: ',"delta":{"type":"input_json_delta","partial_json":',
};

/** Canonical events → a Messages SSE stream for the client. */
export function messagesEncoder(write: (text: string) => void, info: AnswerInfo): StreamEncoder {
  let index = -1;

  const ev = (type: string, payload: Json) =>
    write(sseLine(JSON.stringify({ type, ...payload }), type));

  // Blocks never interleave: one is written at a time, the others wait their turn.
  const blocks = sequencedContent<BlockData>({
    /** A block's start (and a thinking block carrying a call's opaque state first). */
    begin(block) {
      if (block.kind === "tool" && block.data.opaque) {
        index++;
        ev("content_block_start", {
          index,
          content_block: { type: "thinking", thinking: "", signature: "" },
        });
        ev("content_block_delta", {
          index,
          delta: { type: "signature_delta", signature: info.token(block.data.opaque) },
        });
        ev("content_block_stop", { index });
      }
      index++;
      const content_block = block.kind === "text"
        ? { type: "text", text: "" }
        : block.kind === "reasoning"
        ? { type: "thinking", thinking: "", signature: "" }
        : { type: "tool_use", id: block.id, name: block.data.name ?? "", input: {} };
      ev("content_block_start", { index, content_block });
    },
    delta(block, text) {
      if (block.kind === "reasoning") block.data.text += text;
      // The event as `ev` writes it, built as text: one per delta, the most of a stream.
      write(
        DELTA_HEAD + index + DELTA_KIND[block.kind] + JSON.stringify(text) + "}}\n\n",
      );
    },
    end(block) {
      if (block.kind === "reasoning") {
        const opaque = block.data.endOpaque ??
          { provider: "", kind: "thinking-signature", value: "" };
        ev("content_block_delta", {
          index,
          delta: { type: "signature_delta", signature: info.token(opaque, block.data.text) },
        });
      }
      ev("content_block_stop", { index });
    },
  }, {
    data: (event) =>
      event.type === "tool-input-start"
        ? { name: event.name, ...(event.opaque ? { opaque: event.opaque } : {}), text: "" }
        : { text: "" },
    ended: (data, opaque) => ({ ...data, endOpaque: opaque }),
    hosted(part) {
      const id = part.id || newId("srvtoolu_");
      index++;
      ev("content_block_start", {
        index,
        content_block: {
          type: "server_tool_use",
          id,
          name: "web_search",
          input: { query: part.query ?? "" },
        },
      });
      ev("content_block_stop", { index });
      index++;
      ev("content_block_start", {
        index,
        content_block: { type: "web_search_tool_result", tool_use_id: id, content: [] },
      });
      ev("content_block_stop", { index });
    },
  });

  return streamEncoder({
    open(counted) {
      // The input as the upstream's first event counted it (Messages, Gemini); an upstream that
      // counts it only at the end (Responses, chat) is shown the gateway's estimate here, and its
      // own count in `message_delta` (clients that read input only here, LangChain, see a figure).
      const usage = counted.input > 0 ? counted : { ...counted, input: info.inputEstimate ?? 0 };
      ev("message_start", {
        message: {
          id: info.id,
          type: "message",
          role: "assistant",
          content: [],
          model: info.model,
          stop_reason: null,
          stop_sequence: null,
          usage: { ...encodeTokenUsage(usage), output_tokens: Math.min(usage.output, 1) },
        },
      });
    },
    content: blocks.content,
    finish(event, usage) {
      blocks.closeAll();
      ev("message_delta", {
        delta: { stop_reason: encodeStopReason(event.reason), stop_sequence: null },
        usage: encodeTokenUsage(usage),
      });
      ev("message_stop", {});
    },
    error: (message, event) => write(errorEvent(message, event?.status)),
  });
}
