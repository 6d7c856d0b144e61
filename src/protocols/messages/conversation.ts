/**
 * The conversation of a Messages request: Claude Code's session — its `x-claude-code-session-id`
 * header, or the `session_id` in `metadata.user_id` (a JSON string since Claude Code 2.1.78,
 * `user_…_account_…_session_<id>` before) — else the answer a thread continues (each answer of a
 * thread then names it too), else its prefix: system prompt, tools and first message. A
 * `cache_control` with `ttl: "1h"` asks for extended retention.
 */
import type { ConversationOf } from "../wire.ts";
import { named, prefixed } from "../conversation.ts";
import { threadOf } from "./thread.ts";

/** A legacy `metadata.user_id`'s session. */
const LEGACY_SESSION = /_session_([0-9A-Za-z-]{8,64})$/;

/** The session id Claude Code puts in `metadata.user_id`, if it is one of its forms. */
export function claudeCodeSession(userId: unknown): string | undefined {
  if (typeof userId !== "string") return undefined;
  if (userId.startsWith("{")) {
    try {
      const session = (JSON.parse(userId) as { session_id?: unknown } | null)?.session_id;
      return typeof session === "string" && session ? session : undefined;
    } catch {
      return undefined;
    }
  }
  return LEGACY_SESSION.exec(userId)?.[1];
}

/** See the module's doc. */
export const messagesConversation: ConversationOf = (input, body) => {
  const value = body.value;
  const extended = body.text.includes('"1h"') && /"ttl"\s*:\s*"1h"/.test(body.text);
  const metadata = value.metadata as { user_id?: unknown } | null | undefined;
  const session = input.headers.get("x-claude-code-session-id") ??
    claudeCodeSession(metadata?.user_id);
  const messages = Array.isArray(value.messages) ? value.messages : [];
  const parts = [value.system, value.tools, messages[0]];
  const sessioned = named("session", session, parts, extended);
  if (sessioned) return sessioned;
  // A thread is continued by its last answer's id: each answer's id names it too.
  const thread = threadOf(value);
  if (thread?.type === "continue") return named("answer", thread.previous, parts, extended, true);
  return prefixed(parts, extended, thread !== undefined);
};
