/**
 * A translated stream's answer, gathered from its canonical events (pure), for what needs the
 * whole answer once the stream ends (the conversation state the gateway keeps).
 */
import type {
  AssistantPart,
  CanonicalEvent,
  CanonicalResponse,
  FinishReason,
  Opaque,
  TokenUsage,
} from "./ir.ts";
import { zeroUsage } from "./ir.ts";
import { parseArguments } from "./tool_ids.ts";

/** Gathers a stream's canonical events. */
export interface Collector {
  push(event: CanonicalEvent): void;
  /** The answer, once a `finish` event arrived; null before. */
  result(): CanonicalResponse | null;
}

/** Gathers canonical events into a `CanonicalResponse`. */
export function collect(): Collector {
  const parts: AssistantPart[] = [];
  const open = new Map<string, { part: AssistantPart; args?: string }>();
  let id = "";
  let model = "";
  let usage: TokenUsage = zeroUsage();
  let finish: { reason: FinishReason; raw?: string } | null = null;
  const add = (key: string, part: AssistantPart, args?: string) => {
    parts.push(part);
    open.set(key, { part, args });
  };
  const close = (key: string, opaque?: Opaque) => {
    const entry = open.get(key);
    if (!entry) return;
    open.delete(key);
    if (entry.part.type === "tool-call") entry.part.input = parseArguments(entry.args ?? "");
    if (opaque && (entry.part.type === "text" || entry.part.type === "reasoning")) {
      entry.part.opaque = opaque;
    }
  };
  return {
    push(event) {
      switch (event.type) {
        case "start":
          id = event.id ?? id;
          model = event.model ?? model;
          if (event.usage) usage = { ...usage, ...event.usage };
          return;
        case "text-start":
          return add(event.id, { type: "text", text: "" });
        case "reasoning-start":
          return add(event.id, { type: "reasoning", text: "" });
        case "tool-input-start":
          return add(event.id, {
            type: "tool-call",
            id: event.id,
            name: event.name,
            input: {},
            ...(event.kind ? { kind: event.kind } : {}),
            ...(event.opaque ? { opaque: event.opaque } : {}),
          }, "");
        case "text-delta":
        case "reasoning-delta": {
          const entry = open.get(event.id);
          if (entry && (entry.part.type === "text" || entry.part.type === "reasoning")) {
            entry.part.text += event.delta;
          }
          return;
        }
        case "tool-input-delta": {
          const entry = open.get(event.id);
          if (entry) entry.args = (entry.args ?? "") + event.delta;
          return;
        }
        case "text-end":
        case "reasoning-end":
          return close(event.id, event.opaque);
        case "tool-input-end":
          return close(event.id);
        case "hosted-call":
          parts.push(event.part);
          return;
        case "usage":
          usage = { ...usage, ...event.usage };
          return;
        case "finish":
          for (const key of [...open.keys()]) close(key);
          if (event.usage) usage = event.usage;
          finish = { reason: event.reason, ...(event.raw ? { raw: event.raw } : {}) };
          return;
        case "error":
          return;
      }
    },
    result() {
      return finish && { id, model, content: parts, finish, usage };
    },
  };
}
