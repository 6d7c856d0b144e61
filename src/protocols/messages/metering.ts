/**
 * What a Messages request asks for that the bill depends on (pure): the smallest output cap it can
 * run under (above the thinking budget), the server tools it offers, and the 1M-context beta
 * (`anthropic-messages.md` §1–3).
 */
import type { HostedTool } from "../../billing/price.ts";
import { DEFAULT_TOOL_CALLS, MAX_TOOL_CALLS } from "../../billing/reserve.ts";
import { GatewayError } from "../../http/errors.ts";
import type { ToolUse } from "../../billing/reserve.ts";

type Json = Record<string, unknown>;

/** Server tool types, by prefix (`web_search_20250305`); `web_fetch_*` costs only tokens. */
const SERVER_TOOLS: [string, HostedTool][] = [
  ["web_search_", "web_search"],
  ["code_execution_", "code_execution"],
];

/**
 * The server tools in `tools`, each allowed its `max_uses` (an integer up to `MAX_TOOL_CALLS`,
 * else 400), or `DEFAULT_TOOL_CALLS` — which `withToolLimits` then sends as its limit.
 */
export function messagesToolUses(body: Json): ToolUse[] {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const uses: ToolUse[] = [];
  tools.forEach((raw, i) => {
    const tool = (raw ?? {}) as Json;
    if (typeof tool.type !== "string") return;
    const type = tool.type;
    const hosted = SERVER_TOOLS.find(([prefix]) => type.startsWith(prefix))?.[1];
    if (!hosted) return;
    const limit = tool.max_uses;
    if (
      limit !== undefined &&
      !(Number.isInteger(limit) && (limit as number) >= 0 && (limit as number) <= MAX_TOOL_CALLS)
    ) {
      throw new GatewayError(
        400,
        `tools.${i}.max_uses: must be an integer from 0 to ${MAX_TOOL_CALLS}`,
        { param: `tools[${i}].max_uses` },
      );
    }
    const calls = typeof limit === "number" ? limit : DEFAULT_TOOL_CALLS;
    uses.push({ tools: [hosted], field: `tools[${i}].type`, calls });
  });
  return uses;
}

/**
 * `tools` with `max_uses` set on each server tool that has none (the calls held are the limit),
 * or undefined when nothing needs it.
 */
export function withToolLimits(body: Json): unknown[] | undefined {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  let changed = false;
  const limited = tools.map((raw) => {
    const tool = (raw ?? {}) as Json;
    const type = tool.type;
    if (typeof type !== "string" || tool.max_uses !== undefined) return raw;
    if (!SERVER_TOOLS.some(([prefix]) => type.startsWith(prefix))) return raw;
    changed = true;
    return { ...tool, max_uses: DEFAULT_TOOL_CALLS };
  });
  return changed ? limited : undefined;
}

/** The smallest `max_tokens` the request is valid with: above an enabled thinking budget. */
export function messagesMinCap(body: Json): number {
  const thinking = (body.thinking ?? {}) as Json;
  const budget = thinking.type === "enabled" && typeof thinking.budget_tokens === "number"
    ? thinking.budget_tokens
    : 0;
  return Math.max(1, budget + 1);
}

/** Whether the request asks for the 1M-token context window (priced as long context). */
export function wantsLongContext(beta: string | null): boolean {
  return !!beta && beta.split(",").some((flag) => flag.trim().startsWith("context-1m"));
}
