/**
 * Reading usage from chat completions and their chunks (`openai-other.md` §1).
 */
import type { Usage } from "../../billing/price.ts";
import { asArray, asObject } from "../../http/json.ts";
import { addCalls, Meter, openaiUsage, type StreamMeter } from "../../billing/usage.ts";
import type { UsageView } from "../../translate/codec.ts";
import { encodeSse } from "../../http/sse.ts";
import { encodeTokenUsage } from "./token_usage.ts";
import { plainDeltaReader } from "./plain_delta.ts";

type Json = Record<string, unknown>;

/** A chat completion (or the chunk carrying usage); `webSearch` when the request asked for it. */
export function chatUsage(body: unknown, webSearch = false): Usage | null {
  const c = asObject(body);
  let usage = c.usage ? openaiUsage(c.usage) : null;
  for (const choice of asArray(c.choices)) usage ??= openaiUsage(asObject(choice).usage);
  if (!usage) return null;
  if (typeof c.service_tier === "string") usage.serviceTier = c.service_tier;
  if (webSearch) addCalls(usage, "web_search", 1);
  return usage;
}

/**
 * Meter for chat-completions streams (unnamed `data:` chunks ending in `[DONE]`): output from the
 * deltas (content, reasoning, tool-call arguments); usage from the chunk that carries it (OpenAI's
 * `include_usage` chunk, or the finishing choice on some vendors). A chunk that is only text is
 * read by `plain` (`plainDelta`: without parsing it); tests pass one that reads none.
 */
export function chatMeter(
  webSearch = false,
  plain: (data: string) => string | undefined = plainDeltaReader(),
): StreamMeter {
  const m = new Meter();
  return m.view((e) => {
    const data = e.data();
    if (data === "[DONE]") {
      m.ended = true;
      return;
    }
    const content = plain(data);
    if (content !== undefined) return m.text(content);
    let chunk: Json;
    try {
      chunk = asObject(e.json ? e.json() : JSON.parse(data));
    } catch {
      return;
    }
    for (const choice of asArray(chunk.choices)) {
      const delta = asObject(asObject(choice).delta);
      m.text(delta.content);
      m.text(delta.reasoning_content);
      m.text(delta.reasoning);
      for (const call of asArray(delta.tool_calls)) {
        m.text(asObject(asObject(call).function).arguments);
      }
    }
    const usage = chatUsage(chunk, webSearch);
    if (usage) {
      m.reported = usage;
      m.done = true;
    }
  });
}

const DONE = new TextEncoder().encode("[DONE]");

/** Whether an event's data is the `[DONE]` marker. */
function isDone(raw: Uint8Array): boolean {
  return raw.length === DONE.length && raw.every((b, i) => b === DONE[i]);
}

/**
 * How chat completions show a usage the gateway decided: `usage`, and on a stream (whose client
 * asked for the usage chunk) a usage chunk of the stream's id and model just before `[DONE]`.
 */
export const chatUsageView: UsageView = {
  answer: (a) => Array.isArray(a.choices),
  json: (answer, usage) => ({ ...answer, usage: encodeTokenUsage(usage) }),
  event() {
    let first: Json | undefined;
    return {
      carries(e) {
        const raw = e.raw();
        if (isDone(raw)) return true;
        if (!first) {
          try {
            first = asObject(JSON.parse(e.data()));
          } catch { /* not a chunk: read the next one */ }
        }
        return false;
      },
      write(e, usage) {
        const chunk = {
          id: first?.id ?? "",
          object: "chat.completion.chunk",
          created: first?.created ?? Math.floor(Date.now() / 1000),
          model: first?.model ?? "",
          choices: [],
          usage: encodeTokenUsage(usage),
        };
        return encodeSse(JSON.stringify(chunk)) + encodeSse(e.data());
      },
    };
  },
};
