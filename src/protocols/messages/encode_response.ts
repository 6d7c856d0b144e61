/**
 * The canonical form → a Messages answer for the client (pure; `anthropic-messages.md` §4):
 * reasoning as thinking blocks whose signature is a token of the opaque state (of any provider,
 * so the client replays it), a Gemini signature on a call as an empty thinking block just before
 * it, web searches as a `server_tool_use` block and its (empty) result.
 */
import { isObject } from "../../http/json.ts";
import type { AnswerInfo } from "../../translate/codec.ts";
import type { CanonicalResponse, Json, Opaque } from "../../translate/ir.ts";
import { newId } from "../../translate/tool_ids.ts";
import { encodeStopReason } from "./stop_reason.ts";
import { encodeTokenUsage } from "./token_usage.ts";

/** A thinking block carrying a token for opaque state of another protocol. */
export function tokenThinking(info: AnswerInfo, text: string, opaque?: Opaque): Json {
  return {
    type: "thinking",
    thinking: text,
    signature: info.token(opaque ?? { provider: "", kind: "thinking-signature", value: "" }, text),
  };
}

/** A canonical answer as a Messages `message`. */
export function encodeResponse(response: CanonicalResponse, info: AnswerInfo): Json {
  const content: Json[] = [];
  for (const part of response.content) {
    switch (part.type) {
      case "text":
        if (part.text) content.push({ type: "text", text: part.text });
        break;
      case "reasoning":
        content.push(tokenThinking(info, part.text, part.opaque));
        break;
      case "tool-call":
        if (part.opaque) content.push(tokenThinking(info, "", part.opaque));
        content.push({
          type: "tool_use",
          id: part.id,
          name: part.name,
          input: isObject(part.input) ? part.input : {},
        });
        break;
      case "hosted-call": {
        const id = part.id || newId("srvtoolu_");
        content.push(
          { type: "server_tool_use", id, name: "web_search", input: { query: part.query ?? "" } },
          { type: "web_search_tool_result", tool_use_id: id, content: [] },
        );
        break;
      }
    }
  }
  return {
    id: info.id,
    type: "message",
    role: "assistant",
    model: info.model,
    content,
    stop_reason: encodeStopReason(response.finish.reason),
    stop_sequence: null,
    usage: encodeTokenUsage(response.usage),
  };
}
