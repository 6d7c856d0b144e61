/**
 * What a generateContent request asks for that the bill depends on (pure): the grounding and maps
 * tools it offers (`gemini.md` §2), and its output cap field.
 */
import type { HostedTool } from "../../billing/price.ts";
import { DEFAULT_TOOL_CALLS } from "../../billing/reserve.ts";
import type { ToolUse } from "../../billing/reserve.ts";
import type { CapSlot } from "../../http/forwarded_body.ts";

type Json = Record<string, unknown>;

/**
 * Priced tools by their key in a `tools[]` entry. Grounding with Google Search is priced per
 * search query on some models and per grounded prompt on others: either price allows it.
 */
const PRICED: [string, HostedTool[]][] = [
  ["googleSearch", ["web_search", "grounded_prompt"]],
  ["google_search", ["web_search", "grounded_prompt"]],
  ["googleSearchRetrieval", ["web_search", "grounded_prompt"]],
  ["google_search_retrieval", ["web_search", "grounded_prompt"]],
  ["googleMaps", ["google_maps"]],
  ["google_maps", ["google_maps"]],
];

/** The priced tools in `tools`. */
export function generateToolUses(body: Json): ToolUse[] {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const uses: ToolUse[] = [];
  tools.forEach((raw, i) => {
    const tool = (raw ?? {}) as Json;
    for (const [key, hosted] of PRICED) {
      if (Object.hasOwn(tool, key)) {
        uses.push({ tools: hosted, field: `tools[${i}].${key}`, calls: DEFAULT_TOOL_CALLS });
      }
    }
  });
  return uses;
}

/** The request's `generationConfig`, in either spelling. */
function generationConfig(body: Json): Json {
  return (body.generationConfig ?? body.generation_config ?? {}) as Json;
}

/** The output cap and the number of answers asked for (either spelling). */
export function generateShape(body: Json): { cap?: number; choices: number } {
  const config = generationConfig(body);
  const cap = config.maxOutputTokens ?? config.max_output_tokens;
  const choices = config.candidateCount ?? config.candidate_count;
  return {
    cap: typeof cap === "number" ? cap : undefined,
    choices: typeof choices === "number" ? choices : 1,
  };
}

/** The body with `generationConfig.maxOutputTokens` set to `cap` (one spelling of each). */
export function withMaxOutputTokens(body: Json, cap: number): Json {
  const { max_output_tokens: _snakeCap, ...config } = generationConfig(body);
  const { generation_config: _snake, ...rest } = body;
  return { ...rest, generationConfig: { ...config, maxOutputTokens: cap } };
}

/** Where the hold's cap goes in the body (see `cappedBody`): `generationConfig.maxOutputTokens`. */
export function capSlot(body: Json): CapSlot {
  const camel = body.generationConfig;
  const holds = camel === undefined && body.generation_config === undefined
    ? "nothing"
    : body.generation_config === undefined && typeof camel === "object" && camel !== null &&
        typeof (camel as Json).maxOutputTokens === "number" &&
        (camel as Json).max_output_tokens === undefined
    ? "number"
    : "other";
  return {
    name: "maxOutputTokens",
    holds,
    absent: (cap) => ({ generationConfig: { maxOutputTokens: cap } }),
    put: withMaxOutputTokens,
  };
}
