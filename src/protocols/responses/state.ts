/**
 * The upstream state a Responses-family body (responses, compact, input_tokens) names, declared
 * for the pipeline to read (`responsesNames`), and checked through the request's `CallInput`
 * (whose objects they are is the pipeline's rule):
 * `previous_response_id` must be the caller's (its conversation's size is returned, for the hold),
 * a `conversation` cannot be the caller's (none is created through the gateway), item references
 * are refused, and a code interpreter container must be the caller's.
 */
import { GatewayError, notFound } from "../../http/errors.ts";
import { textOf } from "../../http/json.ts";
import type { BodyNames, CallInput } from "../wire.ts";

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
      if ((item as { type?: unknown } | null)?.type === "item_reference") {
        throw new GatewayError(
          400,
          `Invalid 'input[${i}]': item references are not supported through this gateway; send the item itself.`,
          { param: `input[${i}]`, code: "unsupported_value" },
        );
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
 * What a Responses-family body names: the caller's `previous_response_id` and code interpreter
 * containers (an id, or `{id}`), and — continued upstream, so the call goes to the provider holding
 * them — the previous response and the containers named by id.
 */
export function responsesNames(body: Json): BodyNames {
  const containers = Array.isArray(body.tools)
    ? body.tools.map((tool) => (tool as { container?: unknown } | null)?.container)
    : [];
  const previous = body.previous_response_id;
  const named = typeof previous === "string" ? previous : undefined;
  return { objects: [named, ...containers], previous, continues: [previous, ...containers] };
}
