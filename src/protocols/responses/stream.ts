/**
 * Responses streams (`openai-responses.md` §4): the decoder reads an upstream's named events into
 * canonical events; the encoder writes the exact grammar — `response.created`,
 * `response.in_progress`, each output item added, its parts and deltas, done, one item at a time
 * (see `translate/sequence.ts`), then `response.completed` (or `response.incomplete`) carrying
 * every item and the usage; every event has its `sequence_number`. The cut-stream `error` event
 * is here too.
 */
import { encodeSse, type SseEvent } from "../../http/sse.ts";
import type { AnswerInfo, StreamDecoder, StreamEncoder } from "../../translate/codec.ts";
import type { CanonicalEvent, Json, Opaque, TokenUsage } from "../../translate/ir.ts";
import { zeroUsage } from "../../translate/ir.ts";
import { fromResponses } from "../../translate/finish.ts";
import { isObject } from "../../translate/read.ts";
import { type Block, sequencer } from "../../translate/sequence.ts";
import { parseArguments } from "../../translate/tool_ids.ts";
import {
  callItem,
  decodeItem,
  itemId,
  reasoningItem,
  responseObject,
  usageFromResponses,
} from "./codec.ts";

/** The `error` event sent when the upstream cuts a stream mid-way (openai-node throws on it). */
export function streamErrorEvent(): Uint8Array {
  const data = {
    type: "error",
    code: "upstream_error",
    message: "The upstream provider ended the stream unexpectedly.",
    param: null,
  };
  return new TextEncoder().encode(encodeSse(JSON.stringify(data), "error"));
}

function parse(event: SseEvent): Json {
  try {
    const value = JSON.parse(event.data());
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}

/** Upstream Responses events → canonical events; `provider` tags encrypted reasoning. */
export function responsesDecoder(
  emit: (event: CanonicalEvent) => void,
  provider: string,
): StreamDecoder {
  /** Output items by item id: what they are and what was seen of them. */
  const items = new Map<
    string,
    { kind: string; id: string; args?: boolean; raw?: string; summary?: number }
  >();
  const texts = new Set<string>();
  let calls = 0;
  let done = false;
  const itemKey = (data: Json) => String(data.item_id ?? data.output_index ?? "");
  const closeTexts = (item: string) => {
    for (const key of [...texts]) {
      if (key.startsWith(`${item}:`)) {
        texts.delete(key);
        emit({ type: "text-end", id: key });
      }
    }
  };
  return {
    push(event) {
      if (done) return;
      const data = parse(event);
      switch (data.type ?? event.event) {
        case "response.created": {
          const response = isObject(data.response) ? data.response : {};
          emit({
            type: "start",
            ...(typeof response.id === "string" ? { id: response.id } : {}),
            ...(typeof response.model === "string" ? { model: response.model } : {}),
          });
          return;
        }
        case "response.output_item.added": {
          const item = isObject(data.item) ? data.item : {};
          const key = String(item.id ?? data.output_index ?? "");
          if (item.type === "reasoning") {
            items.set(key, { kind: "reasoning", id: key || `rs${items.size}` });
            emit({ type: "reasoning-start", id: items.get(key)!.id });
          } else if (item.type === "function_call" || item.type === "custom_tool_call") {
            const id = String(item.call_id ?? key);
            const custom = item.type === "custom_tool_call";
            items.set(key, { kind: custom ? "custom" : "function", id, args: false, raw: "" });
            calls++;
            emit({
              type: "tool-input-start",
              id,
              name: decodeItem({ ...item, arguments: "" }, provider)
                .flatMap((p) => p.type === "tool-call" ? [p.name] : [])[0] ??
                String(item.name ?? ""),
              ...(custom ? { kind: "custom" as const } : {}),
            });
          } else items.set(key, { kind: String(item.type ?? ""), id: key });
          return;
        }
        case "response.output_text.delta": {
          const key = `${itemKey(data)}:${data.content_index ?? 0}`;
          if (typeof data.delta !== "string" || !data.delta) return;
          if (!texts.has(key)) {
            texts.add(key);
            emit({ type: "text-start", id: key });
          }
          emit({ type: "text-delta", id: key, delta: data.delta });
          return;
        }
        case "response.refusal.delta": {
          const key = `${itemKey(data)}:${data.content_index ?? 0}`;
          if (typeof data.delta !== "string" || !data.delta) return;
          if (!texts.has(key)) {
            texts.add(key);
            emit({ type: "text-start", id: key });
          }
          emit({ type: "text-delta", id: key, delta: data.delta });
          return;
        }
        case "response.output_text.done":
        case "response.refusal.done": {
          const key = `${itemKey(data)}:${data.content_index ?? 0}`;
          if (texts.delete(key)) emit({ type: "text-end", id: key });
          return;
        }
        case "response.reasoning_summary_text.delta":
        case "response.reasoning_text.delta": {
          const item = items.get(itemKey(data));
          if (!item || typeof data.delta !== "string" || !data.delta) return;
          const index = typeof data.summary_index === "number" ? data.summary_index : 0;
          const gap = item.summary !== undefined && item.summary !== index ? "\n\n" : "";
          item.summary = index;
          emit({ type: "reasoning-delta", id: item.id, delta: gap + data.delta });
          return;
        }
        case "response.function_call_arguments.delta": {
          const item = items.get(itemKey(data));
          if (!item || typeof data.delta !== "string" || !data.delta) return;
          item.args = true;
          emit({ type: "tool-input-delta", id: item.id, delta: data.delta });
          return;
        }
        case "response.custom_tool_call_input.delta": {
          const item = items.get(itemKey(data));
          if (item && typeof data.delta === "string") item.raw += data.delta;
          return;
        }
        case "response.output_item.done": {
          const raw = isObject(data.item) ? data.item : {};
          const key = String(raw.id ?? data.output_index ?? "");
          const item = items.get(key);
          items.delete(key);
          if (raw.type === "message") return closeTexts(key);
          if (raw.type === "reasoning" && item) {
            const encrypted = typeof raw.encrypted_content === "string"
              ? raw.encrypted_content
              : "";
            const opaque: Opaque | undefined = encrypted
              ? { provider, kind: "encrypted-reasoning", value: encrypted, itemId: key }
              : undefined;
            emit({ type: "reasoning-end", id: item.id, ...(opaque ? { opaque } : {}) });
          } else if (raw.type === "function_call" && item) {
            if (!item.args && typeof raw.arguments === "string" && raw.arguments) {
              emit({ type: "tool-input-delta", id: item.id, delta: raw.arguments });
            }
            emit({ type: "tool-input-end", id: item.id });
          } else if (raw.type === "custom_tool_call" && item) {
            const input = item.raw || (typeof raw.input === "string" ? raw.input : "");
            emit({ type: "tool-input-delta", id: item.id, delta: JSON.stringify({ input }) });
            emit({ type: "tool-input-end", id: item.id });
          } else if (raw.type === "web_search_call") {
            for (const part of decodeItem(raw, provider)) {
              if (part.type === "hosted-call") emit({ type: "hosted-call", part });
            }
          }
          return;
        }
        case "response.completed":
        case "response.incomplete": {
          done = true;
          const response = isObject(data.response) ? data.response : {};
          const incomplete = isObject(response.incomplete_details)
            ? response.incomplete_details.reason
            : undefined;
          emit({
            type: "finish",
            reason: fromResponses(response.status, incomplete, calls > 0),
            ...(typeof incomplete === "string" ? { raw: incomplete } : {}),
            usage: usageFromResponses(response.usage),
          });
          return;
        }
        case "response.failed": {
          done = true;
          const response = isObject(data.response) ? data.response : {};
          const error = isObject(response.error) ? response.error : {};
          emit({
            type: "error",
            message: typeof error.message === "string" ? error.message : "The upstream failed.",
          });
          return;
        }
        case "error":
          done = true;
          emit({
            type: "error",
            message: typeof data.message === "string" ? data.message : "The upstream failed.",
            ...(typeof data.code === "string" ? { code: data.code } : {}),
          });
          return;
      }
    },
    end() {},
  };
}

interface ItemData {
  /** The item's id and place in `output`. */
  itemId: string;
  index: number;
  name?: string;
  custom?: boolean;
  text: string;
  opaque?: Opaque;
  /** A reasoning block's summary part was opened. */
  summary?: boolean;
}

/** Canonical events → a Responses SSE stream for the client. */
export function responsesEncoder(write: (text: string) => void, info: AnswerInfo): StreamEncoder {
  let sequence = 0;
  let started = false;
  let done = false;
  const output: Json[] = [];
  let usage: TokenUsage = zeroUsage();
  const ev = (type: string, payload: Json) =>
    write(encodeSse(JSON.stringify({ type, sequence_number: sequence++, ...payload }), type));

  const start = () => {
    if (started) return;
    started = true;
    ev("response.created", { response: responseObject(info, [], null, null) });
    ev("response.in_progress", { response: responseObject(info, [], null, null) });
  };

  /** Reserves the next output place. */
  const place = (prefix: string): { itemId: string; index: number } => {
    const index = output.length;
    output.push({});
    return { itemId: itemId(prefix, info, index), index };
  };

  const added = (index: number, item: Json) =>
    ev("response.output_item.added", { output_index: index, item });
  const itemDone = (index: number, item: Json) => {
    output[index] = item;
    ev("response.output_item.done", { output_index: index, item });
  };

  const message = (d: ItemData, status: string) => ({
    id: d.itemId,
    type: "message",
    status,
    role: "assistant",
    content: status === "completed"
      ? [{ type: "output_text", text: d.text, annotations: [], logprobs: [] }]
      : [],
  });

  const writeReasoningOnly = (opaque: Opaque) => {
    const { itemId: id, index } = place("rs");
    const item = reasoningItem(id, "", opaque, info);
    added(index, { ...item, encrypted_content: undefined });
    itemDone(index, item);
  };

  const blocks = sequencer<ItemData>({
    begin(block: Block<ItemData>) {
      const d = block.data;
      if (block.kind === "tool" && d.opaque) writeReasoningOnly(d.opaque);
      const slot = place(block.kind === "text" ? "msg" : block.kind === "reasoning" ? "rs" : "fc");
      d.itemId = slot.itemId;
      d.index = slot.index;
      if (block.kind === "text") {
        added(d.index, message(d, "in_progress"));
        ev("response.content_part.added", {
          item_id: d.itemId,
          output_index: d.index,
          content_index: 0,
          part: { type: "output_text", text: "", annotations: [], logprobs: [] },
        });
      } else if (block.kind === "reasoning") {
        added(d.index, { id: d.itemId, type: "reasoning", summary: [] });
      } else {
        const item = callItem(d.itemId, {
          id: block.id,
          name: d.name!,
          input: {},
          kind: d.custom ? "custom" : undefined,
        }, info);
        added(d.index, {
          ...item,
          status: "in_progress",
          ...(item.type === "custom_tool_call" ? { input: "" } : { arguments: "" }),
        });
      }
    },
    delta(block, text) {
      const d = block.data;
      d.text += text;
      if (block.kind === "text") {
        ev("response.output_text.delta", {
          item_id: d.itemId,
          output_index: d.index,
          content_index: 0,
          delta: text,
          logprobs: [],
        });
      } else if (block.kind === "reasoning") {
        if (!d.summary) {
          d.summary = true;
          ev("response.reasoning_summary_part.added", {
            item_id: d.itemId,
            output_index: d.index,
            summary_index: 0,
            part: { type: "summary_text", text: "" },
          });
        }
        ev("response.reasoning_summary_text.delta", {
          item_id: d.itemId,
          output_index: d.index,
          summary_index: 0,
          delta: text,
        });
      } else if (!d.custom) {
        ev("response.function_call_arguments.delta", {
          item_id: d.itemId,
          output_index: d.index,
          delta: text,
        });
      }
    },
    end(block) {
      const d = block.data;
      if (block.kind === "text") {
        ev("response.output_text.done", {
          item_id: d.itemId,
          output_index: d.index,
          content_index: 0,
          text: d.text,
          logprobs: [],
        });
        ev("response.content_part.done", {
          item_id: d.itemId,
          output_index: d.index,
          content_index: 0,
          part: { type: "output_text", text: d.text, annotations: [], logprobs: [] },
        });
        itemDone(d.index, message(d, "completed"));
      } else if (block.kind === "reasoning") {
        if (d.summary) {
          ev("response.reasoning_summary_text.done", {
            item_id: d.itemId,
            output_index: d.index,
            summary_index: 0,
            text: d.text,
          });
          ev("response.reasoning_summary_part.done", {
            item_id: d.itemId,
            output_index: d.index,
            summary_index: 0,
            part: { type: "summary_text", text: d.text },
          });
        }
        itemDone(d.index, reasoningItem(d.itemId, d.text, d.opaque, info));
      } else {
        const input = parseArguments(d.text);
        const item = callItem(d.itemId, {
          id: block.id,
          name: d.name!,
          input,
          kind: d.custom ? "custom" : undefined,
        }, info);
        if (item.type === "custom_tool_call") {
          ev("response.custom_tool_call_input.delta", {
            item_id: d.itemId,
            output_index: d.index,
            delta: item.input,
          });
          ev("response.custom_tool_call_input.done", {
            item_id: d.itemId,
            output_index: d.index,
            input: item.input,
          });
        } else {
          if (!d.text) {
            ev("response.function_call_arguments.delta", {
              item_id: d.itemId,
              output_index: d.index,
              delta: item.arguments,
            });
          }
          ev("response.function_call_arguments.done", {
            item_id: d.itemId,
            output_index: d.index,
            arguments: item.arguments,
          });
        }
        itemDone(d.index, item);
      }
    },
  });

  const fresh = (): ItemData => ({ itemId: "", index: -1, text: "" });

  const fail = (message: string, code = "upstream_error") => {
    if (done) return;
    done = true;
    ev("error", { code, message, param: null });
  };

  return {
    push(event) {
      if (done) return;
      switch (event.type) {
        case "start":
          if (event.usage) usage = { ...usage, ...event.usage };
          return start();
        case "text-start":
          start();
          return blocks.add(event.id, "text", fresh());
        case "reasoning-start":
          start();
          return blocks.add(event.id, "reasoning", fresh());
        case "tool-input-start":
          start();
          return blocks.add(event.id, "tool", {
            ...fresh(),
            name: event.name,
            custom: event.kind === "custom" || info.customTools?.has(event.name),
            ...(event.opaque ? { opaque: event.opaque } : {}),
          });
        case "text-delta":
        case "reasoning-delta":
        case "tool-input-delta":
          return blocks.push(event.id, event.delta);
        case "text-end":
        case "tool-input-end":
          return blocks.end(event.id);
        case "reasoning-end":
          return blocks.end(event.id, (d) => event.opaque ? { ...d, opaque: event.opaque } : d);
        case "hosted-call": {
          start();
          blocks.closeAll();
          const { itemId: id, index } = place("ws");
          const item = {
            id: event.part.id || id,
            type: "web_search_call",
            status: "completed",
            action: { type: "search", query: event.part.query ?? "" },
          };
          added(index, { ...item, status: "in_progress" });
          itemDone(index, item);
          return;
        }
        case "usage":
          usage = { ...usage, ...event.usage };
          return;
        case "finish": {
          start();
          blocks.closeAll();
          if (event.usage) usage = event.usage;
          const response = responseObject(
            info,
            output.filter((item) => Object.keys(item).length),
            { reason: event.reason },
            usage,
          );
          ev(response.status === "completed" ? "response.completed" : "response.incomplete", {
            response,
          });
          done = true;
          return;
        }
        case "error":
          return fail(event.message, event.code ?? "upstream_error");
      }
    },
    fail: (message) => fail(message),
  };
}
