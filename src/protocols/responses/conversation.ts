/**
 * The conversation of a Responses request: its `prompt_cache_key` (Codex sends its conversation's
 * id), else the answer its `previous_response_id` continues (each stored answer's id then names
 * the conversation too), else its prefix — instructions, tools and the input up to its first user
 * message. `prompt_cache_retention: "24h"` asks for extended retention.
 */
import type { ConversationOf } from "../wire.ts";
import { firstTurn, named, prefixed } from "../conversation.ts";

const isUser = (item: unknown) => (item as { role?: unknown } | null)?.role === "user";

/** See the module's doc. */
export const responsesConversation: ConversationOf = (_input, body) => {
  const value = body.value;
  const extended = value.prompt_cache_retention === "24h";
  const input = Array.isArray(value.input) ? firstTurn(value.input, isUser) : value.input;
  const parts = [value.instructions, value.tools, input];
  const keyed = named("cache-key", value.prompt_cache_key, parts, extended);
  if (keyed) return keyed;
  // A stored answer can be continued by its id: it names the conversation too.
  const chained = value.store !== false;
  const continued = named("answer", value.previous_response_id, parts, extended, chained);
  if (continued) return continued;
  return prefixed(parts, extended, chained);
};
