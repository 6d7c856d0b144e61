/**
 * What a translation adapts (pure): a request feature the target protocol has no exact slot for,
 * sent in another form or left out — never silently. Each codec notes every adaptation it makes,
 * by kind (one of `ADAPTATIONS`, a short stable name) and by the client's name for the field it
 * concerns; `collect` gathers them. The gateway shows the kinds of a call (a response header, the
 * access log, a metric), and in strict mode refuses the call instead, as it refuses what the
 * target cannot express at all (`inexpressible.ts`). A change of shape that keeps the meaning (a
 * field's name, a result wrapped as an object, a call id made acceptable, a user's text parts
 * joined) is not an adaptation.
 */
import type { GatewayError } from "../http/errors.ts";
import { inexpressible } from "./inexpressible.ts";
import type { CanonicalRequest, Message, NamedMember, Opaque, ProtocolId } from "./ir.ts";
import { replayable } from "./opaque.ts";

/** Every kind of adaptation, with what it means (the table docs/endpoints.md shows). */
export const ADAPTATIONS = {
  temperature_clamped: "a temperature outside the target's range (Messages: 0–1), clamped into it",
  temperature_dropped:
    "a temperature the target does not take (Messages with thinking on), not sent",
  top_p_dropped: "a top-p the target does not take (Messages with thinking on), not sent",
  top_k_dropped: "a top-k the target has no field for (Responses, chat; Messages with thinking on)",
  seed_dropped: "a seed the target has no field for (Responses, Messages), not sent",
  penalties_dropped: "presence or frequency penalties the target has no field for, not sent",
  max_output_raised: "an output cap under the target's smallest (Responses: 16), raised to it",
  system_hoisted:
    "system messages inside the conversation, moved into the system prompt (Messages, Gemini)",
  json_instructed:
    "JSON output without a schema, asked for in the system prompt (Messages needs a schema)",
  strict_dropped: "`strict` tool schemas the target does not enforce (Messages, Gemini)",
  schema_cleaned:
    "a tool's parameter schema with keywords the target rejects, removed (Gemini), or not an object schema (Messages)",
  thinking_off:
    "thinking asked for but turned off for the call (Messages: a forced tool, a tool loop without signed thinking, no room under the output cap)",
  reasoning_approximated:
    "reasoning sent as the target's nearest setting: an effort for a budget or the other way, a Gemini 3 level, a budget under the output cap, reasoning off or shown where the target cannot say so",
  reasoning_not_replayed:
    "reasoning or provider state in the history that the target cannot take (another provider's, or a chat upstream), not sent",
  hosted_history_dropped: "records of hosted tool calls (web search) in the history, not sent",
  duplicate_result_dropped:
    "a second, different result for one tool call, not sent (Messages takes one result a call; the first stands)",
  error_flag_as_text:
    "a tool result's error flag, sent as text starting `Error:` (Responses, chat have no flag)",
  parallel_calls_dropped: "`parallel_tool_calls: false`, which the target cannot say (Gemini)",
  user_dropped: "an end-user id the target has no field for (Gemini), not sent",
  web_search_dropped:
    "web search offered to a target that cannot search (chat completions), not offered: the model answers without it",
  search_options_dropped:
    "web search options the target has no field for (allowed domains, location, context size, maximum uses), not sent",
  file_details_dropped:
    "an image's `detail` or a file's name the target has no field for (Messages, Gemini), not sent",
  tool_choice_approximated:
    "a Gemini tool choice the others cannot state (several allowed functions, `VALIDATED`), sent as the nearest",
  content_as_text:
    "Messages search results and tool references, sent as text (other protocols have no such blocks)",
  hint_dropped:
    "a request option with no counterpart on the target (service tier, verbosity, truncation, a participant's name, Gemini safety settings and media resolution…), not sent",
} as const;

/** A kind of adaptation (see `ADAPTATIONS`). */
export type AdaptationKind = keyof typeof ADAPTATIONS;

/** Every kind, in the table's order (the bounded values of the metric's `kind` label). */
export const ADAPTATION_KINDS = Object.keys(ADAPTATIONS) as AdaptationKind[];

/** One adaptation a translation made: its kind and the client's field it concerns. */
export interface Adaptation {
  kind: AdaptationKind;
  field: string;
}

/** Where a codec notes an adaptation as it makes it. */
export type Adapt = (kind: AdaptationKind, field: string) => void;

/** Notes nothing (a caller that does not ask). */
export const IGNORED: Adapt = () => {};

/** Runs one translation step, returning what it made and the adaptations it noted, in order. */
export function collect<T>(step: (adapt: Adapt) => T): { value: T; adaptations: Adaptation[] } {
  const adaptations: Adaptation[] = [];
  const value = step((kind, field) => adaptations.push({ kind, field }));
  return { value, adaptations };
}

/** The distinct kinds of `adaptations`, in the table's order. */
export function kindsOf(adaptations: readonly Adaptation[]): AdaptationKind[] {
  const made = new Set(adaptations.map((a) => a.kind));
  return ADAPTATION_KINDS.filter((kind) => made.has(kind));
}

/** How a refusal names each protocol a call goes to. */
const PROTOCOL_NAMES: Record<ProtocolId, string> = {
  responses: "the Responses protocol",
  messages: "the Messages protocol",
  generate: "the generateContent protocol",
  chat: "chat completions",
};

/**
 * The 400 of strict mode: `adaptation` refused as what the target cannot express, naming the
 * client's field and the kind.
 */
export function refusal(adaptation: Adaptation, target: ProtocolId): GatewayError {
  const { kind, field } = adaptation;
  return inexpressible(
    field,
    `\`${field}\` as given (strict mode refuses the adaptation \`${kind}\`: ${ADAPTATIONS[kind]})`,
    PROTOCOL_NAMES[target],
  );
}

/** The name an adaptation of a member shows when the decoder recorded none. */
const DEFAULT_NAMES: Record<NamedMember, string> = {
  maxOutputTokens: "max_output_tokens",
  temperature: "temperature",
  topP: "top_p",
  topK: "top_k",
  seed: "seed",
  presencePenalty: "presence_penalty",
  frequencyPenalty: "frequency_penalty",
  reasoning: "reasoning",
  user: "user",
  parallelToolCalls: "parallel_tool_calls",
  responseFormat: "response_format",
};

/** The client's name for `member` of `request` (the decoder's record, else a common name). */
export function fieldOf(request: CanonicalRequest, member: NamedMember): string {
  return request.fields[member] ?? DEFAULT_NAMES[member];
}

/**
 * Whether the history holds reasoning, or provider state on text and calls, that a target would
 * not send: reasoning parts other than state of `reasoning` kinds issued by `provider`, and state
 * on other parts other than `onParts` kinds of `provider`'s.
 */
export function unreplayed(
  messages: readonly Message[],
  provider: string,
  reasoning: Opaque["kind"][],
  onParts: Opaque["kind"][] = [],
): boolean {
  return messages.some((message) =>
    message.role === "assistant" && message.content.some((part) => {
      if (part.type === "reasoning") {
        return (!!part.text || !!part.opaque) && !replayable(part.opaque, provider, ...reasoning);
      }
      if (part.type === "text" || part.type === "tool-call") {
        return !!part.opaque && !replayable(part.opaque, provider, ...onParts);
      }
      return false;
    })
  );
}

/** Whether the history holds records of hosted tool calls (no encoder replays them). */
export function hostedRecords(messages: readonly Message[]): boolean {
  return messages.some((m) =>
    m.role === "assistant" && m.content.some((p) => p.type === "hosted-call")
  );
}

/** Whether any tool result of the history is marked as an error. */
export function failedResults(messages: readonly Message[]): boolean {
  return messages.some((m) => m.role === "tool" && m.content.some((p) => p.isError));
}

/** Whether the conversation holds system messages after its start (hoisted by some targets). */
export function laterSystem(messages: readonly Message[]): boolean {
  return messages.some((m) => m.role === "system" && m.content.some((p) => p.text));
}

/** Whether a file of the conversation has a name, or an image a `detail` other than `auto`. */
export function fileDetails(messages: readonly Message[]): boolean {
  return messages.some((m) => {
    const parts = m.role === "user"
      ? m.content
      : m.role === "tool"
      ? m.content.flatMap((r) => r.content)
      : [];
    return parts.some((p) =>
      p.type === "file" && (!!p.filename || (!!p.detail && p.detail !== "auto"))
    );
  });
}
