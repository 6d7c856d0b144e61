/**
 * Upstream state — stored responses, containers, conversations, cached contents — lives under the
 * operator's one upstream key, so one account must never reach another's. The ids the gateway
 * sees in an account's answers are recorded as that account's; a request naming any other id is
 * refused as not found (404 in the route's format), exactly as an id that does not exist. The
 * objects a request names are read before these checks run (see `named_state.ts`).
 * Conversations and cached contents cannot be created through the gateway, so naming one is
 * always refused.
 */
import type { RequestContext } from "../context.ts";
import { GatewayError } from "../http/errors.ts";
import { textOf } from "../http/json.ts";
import type { UpstreamObject } from "../store/store.ts";
import { log } from "../log.ts";
import { MAX_ID, namedState } from "./named_state.ts";

/** An object an answer created: its id and kind. */
export interface CreatedObject {
  id: string;
  kind: UpstreamObject["kind"];
}

/** The caller's own upstream object `id`, or a thrown 404 naming `field`. */
export function ownObject(
  ctx: RequestContext,
  id: unknown,
  kind: UpstreamObject["kind"],
  field: string,
): UpstreamObject {
  const text = typeof id === "string" ? id : "";
  // Only ids a client may name were read (see `named_state.ts`).
  const found = namedState(ctx).objects.get(text);
  if (!found || found.kind !== kind || found.accountId !== ctx.principal!.accountId) {
    throw notFound(kind === "response" ? "Previous response" : "Container", text, field);
  }
  return found;
}

/** The 404 for an upstream object the caller may not use. */
export function notFound(what: string, id: string, field: string): GatewayError {
  const shown = id.length > 64 ? `${id.slice(0, 64)}…` : id;
  return new GatewayError(404, `${what} with id '${shown}' not found.`, {
    param: field,
    code: "not_found",
  });
}

/**
 * The upstream state a Responses-family body (responses, compact, input_tokens) names, checked:
 * `previous_response_id` must be the caller's (its conversation's size is returned, for the
 * hold), a `conversation` cannot be the caller's (none is created through the gateway), item
 * references are refused, and a code interpreter container must be the caller's.
 */
export function responsesState(
  ctx: RequestContext,
  body: Record<string, unknown>,
): { contextTokens?: number } {
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
        ownObject(ctx, container, "container", `tools[${i}].container`);
      } else if (container && typeof (container as { id?: unknown }).id === "string") {
        ownObject(ctx, (container as { id: string }).id, "container", `tools[${i}].container.id`);
      }
    });
  }
  const previous = body.previous_response_id;
  if (previous === undefined || previous === null) return {};
  return {
    contextTokens: ownObject(ctx, previous, "response", "previous_response_id").contextTokens,
  };
}

/** A Messages `container` (an id, or `{id}`), which must be the caller's. */
export function messagesState(ctx: RequestContext, body: Record<string, unknown>): void {
  const container = body.container;
  if (container === undefined || container === null) return;
  const id = typeof container === "object" ? (container as { id?: unknown }).id : container;
  if (id !== undefined) ownObject(ctx, id, "container", "container");
}

/** Records the objects an account's answer created (`contextTokens` for responses). */
export function rememberObjects(
  ctx: RequestContext,
  objects: CreatedObject[],
  contextTokens: number,
  provider: string,
): void {
  const accountId = ctx.principal!.accountId;
  for (const { id, kind } of objects) {
    if (id.length > MAX_ID) continue;
    ctx.services.store.recordObject({ id, accountId, kind, contextTokens, provider }).catch((
      error,
    ) =>
      log("warn", "upstream object not recorded", {
        request_id: ctx.requestId,
        error: String(error),
      })
    );
  }
}

/**
 * The provider holding the upstream state a Responses-family body continues — the caller's own
 * `previous_response_id` or code interpreter container — so the call goes to a deployment of that
 * provider (another would not know the id); undefined when it names none (or an object recorded
 * without its provider).
 */
export function stateProvider(
  ctx: RequestContext,
  body: Record<string, unknown>,
): string | undefined {
  const ids: unknown[] = [body.previous_response_id];
  if (Array.isArray(body.tools)) {
    for (const tool of body.tools) ids.push((tool as { container?: unknown } | null)?.container);
  }
  for (const id of ids) {
    const found = typeof id === "string" ? namedState(ctx).objects.get(id) : undefined;
    if (found?.provider && found.accountId === ctx.principal!.accountId) return found.provider;
  }
  return undefined;
}
