/**
 * What a chat-completions request asks for that the bill depends on (pure): web search
 * (`web_search_options`, the search models), xAI's deprecated Live Search (`search_parameters`),
 * and which field carries its output cap (`openai-other.md` §1.1).
 */
import type { ToolUse } from "../../billing/reserve.ts";
import { GatewayError } from "../../http/errors.ts";

/** xAI's Live Search: sources held (and sent as the limit) when the request sets none. */
export const DEFAULT_SEARCH_RESULTS = 20;
const MAX_SEARCH_RESULTS = 100;

type Json = Record<string, unknown>;

/** Priced searches the request asks for. */
export function chatToolUses(body: Json): ToolUse[] {
  const uses: ToolUse[] = [];
  if (body.web_search_options !== undefined && body.web_search_options !== null) {
    uses.push({ tools: ["web_search"], field: "web_search_options", calls: 1 });
  }
  const live = body.search_parameters as Json | undefined;
  if (live && typeof live === "object" && live.mode !== "off") {
    const sources = live.max_search_results ?? DEFAULT_SEARCH_RESULTS;
    if (
      !Number.isInteger(sources) || (sources as number) < 1 ||
      (sources as number) > MAX_SEARCH_RESULTS
    ) {
      throw new GatewayError(
        400,
        `Invalid 'search_parameters.max_search_results': must be an integer from 1 to ${MAX_SEARCH_RESULTS}.`,
        { param: "search_parameters.max_search_results" },
      );
    }
    uses.push({ tools: ["x_search"], field: "search_parameters", calls: sources as number });
  }
  return uses;
}

/**
 * The field to carry an output cap the gateway sets: the one the client used, else
 * `max_completion_tokens` for OpenAI itself and `max_tokens` for the compatible vendors.
 */
export function capField(body: Json, openai: boolean): "max_tokens" | "max_completion_tokens" {
  if (body.max_completion_tokens != null) return "max_completion_tokens";
  if (body.max_tokens != null) return "max_tokens";
  return openai ? "max_completion_tokens" : "max_tokens";
}
