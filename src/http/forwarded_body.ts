/**
 * A client's body as it goes upstream on pass-through: its own text, byte for byte, with only the
 * model id (and what the gateway must set) changed in it — unless a member the gateway's decisions
 * depend on appears twice, when it is sent re-serialized from what the gateway read.
 */
import type { JsonBody } from "./body.ts";
import { BYTES_FROM, TextParts } from "./utf8.ts";

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
  // `exec` on the one expression (`matchAll` copies it, and makes an iterator); a body names a
  // few of these members, so a list serves.
  const seen: string[] = [];
  DECISIVE.lastIndex = 0;
  try {
    for (let match = DECISIVE.exec(text); match; match = DECISIVE.exec(text)) {
      if (seen.includes(match[1])) return true;
      seen.push(match[1]);
    }
    return false;
  } finally {
    DECISIVE.lastIndex = 0;
  }
}

/** The client's body as sent upstream: its own text, unless a decisive member repeats. */
export function forwardedBody(body: JsonBody): string {
  return repeatsDecisive(body.text) ? JSON.stringify(body.value) : body.text;
}

/**
 * The client's body with `model` replaced by the upstream id and `patch` applied. Changed in the
 * client's own text where it can be: the model's string replaced, the patch's members appended
 * when the body has none of them; otherwise (a decisive member repeats, or the patch replaces one
 * of the body's members) re-serialized from what the gateway read.
 */
export function withUpstreamModel(
  body: JsonBody,
  model: { upstreamId: string },
  patch?: Record<string, unknown>,
): string {
  return String(upstreamText(body, model, patch));
}

/**
 * `withUpstreamModel`'s text, long text with its model id replaced left as its parts (see
 * `TextParts`).
 */
function upstreamText(
  body: JsonBody,
  model: { upstreamId: string },
  patch?: Record<string, unknown>,
): string | TextParts {
  const value = body.value;
  const sameModel = value.model === undefined || value.model === model.upstreamId;
  if (sameModel && !patch) return forwardedBody(body);
  // The patch's members checked first: one that replaces the body's own writes the body again
  // anyway, and the scan of the text is not needed.
  if (
    (!patch || Object.keys(patch).every((k) => !Object.hasOwn(value, k))) &&
    !repeatsDecisive(body.text)
  ) {
    // Here `patch` is set when the model is the same (the body went as it is above).
    if (sameModel) return withMembers(body.text, patch!);
    // The only `model` member anywhere (see `repeatsDecisive`), so the body's own.
    const parts = scalarParts(body.text, "model", model.upstreamId);
    if (parts) {
      if (patch) return withMembers(parts.join(""), patch);
      return body.text.length >= BYTES_FROM ? new TextParts(parts) : parts.join("");
    }
  }
  return JSON.stringify({
    ...value,
    ...(value.model === undefined ? {} : { model: model.upstreamId }),
    ...patch,
  });
}

type Json = Record<string, unknown>;

/** Where a call's output cap goes in its body (see `cappedBody`). */
export interface CapSlot {
  /**
   * The member whose number is the cap, as it appears in the text: a decisive name (so, on
   * pass-through, the only member of that name anywhere in the body), e.g. `max_tokens`.
   */
  name: string;
  /**
   * What the client's body holds there: nothing (the cap is appended as `absent(cap)`), a number
   * (the cap replaces it in the text), or something else (the text is parsed again and `put`).
   */
  holds: "nothing" | "number" | "other";
  /** The members that carry `cap` in a body that has none. */
  absent(cap: number): Json;
  /** The body with `cap` put in its place (the client's own, if any, replaced). */
  put(value: Json, cap: number): Json;
}

/** A top-level member of `value` as the slot of the cap (`max_tokens`, `max_output_tokens`…). */
export function memberSlot(value: Json, name: string): CapSlot {
  const own = value[name];
  return {
    name,
    holds: own === undefined ? "nothing" : typeof own === "number" ? "number" : "other",
    absent: (cap) => ({ [name]: cap }),
    put: (body, cap) => ({ ...body, [name]: cap }),
  };
}

/**
 * A call's body for the output cap the hold decides (undefined: none imposed), made from `sent`
 * (what goes when none is) and holding nothing but text: the client's parsed body is let go once
 * the call is planned (see `PreparedCall.call`). The cap is appended to a body without one, or
 * replaces the client's own number in the text where that member is the only one of its name;
 * otherwise the text is parsed again to put it in.
 */
export function cappedBody<T extends string | TextParts>(
  sent: T,
  slot: CapSlot,
): (cap: number | undefined) => T | string {
  return (cap) => {
    if (cap === undefined) return sent;
    const text = String(sent);
    if (slot.holds === "nothing") return withMembers(text, slot.absent(cap));
    if (slot.holds === "number") {
      const spliced = withScalar(text, slot.name, cap);
      if (spliced !== undefined) return spliced;
    }
    return JSON.stringify(slot.put(JSON.parse(text) as Json, cap));
  };
}

/**
 * A pass-through call's body for the hold's cap: the client's, with the model swapped and `patch`
 * applied (`withUpstreamModel`), and the cap put in its top-level member `capMember`
 * (`cappedBody`).
 */
export function cappedUpstreamBody(
  body: JsonBody,
  model: { upstreamId: string },
  patch: Json | undefined,
  capMember: string,
): (cap: number | undefined) => string | TextParts {
  return cappedBody(upstreamText(body, model, patch), memberSlot(body.value, capMember));
}

/** A JSON object's text with `members` added at its end. */
export function withMembers(text: string, members: Json): string {
  const added = JSON.stringify(members).slice(1, -1);
  const end = text.lastIndexOf("}");
  if (!added || end < 0) return text;
  const head = text.slice(0, end).trimEnd();
  return `${head}${head.endsWith("{") ? "" : ","}${added}${text.slice(end)}`;
}

/** A JSON number. */
const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** The index just past the end of the JSON string whose opening quote is at `start`, or -1. */
function stringEnd(text: string, start: number): number {
  for (let i = text.indexOf('"', start + 1); i >= 0; i = text.indexOf('"', i + 1)) {
    let slashes = 0;
    while (text.charCodeAt(i - 1 - slashes) === 92) slashes++; // backslashes before the quote
    if (slashes % 2 === 0) return i + 1;
  }
  return -1;
}

/**
 * `text` with the value of its member `name` — a number or a string — replaced by `value`, when
 * exactly one member of that name occurs in it, anywhere; otherwise undefined. (`name` is a plain
 * member name: letters and underscores.)
 */
export function withScalar(text: string, name: string, value: number | string): string | undefined {
  return scalarParts(text, name, value)?.join("");
}

/** `withScalar`'s text as its three parts: before the value, the value, after it. */
function scalarParts(text: string, name: string, value: number | string): string[] | undefined {
  const key = new RegExp(`"${name}"\\s*:\\s*`, "g");
  if (!key.exec(text)) return undefined;
  const at = key.lastIndex;
  if (key.exec(text)) return undefined; // another member of that name: which one is unclear
  let end: number;
  if (text[at] === '"') end = stringEnd(text, at);
  else {
    NUMBER.lastIndex = at;
    end = NUMBER.exec(text) ? NUMBER.lastIndex : -1;
  }
  if (end < 0) return undefined;
  return [text.slice(0, at), JSON.stringify(value), text.slice(end)];
}
