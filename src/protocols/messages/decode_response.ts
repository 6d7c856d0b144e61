/**
 * A Messages answer → the canonical form (pure; `anthropic-messages.md` §4): its content blocks,
 * read leniently (a block of another kind is passed over), thinking signatures and redacted
 * thinking tagged with the provider that issued them, its stop reason as the finish.
 */
import { asObject, isObject } from "../../http/json.ts";
import type {
  AssistantPart,
  CanonicalResponse,
  HostedCallPart,
  Json,
  Opaque,
} from "../../translate/ir.ts";
import { zeroUsage } from "../../translate/ir.ts";
import { parseArguments } from "../../translate/tool_ids.ts";
import { decodeStopReason } from "./stop_reason.ts";
import { decodeTokenUsage } from "./token_usage.ts";

/** A `server_tool_use` block of web search as a hosted-call part with `id`. */
export function webSearchCall(block: Json, id: string): HostedCallPart {
  const input = asObject(block.input);
  return {
    type: "hosted-call",
    tool: "web_search",
    id,
    ...(typeof input.query === "string" ? { query: input.query } : {}),
  };
}

/** A whole Messages answer as canonical; opaque state is tagged with `provider`. */
export function decodeResponse(body: Json, provider: string): CanonicalResponse {
  const content: AssistantPart[] = [];
  for (const raw of Array.isArray(body.content) ? body.content : []) {
    if (!isObject(raw)) continue;
    const block = raw;
    if (block.type === "text" && typeof block.text === "string") {
      content.push({ type: "text", text: block.text });
    } else if (block.type === "thinking") {
      content.push({
        type: "reasoning",
        text: typeof block.thinking === "string" ? block.thinking : "",
        ...(typeof block.signature === "string" && block.signature
          ? { opaque: { provider, kind: "thinking-signature", value: block.signature } as Opaque }
          : {}),
      });
    } else if (block.type === "redacted_thinking" && typeof block.data === "string") {
      content.push({
        type: "reasoning",
        text: "",
        opaque: { provider, kind: "redacted-thinking", value: block.data },
      });
    } else if (block.type === "tool_use") {
      content.push({
        type: "tool-call",
        id: String(block.id ?? ""),
        name: String(block.name ?? ""),
        input: parseArguments(block.input),
      });
    } else if (block.type === "server_tool_use" && block.name === "web_search") {
      content.push(webSearchCall(block, String(block.id ?? "")));
    }
  }
  return {
    id: typeof body.id === "string" ? body.id : "",
    model: typeof body.model === "string" ? body.model : "",
    content,
    finish: {
      reason: decodeStopReason(body.stop_reason),
      ...(typeof body.stop_reason === "string" ? { raw: body.stop_reason } : {}),
    },
    usage: isObject(body.usage) ? decodeTokenUsage(body.usage) : zeroUsage(),
  };
}
