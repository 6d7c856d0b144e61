/**
 * Reading usage from generateContent answers and streams (`gemini.md` §3–4): cached prompt,
 * thoughts, image output tokens, and search grounding.
 */
import type { UsageView } from "../../translate/codec.ts";
import { encodeSse } from "../../http/sse.ts";
import { hasMember, memberName } from "../../http/json_bytes.ts";
import { encodeTokenUsage } from "./token_usage.ts";
import type { Usage } from "../../billing/price.ts";
import { emptyUsage } from "../../billing/price.ts";
import { asArray, asObject, eventJson } from "../../http/json.ts";
import { addCalls, count, Meter, type StreamMeter } from "../../billing/usage.ts";

type Json = Record<string, unknown>;

/**
 * Gemini `usageMetadata`: `promptTokenCount` includes cached content; `candidatesTokenCount`
 * includes image tokens (the `IMAGE` entry of `candidatesTokensDetails`), billed at the image-output
 * rate; thought tokens are output.
 */
export function geminiUsage(raw: unknown): Usage | null {
  const u = asObject(raw);
  if (!("promptTokenCount" in u || "candidatesTokenCount" in u)) return null;
  const prompt = count(u.promptTokenCount) + count(u.toolUsePromptTokenCount);
  const cached = Math.min(count(u.cachedContentTokenCount), prompt);
  const image = asArray(u.candidatesTokensDetails)
    .filter((d) => asObject(d).modality === "IMAGE")
    .reduce((sum: number, d) => sum + count(asObject(d).tokenCount), 0);
  const candidates = count(u.candidatesTokenCount);
  return {
    ...emptyUsage(),
    inputTokens: prompt - cached,
    cachedInputTokens: cached,
    outputTokens: Math.max(0, candidates - image) + count(u.thoughtsTokenCount),
    imageOutputTokens: Math.min(image, candidates),
  };
}

/** Search grounding in Gemini candidates: queries made, and whether the prompt was grounded. */
function geminiSearches(candidates: unknown[]): number {
  let queries = 0;
  for (const c of candidates) {
    queries += asArray(asObject(asObject(c).groundingMetadata).webSearchQueries).length;
  }
  return queries;
}

function addGrounding(u: Usage, queries: number): void {
  addCalls(u, "web_search", queries);
  addCalls(u, "grounded_prompt", queries > 0 ? 1 : 0);
}

/** A whole generateContent answer. */
export function generateUsage(body: unknown): Usage | null {
  const b = asObject(body);
  const usage = geminiUsage(b.usageMetadata);
  if (usage) addGrounding(usage, geminiSearches(asArray(b.candidates)));
  return usage;
}

/**
 * Meter for Gemini streams (SSE fragments, or the elements of the JSON array form): every fragment
 * is a whole `GenerateContentResponse` with only the new parts; usage repeats and grows, the
 * fragment with a `finishReason` (or a blocked prompt) is final.
 */
export function geminiMeter(): StreamMeter {
  const m = new Meter();
  // Every fragment repeats the usage so far: a stream cut short has its count.
  m.running = true;
  let queries = 0;
  return m.view((e) => {
    const fragment = eventJson(e);
    const candidates = asArray(fragment.candidates);
    for (const c of candidates) {
      const candidate = asObject(c);
      for (const p of asArray(asObject(candidate.content).parts)) {
        const part = asObject(p);
        m.text(part.text);
        if (part.functionCall) m.text(JSON.stringify(asObject(part.functionCall).args ?? {}));
      }
      if (typeof candidate.finishReason === "string") m.ended = m.done = true;
    }
    queries = Math.max(queries, geminiSearches(candidates));
    if (asObject(fragment.promptFeedback).blockReason) m.ended = m.done = true;
    const usage = geminiUsage(fragment.usageMetadata);
    if (usage) {
      addGrounding(usage, queries);
      m.reported = usage;
    }
  });
}

const FINISH_REASON = memberName("finishReason");

/**
 * How generateContent answers show a usage the gateway decided: `usageMetadata`, and that of the
 * fragment with the `finishReason` (the last).
 */
export const generateUsageView: UsageView = {
  answer: (a) => Array.isArray(a.candidates) || !!a.promptFeedback,
  json: (answer, usage) => ({ ...answer, usageMetadata: encodeTokenUsage(usage) }),
  event: () => ({
    carries: (e) => hasMember(e.raw(), FINISH_REASON),
    write(e, usage) {
      // A copy: the parsed event is shared with its other readers.
      const shown = { ...eventJson(e), usageMetadata: encodeTokenUsage(usage) };
      return encodeSse(JSON.stringify(shown), undefined, "\r\n");
    },
  }),
};
