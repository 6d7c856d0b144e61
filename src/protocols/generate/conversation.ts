/**
 * The conversation of a generateContent request: its prefix — system instruction, tools and first
 * content. (Gemini CLI sends no session of its own on the Gemini API: its
 * `x-gemini-api-privileged-user-id` names the installation, shared by all its sessions.)
 */
import type { ConversationOf } from "../wire.ts";
import { prefixed } from "../conversation.ts";

/** See the module's doc. */
export const generateConversation: ConversationOf = (_input, body) => {
  const value = body.value;
  const contents = Array.isArray(value.contents) ? value.contents : [];
  return prefixed([value.systemInstruction, value.tools, contents[0]], false);
};
