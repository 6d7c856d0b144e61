/**
 * The canonical form → a generateContent answer for the client (pure; `gemini.md` §3): parts with
 * opaque state as `thoughtSignature` tokens — another provider's reasoning state on the call its
 * reasoning precedes, else on the thought part itself. The stream encoder writes calls with the
 * same function.
 */
import type { AnswerInfo } from "../../translate/codec.ts";
import type { AssistantPart, CanonicalResponse, Json, Opaque } from "../../translate/ir.ts";
import { parseArguments } from "../../translate/tool_ids.ts";
import { encodeFinishReason } from "./finish_reason.ts";
import { encodeTokenUsage } from "./token_usage.ts";

/** A canonical call as a `functionCall` part, with the signature (a token) it carries. */
export function callPart(
  part: { id: string; name: string; input: unknown },
  signature: string | undefined,
): Json {
  return {
    functionCall: { id: part.id, name: part.name, args: parseArguments(part.input) },
    ...(signature ? { thoughtSignature: signature } : {}),
  };
}

/** Whether opaque state is another provider's than Gemini's (it then carries its text). */
export function isForeign(opaque: Opaque | undefined): opaque is Opaque {
  return !!opaque && opaque.kind !== "thought-signature";
}

/** The parts of a canonical answer, with opaque state as thought-signature tokens. */
export function encodeParts(content: AssistantPart[], info: AnswerInfo): Json[] {
  const parts: Json[] = [];
  /** A foreign reasoning token waiting for the call just after its reasoning. */
  let carry: string | undefined;
  content.forEach((part, i) => {
    switch (part.type) {
      case "reasoning": {
        if (!isForeign(part.opaque)) {
          const signed = part.opaque ? { thoughtSignature: info.token(part.opaque) } : {};
          if (part.text || part.opaque) parts.push({ text: part.text, thought: true, ...signed });
          break;
        }
        const token = info.token(part.opaque, part.text);
        const next = content.slice(i + 1).find((p) => p.type !== "text" || p.text);
        if (next?.type === "tool-call" && !next.opaque) {
          carry = token;
          if (part.text) parts.push({ text: part.text, thought: true });
        } else parts.push({ text: part.text, thought: true, thoughtSignature: token });
        break;
      }
      case "text":
        if (part.text || part.opaque) {
          parts.push({
            text: part.text,
            ...(part.opaque ? { thoughtSignature: info.token(part.opaque) } : {}),
          });
        }
        break;
      case "tool-call":
        parts.push(callPart(part, part.opaque ? info.token(part.opaque) : carry));
        carry = undefined;
        break;
      case "hosted-call":
        break;
    }
  });
  return parts;
}

/** A canonical answer as a generateContent answer. */
export function encodeResponse(response: CanonicalResponse, info: AnswerInfo): Json {
  return {
    candidates: [{
      content: { role: "model", parts: encodeParts(response.content, info) },
      finishReason: encodeFinishReason(response.finish.reason),
      index: 0,
    }],
    usageMetadata: encodeTokenUsage(response.usage),
    modelVersion: info.model,
    responseId: info.id,
  };
}
