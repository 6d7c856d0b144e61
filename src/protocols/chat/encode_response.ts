/**
 * The canonical form → a chat completion for the client (pure; `openai-other.md` §1): one choice
 * with the text, reasoning as `reasoning_content` (the vendors' field), and the calls as the
 * client declared their tools (free-form ones as `custom` calls).
 */
import type { AnswerInfo } from "../../translate/codec.ts";
import { customInput, isCustomCall } from "../../translate/custom_tools.ts";
import type { CanonicalResponse, Json } from "../../translate/ir.ts";
import { stringifyArguments } from "../../translate/tool_ids.ts";
import { encodeFinishReason } from "./finish_reason.ts";
import { encodeTokenUsage } from "./token_usage.ts";

/** A canonical tool call as a chat `tool_calls` entry. */
export function encodeCall(
  part: { id: string; name: string; input: unknown; kind?: string },
  info: AnswerInfo,
): Json {
  if (isCustomCall(part, info)) {
    return {
      id: part.id,
      type: "custom",
      custom: { name: part.name, input: customInput(part.input) },
    };
  }
  return {
    id: part.id,
    type: "function",
    function: { name: part.name, arguments: stringifyArguments(part.input) },
  };
}

/** A canonical answer as a chat completion. */
export function encodeResponse(response: CanonicalResponse, info: AnswerInfo): Json {
  const text = response.content.flatMap((p) => p.type === "text" ? [p.text] : []).join("");
  const reasoning = response.content.flatMap((p) => p.type === "reasoning" ? [p.text] : [])
    .join("");
  const calls = response.content.flatMap((p) =>
    p.type === "tool-call" ? [encodeCall(p, info)] : []
  );
  return {
    id: info.id,
    object: "chat.completion",
    created: info.created,
    model: info.model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: text || null,
        refusal: null,
        ...(reasoning ? { reasoning_content: reasoning } : {}),
        ...(calls.length ? { tool_calls: calls } : {}),
      },
      logprobs: null,
      finish_reason: encodeFinishReason(response.finish.reason),
    }],
    usage: encodeTokenUsage(response.usage),
  };
}
