/**
 * A chat completion → the canonical form (pure; `openai-other.md` §1): its first choice, read
 * leniently — vendors' reasoning, text (a string, or a list of text parts), a refusal, calls
 * (a custom one keeps its raw input) — and its finish (see `finish_reason.ts`).
 */
import { isObject } from "../../http/json.ts";
import type { AssistantPart, CanonicalResponse, Json, ToolCallPart } from "../../translate/ir.ts";
import { parseArguments } from "../../translate/tool_ids.ts";
import { decodeFinishReason } from "./finish_reason.ts";
import { decodeTokenUsage } from "./token_usage.ts";

/** One `tool_calls` entry of an answer as a canonical call (a custom one keeps its raw input). */
function answerCall(raw: Json): ToolCallPart {
  if (raw.type === "custom") {
    const custom = isObject(raw.custom) ? raw.custom : {};
    return {
      type: "tool-call",
      id: String(raw.id ?? ""),
      name: String(custom.name ?? ""),
      input: { input: typeof custom.input === "string" ? custom.input : "" },
      kind: "custom",
    };
  }
  const fn = isObject(raw.function) ? raw.function : {};
  return {
    type: "tool-call",
    id: String(raw.id ?? ""),
    name: String(fn.name ?? ""),
    input: parseArguments(fn.arguments),
  };
}

/** An answer's `content`: a string, or (some vendors) a list of text parts. */
function answerText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p) =>
    isObject(p) && p.type === "text" && typeof p.text === "string" ? p.text : ""
  )
    .join("");
}

/** The choice a translated answer reads: index 0 (one answer is all a translation asks for). */
export function firstChoice(choices: unknown): Json | undefined {
  if (!Array.isArray(choices)) return undefined;
  const found = choices.find((c) => isObject(c) && (c.index ?? 0) === 0) ?? choices[0];
  return isObject(found) ? found : undefined;
}

/** A whole chat completion as canonical (its first choice). */
export function decodeResponse(body: Json, _provider: string): CanonicalResponse {
  const choice = firstChoice(body.choices) ?? {};
  const message = isObject(choice.message) ? choice.message : {};
  const content: AssistantPart[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === "string" && reasoning) {
    content.push({ type: "reasoning", text: reasoning });
  }
  const text = answerText(message.content);
  if (text) content.push({ type: "text", text });
  const refused = typeof message.refusal === "string" && message.refusal !== "";
  if (refused) content.push({ type: "text", text: message.refusal as string });
  for (const raw of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
    if (isObject(raw)) content.push(answerCall(raw));
  }
  const hasCalls = content.some((p) => p.type === "tool-call");
  return {
    id: typeof body.id === "string" ? body.id : "",
    model: typeof body.model === "string" ? body.model : "",
    content,
    finish: {
      reason: decodeFinishReason(choice.finish_reason, refused, hasCalls),
      ...(typeof choice.finish_reason === "string" ? { raw: choice.finish_reason } : {}),
    },
    usage: decodeTokenUsage(body.usage ?? choice.usage),
  };
}
