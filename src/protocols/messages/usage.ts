/**
 * Reading usage from Messages answers and streams (`anthropic-messages.md` §4–5): cache reads and
 * writes, server tool calls, and the container an answer uses (and, on a thread held upstream, the
 * answer the next turn continues).
 */
import type { UsageView } from "../../translate/codec.ts";
import { encodeSse } from "../../http/sse.ts";
import { encodeTokenUsage, mergeUsage } from "./token_usage.ts";
import type { HostedTool, Usage } from "../../billing/price.ts";
import { emptyUsage } from "../../billing/price.ts";
import { asArray, asObject, eventJson } from "../../http/json.ts";
import {
  addCalls,
  count,
  type CreatedObject,
  Meter,
  PARTIAL_JSON,
  type StreamMeter,
  TEXT,
  THINKING,
} from "../../billing/usage.ts";

type Json = Record<string, unknown>;

/**
 * The container a whole Messages answer created or used; with `threaded` (a thread held upstream),
 * the answer itself, which the next turn continues.
 */
export function messagesObjects(message: unknown, threaded = false): CreatedObject[] {
  const m = asObject(message);
  const id = asObject(m.container).id;
  return [
    ...(threaded && typeof m.id === "string" ? [{ id: m.id, kind: "response" as const }] : []),
    ...(typeof id === "string" ? [{ id, kind: "container" as const }] : []),
  ];
}

/** Anthropic server tools, by the name of their `server_tool_use` blocks. */
const ANTHROPIC_SERVER_TOOLS = new Map<string, HostedTool>([
  ["web_search", "web_search"],
  ["code_execution", "code_execution"],
  ["bash_code_execution", "code_execution"],
  ["text_editor_code_execution", "code_execution"],
]);

/**
 * Anthropic `usage`: `input_tokens` is uncached input only; cache reads and writes are separate,
 * writes split into 5-minute and 1-hour lifetimes when `cache_creation` is present;
 * `server_tool_use.web_search_requests` are web search calls.
 */
export function anthropicUsage(raw: unknown): Usage | null {
  const u = asObject(raw);
  if (!("input_tokens" in u || "output_tokens" in u)) return null;
  const creation = asObject(u.cache_creation);
  const written = count(u.cache_creation_input_tokens);
  const oneHour = Math.min(count(creation.ephemeral_1h_input_tokens), written);
  const usage: Usage = {
    ...emptyUsage(),
    inputTokens: count(u.input_tokens),
    cachedInputTokens: count(u.cache_read_input_tokens),
    cacheWriteTokens: written - oneHour,
    cacheWrite1hTokens: oneHour,
    outputTokens: count(u.output_tokens),
  };
  if (typeof u.service_tier === "string") usage.serviceTier = u.service_tier;
  addCalls(usage, "web_search", count(asObject(u.server_tool_use).web_search_requests));
  return usage;
}

/** Server tool calls in Messages content blocks other than web search (reported in usage). */
function countAnthropicBlocks(u: Usage, blocks: unknown[]): void {
  for (const raw of blocks) {
    const block = asObject(raw);
    if (block.type !== "server_tool_use" || typeof block.name !== "string") continue;
    const tool = ANTHROPIC_SERVER_TOOLS.get(block.name);
    if (tool && tool !== "web_search") addCalls(u, tool, 1);
  }
}

/** A whole Messages answer. */
export function messagesUsage(message: unknown): Usage | null {
  const m = asObject(message);
  const usage = anthropicUsage(m.usage);
  if (usage) countAnthropicBlocks(usage, asArray(m.content));
  return usage;
}

/**
 * Meter for Messages streams: `message_start` carries the input side, `message_delta` the
 * cumulative totals (its non-null fields replace those of `message_start`, so nothing is counted
 * twice, and a null never wipes a count); output from text, thinking and tool-input deltas.
 */
export function messagesMeter(threaded = false): StreamMeter {
  const m = new Meter();
  let merged: Json = {};
  const blocks: Json[] = [];
  const update = (usage: Json, final: boolean) => {
    merged = mergeUsage(merged, usage);
    const u = anthropicUsage(merged);
    if (u) countAnthropicBlocks(u, blocks);
    m.reported = u;
    if (final && u) m.done = true;
  };
  return m.view((e) => {
    switch (e.event) {
      case "content_block_delta":
        return m.member(e, TEXT, THINKING, PARTIAL_JSON);
      case "content_block_start": {
        const block = asObject(eventJson(e).content_block);
        if (block.type === "server_tool_use") {
          blocks.push(block);
          update({}, false);
        }
        return;
      }
      case "message_start": {
        const message = asObject(eventJson(e).message);
        if (threaded) m.remember(message.id, "response");
        m.remember(asObject(message.container).id, "container");
        return update(asObject(message.usage), false);
      }
      case "message_delta": {
        const data = eventJson(e);
        m.remember(asObject(asObject(data.delta).container).id, "container");
        // Final only when it states the output (else the counts are message_start's).
        const usage = asObject(data.usage);
        return update(usage, usage.output_tokens !== undefined && usage.output_tokens !== null);
      }
      case "message_stop":
        m.ended = true;
    }
  });
}

/** How Messages answers show a usage the gateway decided: `usage`, and `message_delta`'s. */
export const messagesUsageView: UsageView = {
  answer: (a) => a.type === "message" && Array.isArray(a.content),
  json: (answer, usage) => ({
    ...answer,
    usage: { ...asObject(answer.usage), ...encodeTokenUsage(usage) },
  }),
  event: () => ({
    carries: (e) => e.event === "message_delta",
    write(e, usage) {
      // A copy: the parsed event is shared with its other readers.
      const data = eventJson(e);
      const shown = { ...data, usage: { ...asObject(data.usage), ...encodeTokenUsage(usage) } };
      return encodeSse(JSON.stringify(shown), e.event);
    },
  }),
};
