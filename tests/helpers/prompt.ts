/**
 * A prompt as its provider reads it, for the prompt-cache tests: the segments of an upstream
 * request body — tools, system prompt, then each message (its role, its blocks) — in the order the
 * provider caches them, each as its JSON with the breakpoint marker (`cache_control`) taken out
 * and noted: markers move from one call to the next and are not content.
 */
import type { Json, ProtocolId } from "../../src/translate/ir.ts";

/** A prompt segment: its bytes (breakpoint markers taken out), and whether one ended it. */
export interface Segment {
  text: string;
  breakpoint: boolean;
}

function segment(value: unknown): Segment {
  if (typeof value !== "object" || value === null) {
    return { text: JSON.stringify(value), breakpoint: false };
  }
  const { cache_control: control, ...rest } = value as Json;
  return { text: JSON.stringify(rest), breakpoint: control !== undefined };
}

const list = (value: unknown): unknown[] => Array.isArray(value) ? value : [];

/** The upstream prompt's segments in the order its provider reads them. */
export function segmentsOf(protocol: ProtocolId, body: Json): Segment[] {
  switch (protocol) {
    case "messages":
      return [
        ...list(body.tools).map(segment),
        ...(typeof body.system === "string"
          ? [segment(body.system)]
          : list(body.system).map(segment)),
        ...list(body.messages).flatMap((m) => {
          const { role, content } = m as Json;
          return [
            segment(role),
            ...(typeof content === "string" ? [segment(content)] : list(content).map(segment)),
          ];
        }),
      ];
    case "responses":
      return [segment(body.tools), segment(body.instructions), ...list(body.input).map(segment)];
    case "chat":
      return [segment(body.tools), ...list(body.messages).map(segment)];
    case "generate":
      return [
        segment(body.tools),
        segment(body.systemInstruction),
        ...list(body.contents).flatMap((c) => {
          const { role, parts } = c as Json;
          return [segment(role), ...list(parts).map(segment)];
        }),
      ];
  }
}

/**
 * Whether `after` repeats `before`'s prompt up to `before`'s last breakpoint (or the whole of it,
 * for a provider that caches every prefix: `whole`), as a message naming the first difference,
 * or `undefined` when it does.
 */
export function prefixDifference(
  before: Segment[],
  after: Segment[],
  whole = false,
): string | undefined {
  const end = whole ? before.length : before.findLastIndex((s) => s.breakpoint) + 1;
  for (let i = 0; i < end; i++) {
    if (after[i]?.text !== before[i].text) {
      return `segment ${i} of ${end}: ${before[i].text} became ${after[i]?.text}`;
    }
  }
  return undefined;
}
