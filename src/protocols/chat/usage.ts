/**
 * Reading usage from chat completions and their chunks (`openai-other.md` §1).
 */
import type { Usage } from "../../billing/price.ts";
import { addCalls, list, Meter, obj, openaiUsage, type StreamMeter } from "../../billing/usage.ts";

type Json = Record<string, unknown>;

/** A chat completion (or the chunk carrying usage); `webSearch` when the request asked for it. */
export function chatUsage(body: unknown, webSearch = false): Usage | null {
  const c = obj(body);
  let usage = c.usage ? openaiUsage(c.usage) : null;
  for (const choice of list(c.choices)) usage ??= openaiUsage(obj(choice).usage);
  if (!usage) return null;
  if (typeof c.service_tier === "string") usage.serviceTier = c.service_tier;
  if (webSearch) addCalls(usage, "web_search", 1);
  return usage;
}

/**
 * Meter for chat-completions streams (unnamed `data:` chunks ending in `[DONE]`): output from the
 * deltas (content, reasoning, tool-call arguments); usage from the chunk that carries it (OpenAI's
 * `include_usage` chunk, or the finishing choice on some vendors).
 */
export function chatMeter(webSearch = false): StreamMeter {
  const m = new Meter();
  return m.view((e) => {
    const data = e.data();
    if (data === "[DONE]") {
      m.ended = true;
      return;
    }
    let chunk: Json;
    try {
      chunk = obj(JSON.parse(data));
    } catch {
      return;
    }
    for (const choice of list(chunk.choices)) {
      const delta = obj(obj(choice).delta);
      m.text(delta.content);
      m.text(delta.reasoning_content);
      m.text(delta.reasoning);
      for (const call of list(delta.tool_calls)) m.text(obj(obj(call).function).arguments);
    }
    const usage = chatUsage(chunk, webSearch);
    if (usage) {
      m.reported = usage;
      m.done = true;
    }
  });
}
