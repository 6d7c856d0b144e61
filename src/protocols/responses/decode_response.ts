/**
 * A Responses answer → the canonical form (pure; `openai-responses.md` §4): its output items, read
 * leniently (an item of another kind is passed over), encrypted reasoning tagged with the
 * provider that issued it, and its status as the finish. The stream decoder reads items with the
 * same functions.
 */
import { isObject } from "../../http/json.ts";
import type {
  AssistantPart,
  CanonicalResponse,
  HostedCallPart,
  Json,
  Opaque,
} from "../../translate/ir.ts";
import { parseArguments } from "../../translate/tool_ids.ts";
import { flatName } from "./namespaces.ts";
import { decodeStatus } from "./status.ts";
import { decodeTokenUsage } from "./token_usage.ts";

/** The summary texts of an output reasoning item, joined (lenient: an upstream's answer). */
export function outputSummary(item: Json): string {
  return (Array.isArray(item.summary) ? item.summary : [])
    .flatMap((s) => isObject(s) && typeof s.text === "string" && s.text ? [s.text] : [])
    .join("\n\n");
}

/** A reasoning item's encrypted content as opaque state of `provider`. */
export function encryptedReasoning(item: Json, provider: string): Opaque | undefined {
  const value = item.encrypted_content;
  if (typeof value !== "string" || !value) return undefined;
  return {
    provider,
    kind: "encrypted-reasoning",
    value,
    ...(typeof item.id === "string" && item.id ? { itemId: item.id } : {}),
  };
}

/** A `web_search_call` item as a hosted-call part. */
export function hostedCall(item: Json): HostedCallPart {
  const action = isObject(item.action) ? item.action : {};
  return {
    type: "hosted-call",
    tool: "web_search",
    id: typeof item.id === "string" ? item.id : "",
    ...(typeof action.query === "string" ? { query: action.query } : {}),
  };
}

/** One output item as canonical parts (none for items with nothing to carry). */
export function decodeItem(item: Json, provider: string): AssistantPart[] {
  switch (item.type) {
    case "message":
      return (Array.isArray(item.content) ? item.content : []).flatMap((raw): AssistantPart[] => {
        if (!isObject(raw)) return [];
        if (raw.type === "output_text" && typeof raw.text === "string" && raw.text) {
          return [{ type: "text", text: raw.text }];
        }
        if (raw.type === "refusal" && typeof raw.refusal === "string" && raw.refusal) {
          return [{ type: "text", text: raw.refusal }];
        }
        return [];
      });
    case "reasoning": {
      const text = outputSummary(item);
      const opaque = encryptedReasoning(item, provider);
      if (!text && !opaque) return [];
      return [{ type: "reasoning", text, ...(opaque ? { opaque } : {}) }];
    }
    case "function_call":
      return [{
        type: "tool-call",
        id: String(item.call_id ?? item.id ?? ""),
        name: flatName(String(item.name ?? ""), item.namespace),
        input: parseArguments(item.arguments),
      }];
    case "custom_tool_call":
      return [{
        type: "tool-call",
        id: String(item.call_id ?? item.id ?? ""),
        name: flatName(String(item.name ?? ""), item.namespace),
        input: { input: typeof item.input === "string" ? item.input : "" },
        kind: "custom",
      }];
    case "web_search_call":
      return [hostedCall(item)];
    default:
      return [];
  }
}

/** Whether an output item is a message holding a refusal. */
export function isRefusal(item: unknown): boolean {
  return isObject(item) && Array.isArray(item.content) &&
    item.content.some((c) => isObject(c) && c.type === "refusal");
}

/** A whole Responses answer as canonical; encrypted reasoning is tagged with `provider`. */
export function decodeResponse(body: Json, provider: string): CanonicalResponse {
  const output = Array.isArray(body.output) ? body.output : [];
  const content = output.flatMap((item) => isObject(item) ? decodeItem(item, provider) : []);
  const incomplete = isObject(body.incomplete_details) ? body.incomplete_details.reason : undefined;
  const reason = decodeStatus(
    body.status,
    incomplete,
    content.some((p) => p.type === "tool-call"),
    output.some(isRefusal),
  );
  return {
    id: typeof body.id === "string" ? body.id : "",
    model: typeof body.model === "string" ? body.model : "",
    content,
    finish: {
      reason,
      ...(typeof incomplete === "string" ? { raw: incomplete } : {}),
    },
    usage: decodeTokenUsage(body.usage),
  };
}
