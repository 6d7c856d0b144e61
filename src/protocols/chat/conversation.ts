/**
 * The conversation of a chat completions request: its `prompt_cache_key`, else its prefix — tools
 * and the messages up to the first user message. `prompt_cache_retention: "24h"` asks for extended
 * retention.
 */
import type { ConversationOf } from "../wire.ts";
import { firstTurn, named, prefixed } from "../conversation.ts";

const isUser = (message: unknown) => (message as { role?: unknown } | null)?.role === "user";

/** See the module's doc. */
export const chatConversation: ConversationOf = (_input, body) => {
  const value = body.value;
  const extended = value.prompt_cache_retention === "24h";
  const messages = Array.isArray(value.messages) ? value.messages : [];
  const parts = [value.tools, firstTurn(messages, isUser)];
  return named("cache-key", value.prompt_cache_key, parts, extended) ?? prefixed(parts, extended);
};
