/**
 * Reading usage from Responses answers and streams: tokens, the served tier, hosted tool calls
 * (`openai-responses.md` §4–6), and the objects an answer creates upstream.
 */
import type { UsageView } from "../../translate/codec.ts";
import { encodeSse } from "../../http/sse.ts";
import { encodeTokenUsage } from "./token_usage.ts";
import type { HostedTool, Usage } from "../../billing/price.ts";
import { emptyUsage } from "../../billing/price.ts";
import { asArray, asObject, eventJson } from "../../http/json.ts";
import {
  addCalls,
  type CreatedObject,
  DELTA,
  Meter,
  openaiUsage,
  type StreamMeter,
} from "../../billing/usage.ts";

type Json = Record<string, unknown>;

/** Responses output item types that are billed hosted tool calls. */
const RESPONSES_TOOL_ITEMS = new Map<string, HostedTool>([
  ["web_search_call", "web_search"],
  ["file_search_call", "file_search"],
  ["code_interpreter_call", "code_interpreter"],
  ["image_generation_call", "image_generation"],
  ["x_search_call", "x_search"],
]);

/**
 * Hosted tool calls in Responses output items; code interpreter is counted once per container
 * (it is priced per container session).
 */
function countResponsesTools(u: Usage, items: unknown[]): void {
  const containers = new Set<string>();
  for (const raw of items) {
    const item = asObject(raw);
    const tool = typeof item.type === "string" ? RESPONSES_TOOL_ITEMS.get(item.type) : undefined;
    if (!tool) continue;
    if (tool === "code_interpreter") {
      const container = JSON.stringify(item.container_id ?? item.id ?? null);
      if (containers.has(container)) continue;
      containers.add(container);
    }
    addCalls(u, tool, 1);
  }
}

/**
 * The objects a whole Responses object created: itself, its output items (a later input may refer
 * to them by id), and code interpreter containers.
 */
export function responsesObjects(response: unknown): CreatedObject[] {
  const r = asObject(response);
  const out: CreatedObject[] = [];
  if (typeof r.id === "string") out.push({ id: r.id, kind: "response" });
  for (const raw of asArray(r.output)) {
    const item = asObject(raw);
    if (typeof item.id === "string") out.push({ id: item.id, kind: "item" });
    if (typeof item.container_id === "string") {
      out.push({ id: item.container_id, kind: "container" });
    }
  }
  return out;
}

/** A whole Responses object (JSON answer or a terminal event's `response`). */
export function responsesUsage(response: unknown): Usage | null {
  const r = asObject(response);
  const usage = openaiUsage(r.usage);
  if (!usage) return null;
  if (typeof r.service_tier === "string") usage.serviceTier = r.service_tier;
  countResponsesTools(usage, asArray(r.output));
  return usage;
}

const RESPONSES_TERMINAL = new Set([
  "response.completed",
  "response.incomplete",
  "response.failed",
]);

/** Meter for Responses streams: usage, tier and tool calls from the terminal event's response. */
export function responsesMeter(): StreamMeter {
  const m = new Meter();
  const tools = new Map<string, Json>();
  return m.view((e) => {
    const name = e.event;
    if (name.endsWith(".delta")) {
      if (!name.startsWith("response.audio")) m.member(e, DELTA);
    } else if (name === "response.output_item.added") {
      const item = asObject(eventJson(e).item);
      m.remember(item.id, "item");
      if (item.type === "code_interpreter_call") m.remember(item.container_id, "container");
      if (typeof item.type === "string" && RESPONSES_TOOL_ITEMS.has(item.type)) {
        tools.set(typeof item.id === "string" ? item.id : `#${tools.size}`, item);
        m.reported ??= emptyUsage();
        m.reported.toolCalls = undefined;
        countResponsesTools(m.reported, [...tools.values()]);
      }
    } else if (name === "response.created") {
      m.remember(asObject(eventJson(e).response).id, "response");
    } else if (RESPONSES_TERMINAL.has(name)) {
      const final = responsesUsage(asObject(eventJson(e).response));
      if (final) {
        m.reported = final;
        m.done = true;
      }
      m.ended = true;
    }
  });
}

/** How Responses answers show a usage the gateway decided: `usage`, and the terminal event's. */
export const responsesUsageView: UsageView = {
  answer: (a) => typeof a.id === "string" && Array.isArray(a.output),
  json: (answer, usage) => ({ ...answer, usage: encodeTokenUsage(usage) }),
  event: () => ({
    carries: (e) => RESPONSES_TERMINAL.has(e.event),
    write(e, usage) {
      // A copy: the parsed event is shared with its other readers.
      const data = eventJson(e);
      const shown = {
        ...data,
        response: { ...asObject(data.response), usage: encodeTokenUsage(usage) },
      };
      return encodeSse(JSON.stringify(shown), e.event);
    },
  }),
};
