/**
 * Gemini's parts and fields as requests and answers both have them (pure; `gemini.md` §2–3):
 * fields read in either spelling the REST API takes (`systemInstruction` and
 * `system_instruction`…), what counts as a part's data, and adjacent text or thought parts joined
 * into one canonical part, a signature ending the part it closes — as the stream decoder does.
 */
import type { AssistantPart, Json, Opaque } from "../../translate/ir.ts";

/** A field in either spelling (camelCase wins when both are present). */
export function field(value: Json, camel: string): unknown {
  if (value[camel] !== undefined) return value[camel];
  return value[camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)];
}

/** Whether a value is there (neither absent nor null). */
export const present = (value: unknown) => value !== undefined && value !== null;

/** Keys of a part that carry no data of their own. */
const MARKS = new Set(["thought", "thoughtSignature", "thought_signature"]);

/** Whether a part has a data field (anything besides its thought marks). */
export const hasData = (part: Json) =>
  Object.entries(part).some(([key, value]) => present(value) && !MARKS.has(key));

/** A non-empty string, or undefined. */
export const nonEmpty = (value: unknown) => typeof value === "string" && value ? value : undefined;

/**
 * Appends text or reasoning, joining it to the part before when that is of the same kind and
 * unsigned; a signature closes the part it arrives with (an empty part that only carries one
 * signs the unsigned text or reasoning before it).
 */
export function appendText(
  out: AssistantPart[],
  type: "text" | "reasoning",
  text: string,
  opaque?: Opaque,
): void {
  const last = out.at(-1);
  if ((last?.type === "text" || last?.type === "reasoning") && !last.opaque) {
    if (last.type === type || (!text && opaque)) {
      last.text += text;
      if (opaque) last.opaque = opaque;
      return;
    }
  }
  if (!text && !opaque) return;
  out.push({ type, text, ...(opaque ? { opaque } : {}) });
}
