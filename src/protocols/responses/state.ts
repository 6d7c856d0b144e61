/**
 * The upstream state a Responses-family body (responses, compact, input_tokens) names, checked
 * through the request's `CallInput` (whose objects they are is the pipeline's rule):
 * `previous_response_id` must be the caller's (its conversation's size is returned, for the hold),
 * a `conversation` cannot be the caller's (none is created through the gateway), item references
 * are refused, and a code interpreter container must be the caller's.
 */
import { GatewayError, notFound } from "../../http/errors.ts";
import { textOf } from "../../http/json.ts";
import type { CallInput } from "../wire.ts";

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
 * The provider holding the upstream state a Responses-family body continues — the caller's own
 * `previous_response_id` or code interpreter container — so the call goes to a deployment of that
 * provider (another would not know the id); undefined when it names none (or an object recorded
 * without its provider).
 */
export function stateProvider(input: CallInput, body: Json): string | undefined {
  const ids: unknown[] = [body.previous_response_id];
  if (Array.isArray(body.tools)) {
    for (const tool of body.tools) ids.push((tool as { container?: unknown } | null)?.container);
  }
  for (const id of ids) {
    const found = input.find(id);
    if (found?.provider) return found.provider;
  }
  return undefined;
}
