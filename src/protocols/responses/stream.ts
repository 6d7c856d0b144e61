/**
 * Responses streams (`openai-responses.md` §6): the decoder reads an upstream's named events into
 * canonical events; the encoder writes the exact grammar — `response.created`,
 * `response.in_progress`, each output item added, its parts and deltas, done, one item at a time
 * (see `translate/sequence.ts`), then `response.completed` (or `response.incomplete`) carrying
 * every item and the usage; every event has its `sequence_number`. Its items are those of the
 * same answer whole (`encode_response.ts`), with the same ids: consecutive text is one message.
 * Errors are in `errors.ts`.
 */
import { eventJson, isObject } from "../../http/json.ts";
import { sseLine } from "../../http/sse.ts";
import type { AnswerInfo, StreamDecoder, StreamEncoder } from "../../translate/codec.ts";
import type { CanonicalEvent, Json, Opaque } from "../../translate/ir.ts";
import { type Block, sequencedContent } from "../../translate/sequence.ts";
import { streamEncoder } from "../../translate/stream_encoder.ts";
import { parseArguments } from "../../translate/tool_ids.ts";
import { encryptedReasoning, hostedCall, isRefusal, outputSummary } from "./decode_response.ts";
import {
  callForm,
  callItem,
  callPrefix,
  messageItem,
  reasoningItem,
  responseObject,
  webSearchItem,
} from "./encode_response.ts";
import { errorData, readError } from "./errors.ts";
import { itemId } from "./item_ids.ts";
import { flatName } from "./namespaces.ts";
import { decodeStatus } from "./status.ts";
import { decodeTokenUsage } from "./token_usage.ts";

// ---------------------------------------------------------------------------------------------
// Upstream events → canonical

/** What the decoder keeps of one upstream output item. */
interface UpstreamItem {
  kind: "message" | "reasoning" | "function" | "custom" | "other";
  /** The canonical block id: the call id for calls, the item's key otherwise. */
  id: string;
  /** Something of its content (text, reasoning, arguments) was emitted. */
  streamed: boolean;
  /** A free-form call's input, gathered until the call is done. */
  raw: string;
  /** The reasoning part the last reasoning delta belonged to. */
  part?: string;
  /** A message's text blocks: open ones, and every content index seen. */
  open: Set<number>;
  seen: Set<number>;
}

/** Upstream Responses events → canonical events; `provider` tags encrypted reasoning. */
export function responsesDecoder(
  emit: (event: CanonicalEvent) => void,
  provider: string,
): StreamDecoder {
  /** Items by upstream item id, and by output index (events may name either). */
  const byId = new Map<string, UpstreamItem>();
  const byIndex = new Map<number, UpstreamItem>();
  let calls = 0;
  let refused = false;
  let done = false;

  const keyOf = (id: unknown, index: unknown): string =>
    typeof id === "string" && id ? id : `#${typeof index === "number" ? index : byIndex.size}`;

  const find = (data: Json): UpstreamItem | undefined =>
    (typeof data.item_id === "string" ? byId.get(data.item_id) : undefined) ??
      (typeof data.output_index === "number" ? byIndex.get(data.output_index) : undefined);

  /** Registers an item (from `output_item.added`, or `done` when no `added` came). */
  const register = (raw: Json, index: unknown): UpstreamItem => {
    const key = keyOf(raw.id, index);
    const type = raw.type;
    const kind = type === "message"
      ? "message"
      : type === "reasoning"
      ? "reasoning"
      : type === "function_call"
      ? "function"
      : type === "custom_tool_call"
      ? "custom"
      : "other";
    const callId = typeof raw.call_id === "string" && raw.call_id ? raw.call_id : key;
    const item: UpstreamItem = {
      kind,
      id: kind === "function" || kind === "custom" ? callId : key,
      streamed: false,
      raw: "",
      open: new Set(),
      seen: new Set(),
    };
    if (typeof raw.id === "string" && raw.id) byId.set(raw.id, item);
    if (typeof index === "number") byIndex.set(index, item);
    if (kind === "reasoning") emit({ type: "reasoning-start", id: item.id });
    else if (kind === "function" || kind === "custom") {
      calls++;
      emit({
        type: "tool-input-start",
        id: item.id,
        name: flatName(String(raw.name ?? ""), raw.namespace),
        ...(kind === "custom" ? { kind: "custom" as const } : {}),
      });
    }
    return item;
  };

  const textId = (item: UpstreamItem, index: number) => `${item.id}:${index}`;

  const textDelta = (item: UpstreamItem, index: number, delta: string) => {
    item.seen.add(index);
    if (!item.open.has(index)) {
      item.open.add(index);
      emit({ type: "text-start", id: textId(item, index) });
    }
    emit({ type: "text-delta", id: textId(item, index), delta });
  };

  const textEnd = (item: UpstreamItem, index: number) => {
    if (item.open.delete(index)) emit({ type: "text-end", id: textId(item, index) });
  };

  /** A whole text given at its end (no delta came for it). */
  const wholeText = (item: UpstreamItem, index: number, text: unknown) => {
    if (item.seen.has(index) || typeof text !== "string" || !text) return;
    textDelta(item, index, text);
    textEnd(item, index);
  };

  const reasoningDelta = (item: UpstreamItem, part: string, delta: string) => {
    const gap = item.part !== undefined && item.part !== part ? "\n\n" : "";
    item.part = part;
    item.streamed = true;
    emit({ type: "reasoning-delta", id: item.id, delta: gap + delta });
  };

  const argumentsDelta = (item: UpstreamItem, delta: unknown) => {
    if (typeof delta !== "string" || !delta) return;
    item.streamed = true;
    emit({ type: "tool-input-delta", id: item.id, delta });
  };

  const itemDone = (raw: Json, index: unknown) => {
    const item = (typeof raw.id === "string" ? byId.get(raw.id) : undefined) ??
      (typeof index === "number" ? byIndex.get(index) : undefined) ?? register(raw, index);
    switch (item.kind) {
      case "message": {
        const content = Array.isArray(raw.content) ? raw.content : [];
        content.forEach((part, i) => {
          if (isObject(part)) {
            wholeText(item, i, part.type === "refusal" ? part.refusal : part.text);
          }
        });
        if (isRefusal(raw)) refused = true;
        for (const i of [...item.open]) textEnd(item, i);
        return;
      }
      case "reasoning": {
        if (!item.streamed) {
          const summary = outputSummary(raw);
          if (summary) reasoningDelta(item, "summary", summary);
        }
        const opaque = encryptedReasoning(raw, provider);
        emit({ type: "reasoning-end", id: item.id, ...(opaque ? { opaque } : {}) });
        return;
      }
      case "function":
        if (!item.streamed) argumentsDelta(item, raw.arguments);
        emit({ type: "tool-input-end", id: item.id });
        return;
      case "custom": {
        const input = item.raw || (typeof raw.input === "string" ? raw.input : "");
        emit({ type: "tool-input-delta", id: item.id, delta: JSON.stringify({ input }) });
        emit({ type: "tool-input-end", id: item.id });
        return;
      }
      case "other":
        if (raw.type === "web_search_call") emit({ type: "hosted-call", part: hostedCall(raw) });
        return;
    }
  };

  const finish = (response: Json, status: string) => {
    const incomplete = isObject(response.incomplete_details)
      ? response.incomplete_details.reason
      : undefined;
    const reason = decodeStatus(response.status ?? status, incomplete, calls > 0, refused);
    emit({
      type: "finish",
      reason,
      ...(typeof incomplete === "string" ? { raw: incomplete } : {}),
      usage: decodeTokenUsage(response.usage),
    });
  };

  return {
    push(event) {
      if (done) return;
      const data = eventJson(event);
      const type = typeof data.type === "string" ? data.type : event.event;
      const response = isObject(data.response) ? data.response : {};
      switch (type) {
        case "response.created":
          // Its usage is null by the protocol (counted at `response.completed`), unless a server
          // counts the input already.
          emit({
            type: "start",
            ...(typeof response.id === "string" ? { id: response.id } : {}),
            ...(typeof response.model === "string" ? { model: response.model } : {}),
            ...(isObject(response.usage) ? { usage: decodeTokenUsage(response.usage) } : {}),
          });
          return;
        case "response.output_item.added":
          if (isObject(data.item) && !find({ ...data, item_id: data.item.id })) {
            register(data.item, data.output_index);
          }
          return;
        case "response.output_text.delta":
        case "response.refusal.delta": {
          const item = find(data);
          if (type === "response.refusal.delta") refused = true;
          if (item && typeof data.delta === "string" && data.delta) {
            textDelta(
              item,
              typeof data.content_index === "number" ? data.content_index : 0,
              data.delta,
            );
          }
          return;
        }
        case "response.output_text.done":
        case "response.refusal.done": {
          const item = find(data);
          if (!item) return;
          const index = typeof data.content_index === "number" ? data.content_index : 0;
          wholeText(item, index, type === "response.refusal.done" ? data.refusal : data.text);
          textEnd(item, index);
          return;
        }
        case "response.reasoning_summary_text.delta":
        case "response.reasoning_text.delta": {
          const item = find(data);
          if (item?.kind !== "reasoning" || typeof data.delta !== "string" || !data.delta) return;
          const part = type === "response.reasoning_text.delta"
            ? `content${data.content_index ?? 0}`
            : `summary${data.summary_index ?? 0}`;
          reasoningDelta(item, part, data.delta);
          return;
        }
        case "response.function_call_arguments.delta": {
          const item = find(data);
          if (item?.kind === "function") argumentsDelta(item, data.delta);
          return;
        }
        case "response.function_call_arguments.done": {
          const item = find(data);
          if (item?.kind === "function" && !item.streamed) argumentsDelta(item, data.arguments);
          return;
        }
        case "response.custom_tool_call_input.delta": {
          const item = find(data);
          if (item?.kind === "custom" && typeof data.delta === "string") item.raw += data.delta;
          return;
        }
        case "response.custom_tool_call_input.done": {
          const item = find(data);
          if (item?.kind === "custom" && !item.raw && typeof data.input === "string") {
            item.raw = data.input;
          }
          return;
        }
        case "response.output_item.done":
          if (isObject(data.item)) itemDone(data.item, data.output_index);
          return;
        case "response.completed":
        case "response.incomplete":
          done = true;
          finish(response, type === "response.incomplete" ? "incomplete" : "completed");
          return;
        case "response.failed": {
          done = true;
          if (isObject(response.usage)) {
            emit({ type: "usage", usage: decodeTokenUsage(response.usage) });
          }
          emit(readError(response.error));
          return;
        }
        case "error":
          done = true;
          emit(readError(isObject(data.error) ? data.error : data));
          return;
      }
    },
    end() {},
  };
}

// ---------------------------------------------------------------------------------------------
// Canonical → client events

/** What the encoder keeps of one canonical block. */
interface ItemData {
  /** The output item's id and place, once it is written. */
  itemId: string;
  index: number;
  /** The item was added (reasoning is added at its first text, or at its end with state). */
  added: boolean;
  name?: string;
  /** A call's: how it is written (see `callForm`). */
  form?: ReturnType<typeof callForm>;
  text: string;
  /** Opaque state: a reasoning item's, or a call's (written on a reasoning item before it). */
  opaque?: Opaque;
}

/** Canonical events → a Responses SSE stream for the client. */
export function responsesEncoder(write: (text: string) => void, info: AnswerInfo): StreamEncoder {
  let sequence = 0;
  /** Every output item so far, in place (finished ones in full). */
  const output: Json[] = [];

  const ev = (type: string, payload: Json) =>
    write(sseLine(JSON.stringify({ type, ...payload, sequence_number: sequence++ }), type));

  /**
   * A delta event as `ev` writes it (`type`, the item's fields, `before` the delta, the delta,
   * `after` it, the sequence number), built as text: one per delta, the most of a stream.
   */
  const delta = (type: string, d: ItemData, before: string, text: string, after: string) =>
    write(sseLine(
      '{"type":"' + type + '","item_id":' + JSON.stringify(d.itemId) + ',"output_index":' +
        d.index + before + '"delta":' + JSON.stringify(text) + after + '"sequence_number":' +
        sequence++ + "}",
      type,
    ));

  /** Writes `output_item.added` for the next output place; returns the place. */
  const add = (prefix: string, item: (id: string) => Json): { itemId: string; index: number } => {
    const index = output.length;
    const id = itemId(prefix, info.id, index);
    const added = item(id);
    output.push(added);
    ev("response.output_item.added", { output_index: index, item: added });
    return { itemId: String(added.id), index };
  };

  const finishItem = (index: number, item: Json) => {
    output[index] = item;
    ev("response.output_item.done", { output_index: index, item });
  };

  /** The item-scoped fields of an event. */
  const at = (d: ItemData, extra: Json = {}) => ({
    item_id: d.itemId,
    output_index: d.index,
    ...extra,
  });

  const openReasoning = (d: ItemData) => {
    if (d.added) return;
    d.added = true;
    Object.assign(d, add("rs", (id) => ({ id, type: "reasoning", summary: [] })));
  };

  /** An empty reasoning item carrying a call's opaque state, just before the call. */
  const callState = (opaque: Opaque) => {
    const place = add("rs", (id) => ({ id, type: "reasoning", summary: [] }));
    finishItem(place.index, reasoningItem(place.itemId, "", opaque, info));
  };

  const callOf = (block: Block<ItemData>, input: unknown, id: string) =>
    callItem(id, {
      id: block.id,
      name: block.data.name ?? "",
      input,
      ...(block.data.form === "custom" ? { kind: "custom" } : {}),
    }, info);

  /**
   * The message item whose text ended last, while nothing else has begun: text that follows goes
   * on in it (one message of consecutive text, as in a whole answer); it is finished when another
   * item begins, or at the end.
   */
  let message: ItemData | null = null;

  const closeMessage = () => {
    const d = message;
    if (!d) return;
    message = null;
    ev("response.output_text.done", at(d, { content_index: 0, text: d.text, logprobs: [] }));
    ev(
      "response.content_part.done",
      at(d, {
        content_index: 0,
        part: { type: "output_text", text: d.text, annotations: [], logprobs: [] },
      }),
    );
    finishItem(d.index, messageItem(d.itemId, d.text));
  };

  const blocks = sequencedContent<ItemData>({
    begin(block) {
      const d = block.data;
      if (block.kind !== "text") closeMessage();
      if (block.kind === "text" && message) {
        // Consecutive text: the same message goes on.
        const { itemId, index, text } = message;
        Object.assign(d, { itemId, index, text, added: true });
        message = null;
      } else if (block.kind === "text") {
        Object.assign(
          d,
          add("msg", (id) => ({
            id,
            type: "message",
            status: "in_progress",
            role: "assistant",
            content: [],
          })),
        );
        d.added = true;
        ev(
          "response.content_part.added",
          at(d, {
            content_index: 0,
            part: { type: "output_text", text: "", annotations: [], logprobs: [] },
          }),
        );
      } else if (block.kind === "tool") {
        if (d.opaque) callState(d.opaque);
        Object.assign(
          d,
          add(callPrefix(d.form!), (id) => {
            const item = callOf(block, {}, id);
            return {
              ...item,
              status: "in_progress",
              ...(d.form === "custom" ? { input: "" } : {}),
              ...(d.form === "function" ? { arguments: "" } : {}),
            };
          }),
        );
        d.added = true;
      }
      // A reasoning item is added at its first text, or at its end if it carries state.
    },
    delta(block, text) {
      const d = block.data;
      if (block.kind === "text") {
        d.text += text;
        delta("response.output_text.delta", d, ',"content_index":0,', text, ',"logprobs":[],');
      } else if (block.kind === "reasoning") {
        if (!d.added) {
          openReasoning(d);
          ev(
            "response.reasoning_summary_part.added",
            at(d, { summary_index: 0, part: { type: "summary_text", text: "" } }),
          );
        }
        d.text += text;
        delta("response.reasoning_summary_text.delta", d, ',"summary_index":0,', text, ",");
      } else {
        d.text += text;
        if (d.form === "function") {
          delta("response.function_call_arguments.delta", d, ",", text, ",");
        }
      }
    },
    end(block) {
      const d = block.data;
      if (block.kind === "text") message = d; // finished once something else begins
      else if (block.kind === "reasoning") {
        if (d.text) {
          ev("response.reasoning_summary_text.done", at(d, { summary_index: 0, text: d.text }));
          ev(
            "response.reasoning_summary_part.done",
            at(d, { summary_index: 0, part: { type: "summary_text", text: d.text } }),
          );
        } else if (!d.opaque) return; // nothing to show and nothing to replay: no item
        openReasoning(d);
        finishItem(d.index, reasoningItem(d.itemId, d.text, d.opaque, info));
      } else {
        const item = callOf(block, parseArguments(d.text), d.itemId);
        if (d.form === "custom") {
          ev("response.custom_tool_call_input.delta", at(d, { delta: item.input }));
          ev("response.custom_tool_call_input.done", at(d, { input: item.input }));
        } else if (d.form === "function") {
          if (!d.text) {
            ev("response.function_call_arguments.delta", at(d, { delta: item.arguments }));
          }
          ev(
            "response.function_call_arguments.done",
            at(d, { name: item.name, arguments: item.arguments }),
          );
        }
        finishItem(d.index, item);
      }
    },
  }, {
    data: (event) => ({
      itemId: "",
      index: -1,
      added: false,
      text: "",
      ...(event.type === "tool-input-start"
        ? {
          name: event.name,
          form: callForm(event, info),
          ...(event.opaque ? { opaque: event.opaque } : {}),
        }
        : {}),
    }),
    ended: (d, opaque) => ({ ...d, opaque }),
    hosted(part) {
      closeMessage();
      const place = add("ws", (id) => ({ ...webSearchItem(id, part), status: "in_progress" }));
      finishItem(place.index, webSearchItem(place.itemId, part));
    },
  });

  return streamEncoder({
    open() {
      ev("response.created", { response: responseObject(info, [], null, null) });
      ev("response.in_progress", { response: responseObject(info, [], null, null) });
    },
    content: blocks.content,
    finish(event, usage) {
      blocks.closeAll();
      closeMessage();
      const response = responseObject(info, [...output], { reason: event.reason }, usage);
      ev(`response.${response.status}`, { response });
    },
    error: (message, event) => ev("error", errorData(message, event?.code ?? "upstream_error")),
  });
}
