/**
 * A generateContent answer → the canonical form (pure; `gemini.md` §3): its first candidate's
 * parts, read leniently (a part of another kind is passed over), signatures tagged with the
 * provider that issued them, calls without an id given one from where they stand, a blocked
 * prompt as `content-filter`. The stream decoder reads parts with the same function.
 */
import { isObject } from "../../http/json.ts";
import type { AssistantPart, CanonicalResponse, Json, Opaque } from "../../translate/ir.ts";
import { parseArguments, synthesizeId } from "../../translate/tool_ids.ts";
import { decodeFinishReason } from "./finish_reason.ts";
import { appendText, field, hasData, nonEmpty, present } from "./parts.ts";
import { decodeTokenUsage } from "./token_usage.ts";

/** One part of an upstream answer: a call (its id, when Gemini gave one), or text or a thought. */
export type AnswerPart =
  | { type: "call"; id?: string; name: string; input: Record<string, unknown>; opaque?: Opaque }
  | { type: "text" | "reasoning"; text: string; opaque?: Opaque };

/** An answer part read, its signature tagged with `provider`; undefined for other parts. */
export function readAnswerPart(part: Json, provider: string): AnswerPart | undefined {
  const signature = nonEmpty(field(part, "thoughtSignature"));
  const opaque: Opaque | undefined = signature
    ? { provider, kind: "thought-signature", value: signature }
    : undefined;
  const call = field(part, "functionCall");
  if (isObject(call)) {
    const id = nonEmpty(call.id);
    return {
      type: "call",
      ...(id ? { id } : {}),
      name: String(call.name ?? ""),
      input: parseArguments(call.args),
      ...(opaque ? { opaque } : {}),
    };
  }
  const text = typeof part.text === "string" ? part.text : undefined;
  // A part of another kind (an image, code), with or without a signature, is not read.
  if (text === undefined && (!opaque || hasData(part))) return undefined;
  return {
    type: part.thought === true ? "reasoning" : "text",
    text: text ?? "",
    ...(opaque ? { opaque } : {}),
  };
}

/** A whole generateContent answer as canonical (its first candidate). */
export function decodeResponse(body: Json, provider: string): CanonicalResponse {
  const candidate = Array.isArray(body.candidates) && isObject(body.candidates[0])
    ? body.candidates[0]
    : undefined;
  const content = isObject(candidate?.content) ? candidate.content : {};
  const id = typeof body.responseId === "string" ? body.responseId : "";
  const parts: AssistantPart[] = [];
  (Array.isArray(content.parts) ? content.parts : []).forEach((raw, i) => {
    const part = isObject(raw) ? readAnswerPart(raw, provider) : undefined;
    if (part?.type === "call") {
      parts.push({
        type: "tool-call",
        id: part.id ?? synthesizeId(`${id}:${i}:${part.name}`),
        name: part.name,
        input: part.input,
        ...(part.opaque ? { opaque: part.opaque } : {}),
      });
    } else if (part) appendText(parts, part.type, part.text, part.opaque);
  });
  const feedback = isObject(body.promptFeedback) ? body.promptFeedback : {};
  const blocked = !candidate && present(feedback.blockReason);
  const raw = candidate?.finishReason;
  return {
    id,
    model: typeof body.modelVersion === "string" ? body.modelVersion : "",
    content: parts,
    finish: {
      reason: decodeFinishReason(raw, parts.some((p) => p.type === "tool-call"), blocked),
      ...(typeof raw === "string" ? { raw } : blocked ? { raw: String(feedback.blockReason) } : {}),
    },
    usage: decodeTokenUsage(body.usageMetadata),
  };
}
