/**
 * The upstream state a Responses-family body (responses, compact, input_tokens) names, declared
 * for the pipeline to read (`responsesNames`), and checked through the request's `CallInput`
 * (whose objects they are is the pipeline's rule):
 * `previous_response_id` must be the caller's (its conversation's size is returned, for the hold),
 * a `conversation` cannot be the caller's (none is created through the gateway), an item reference
 * on a call passed through must name an item of one of the caller's stored answers (recorded as it
 * passed; one naming an item the gateway issued and keeps for the caller is translated instead,
 * see `references.ts`), and a code interpreter container must be the caller's.
 */
import { notFound } from "../../http/errors.ts";
import { textOf } from "../../http/json.ts";
import type { BodyNames, CallInput } from "../wire.ts";
import { issuedIn } from "./item_ids.ts";
import { unknownItem } from "./references.ts";

type Json = Record<string, unknown>;

/** Checks what the body names; the size of the conversation it continues, if any. */
export function responsesState(input: CallInput, body: Json): { contextTokens?: number } {
  const conversation = body.conversation;
  if (conversation !== undefined && conversation !== null) {
    const id = typeof conversation === "object"
      ? textOf((conversation as { id?: unknown }).id)
      : textOf(conversation);
    throw notFound("Conversation", id, "conversation");
  }
  if (Array.isArray(body.input)) {
    body.input.forEach((item, i) => {
      const reference = item as { type?: unknown; id?: unknown } | null;
      if (reference?.type === "item_reference" && !input.owned(reference.id, "item")) {
        throw unknownItem(`input[${i}]`, reference.id);
      }
    });
  }
  if (Array.isArray(body.tools)) {
    body.tools.forEach((tool, i) => {
      const container = (tool as { container?: unknown } | null)?.container;
      if (container !== undefined && typeof container !== "object") {
        input.own(container, "container", `tools[${i}].container`);
      } else if (container && typeof (container as { id?: unknown }).id === "string") {
        input.own((container as { id: string }).id, "container", `tools[${i}].container.id`);
      }
    });
  }
  const previous = body.previous_response_id;
  if (previous === undefined || previous === null) return {};
  return {
    contextTokens: input.own(previous, "response", "previous_response_id").contextTokens,
  };
}

/**
 * What `input` refers to by id: the answers the gateway issued whose items it names, and the
 * upstream items it names (each once, in order).
 */
function referred(input: unknown): { answers: string[]; items: string[] } {
  const answers = new Set<string>();
  const items = new Set<string>();
  for (const item of Array.isArray(input) ? input : []) {
    const reference = item as { type?: unknown; id?: unknown } | null;
    if (reference?.type !== "item_reference" || typeof reference.id !== "string") continue;
    const issued = issuedIn(reference.id);
    if (issued) answers.add(issued.answerId);
    else items.add(reference.id);
  }
  return { answers: [...answers], items: [...items] };
}

/**
 * What a Responses-family body names: the caller's `previous_response_id` and code interpreter
 * containers (an id, or `{id}`), the upstream items it refers to, and — continued upstream, so the
 * call goes to the provider holding them — the previous response, the containers named by id and
 * those items; and the gateway's own answers whose items it refers to.
 */
export function responsesNames(body: Json): BodyNames {
  const containers = Array.isArray(body.tools)
    ? body.tools.map((tool) => (tool as { container?: unknown } | null)?.container)
    : [];
  const previous = body.previous_response_id;
  const named = typeof previous === "string" ? previous : undefined;
  const { answers, items } = referred(body.input);
  return {
    objects: [named, ...containers],
    previous,
    continues: [previous, ...containers, ...items],
    answers,
    items,
  };
}
