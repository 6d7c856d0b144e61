/**
 * A client's body as it goes upstream on pass-through: its own text, byte for byte, with only the
 * model id (and what the gateway must set) changed — unless a member the gateway's decisions
 * depend on appears twice, when it is sent re-serialized from what the gateway read.
 */
import type { JsonBody } from "./body.ts";

/**
 * Member names the gateway's decisions (price, hold, ownership) depend on. When one appears twice
 * in a body, the upstream might read the other copy than `JSON.parse` did: such a body is sent
 * re-serialized from what the gateway read.
 */
const DECISIVE =
  /"(model|max_output_tokens|max_tokens|max_completion_tokens|n|service_tier|tools|max_tool_calls|max_uses|background|previous_response_id|conversation|container|stream|stream_options|generationConfig|generation_config|maxOutputTokens|candidateCount|candidate_count|cachedContent|cached_content|search_parameters|max_search_results|web_search_options|thinking|budget_tokens)"\s*:/g;

/**
 * An escaped ASCII letter, digit or underscore (`\u0061`): a member name written so may be a
 * decisive one that `DECISIVE` does not see (JSON serializers write these characters as they are).
 */
const ESCAPED_WORD_CHAR = /\\u00(?:[3-7][0-9a-f])/i;

/**
 * Whether a decisive member name occurs more than once in the body's text, or may occur unseen
 * (written with escapes).
 */
function repeatsDecisive(text: string): boolean {
  if (ESCAPED_WORD_CHAR.test(text)) return true;
  const seen = new Set<string>();
  for (const match of text.matchAll(DECISIVE)) {
    if (seen.has(match[1])) return true;
    seen.add(match[1]);
  }
  return false;
}

/** The client's body as sent upstream: its own text, unless a decisive member repeats. */
export function forwardedBody(body: JsonBody): string {
  return repeatsDecisive(body.text) ? JSON.stringify(body.value) : body.text;
}

/**
 * The client's body with `model` replaced by the upstream id and `patch` applied (the same text
 * when nothing changes; see `forwardedBody`).
 */
export function withUpstreamModel(
  body: JsonBody,
  model: { upstreamId: string },
  patch?: Record<string, unknown>,
): string {
  const sameModel = body.value.model === undefined || body.value.model === model.upstreamId;
  if (sameModel && !patch) return forwardedBody(body);
  return JSON.stringify({
    ...body.value,
    ...(body.value.model === undefined ? {} : { model: model.upstreamId }),
    ...patch,
  });
}
