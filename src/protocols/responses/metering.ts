/**
 * What a Responses request asks for that the bill depends on (pure): its output cap, the service
 * tier, and the hosted tools it offers (`openai-responses.md` §1, §3).
 */
import type { HostedTool } from "../../billing/price.ts";
import { DEFAULT_TOOL_CALLS } from "../../billing/reserve.ts";
import type { ToolUse } from "../../billing/reserve.ts";

type Json = Record<string, unknown>;

/** Hosted tool types, by prefix (`web_search_preview_2025_03_11` is web search). */
const HOSTED: [string, HostedTool][] = [
  ["web_search", "web_search"],
  ["file_search", "file_search"],
  ["code_interpreter", "code_interpreter"],
  ["image_generation", "image_generation"],
  ["x_search", "x_search"],
];

/**
 * The hosted tools in `tools`, each allowed `max_tool_calls` calls (validated by the schema), else
 * `DEFAULT_TOOL_CALLS` — which the handler then sends as the request's limit.
 */
export function responsesToolUses(body: Json): ToolUse[] {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const calls = typeof body.max_tool_calls === "number" ? body.max_tool_calls : DEFAULT_TOOL_CALLS;
  const uses: ToolUse[] = [];
  tools.forEach((tool, i) => {
    const type = (tool as Json | null)?.type;
    if (typeof type !== "string") return;
    const hosted = HOSTED.find(([prefix]) => type.startsWith(prefix))?.[1];
    if (hosted) uses.push({ tools: [hosted], field: `tools[${i}].type`, calls });
  });
  return uses;
}
