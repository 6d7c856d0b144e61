/**
 * Conversations the gateway keeps itself, for the clients of a protocol that chain calls by an
 * answer's id (`StateNames.chained`: Responses' `previous_response_id`). When a model's provider
 * cannot hold that state (any upstream but OpenAI's Responses), the gateway keeps each translated
 * answer — the call's own input and the answer, as canonical messages — under the answer's id,
 * for the caller's account only, for the configured retention. A call naming such an id gets the
 * whole conversation put in front of its input (`instructions` are not carried over, as on
 * OpenAI). An id that is unknown, expired or another account's is a 404. The items of a kept
 * answer can be referred to by id in a later call's input (`answer`). Whether a body continues
 * one, or refers to one, is `resolve.ts`'s `continuesKept`. A client WebSocket also keeps its last
 * answer on the connection (`SocketState.last`), whatever `store` says — its whole conversation,
 * so the next turn continues it without the store, as OpenAI's connection-local cache does.
 */
import type { RequestContext } from "../context.ts";
import { GatewayError, notFound } from "../http/errors.ts";
import type {
  AssistantPart,
  CanonicalRequest,
  CanonicalResponse,
  Json,
  Message,
} from "../translate/ir.ts";
import { log } from "../log.ts";
import { keptStep, MAX_ID, MAX_STEPS, namedState } from "./resolve.ts";

/** The conversations the gateway keeps (see the module's doc). */
export interface ConversationState {
  /** The request with the conversation it continues put in front; throws 404 for unknown ids. */
  restore(ctx: RequestContext, body: Json, request: CanonicalRequest): CanonicalRequest;
  /**
   * Keeps the call — `request` as the client sent it, without the history put in front — under
   * the answer's id (when the client asked to store it); `whole` is the request as it was sent,
   * the history in front.
   */
  keep(
    ctx: RequestContext,
    body: Json,
    request: CanonicalRequest,
    response: CanonicalResponse,
    id: string,
    whole: CanonicalRequest,
  ): void;
  /**
   * The content of the kept answer `id`, if it is the caller's (its items can be referred to by
   * id, see `protocols/responses/references.ts`).
   */
  answer(ctx: RequestContext, id: string): AssistantPart[] | undefined;
}

function previousId(body: Record<string, unknown>): string | undefined {
  const id = body.previous_response_id;
  return typeof id === "string" && id.length <= MAX_ID ? id : undefined;
}

/** The conversations the gateway keeps, in its store (see the module's doc). */
export const keptConversations: ConversationState = {
  restore(ctx, body, request) {
    if (body.previous_response_id === undefined || body.previous_response_id === null) {
      return request;
    }
    const first = previousId(body) ?? "";
    const last = ctx.socket?.last;
    if (last && last.id === first) {
      return { ...request, messages: [...last.messages, ...request.messages] };
    }
    const steps: Message[][] = [];
    let bytes = 0;
    for (let id: string | null = first; id !== null;) {
      const step = keptStep(ctx, id);
      if (!step) {
        const upstream = id === first ? namedState(ctx).objects.get(id) : undefined;
        if (upstream?.kind === "response" && upstream.accountId === ctx.principal!.accountId) {
          throw new GatewayError(
            400,
            `Invalid 'previous_response_id': the response '${id}' is held by the provider of the model that made it, which cannot continue on this model; send the conversation as input instead.`,
            { param: "previous_response_id", code: "invalid_value" },
          );
        }
        throw notFound("Previous response", first, "previous_response_id");
      }
      bytes += step.items.length;
      if (steps.length >= MAX_STEPS || bytes > ctx.services.config.conversationMaxBytes * 4) {
        throw new GatewayError(
          400,
          "Invalid 'previous_response_id': the conversation is too long to continue here; send it as input instead.",
          { param: "previous_response_id", code: "invalid_value" },
        );
      }
      steps.push(JSON.parse(step.items) as Message[]);
      id = step.previousId;
    }
    return { ...request, messages: [...steps.reverse().flat(), ...request.messages] };
  },

  keep(ctx, body, request, response, id, whole) {
    const step: Message[] = [...request.messages, { role: "assistant", content: response.content }];
    const items = JSON.stringify(step);
    const { config } = ctx.services;
    const socket = ctx.socket;
    if (socket) {
      const history = whole.messages.slice(0, whole.messages.length - request.messages.length);
      const last = socket.last;
      const before = last && last.id === previousId(body)
        ? last.bytes
        : JSON.stringify(history).length;
      const bytes = before + items.length;
      // As long as a store's chain may be (else the next turn is told to send it whole).
      socket.last = bytes <= config.conversationMaxBytes * 4
        ? { id, messages: [...history, ...step], bytes }
        : undefined;
    }
    if (body.store === false) return;
    if (items.length > config.conversationMaxBytes) {
      log("warn", "conversation step too large to keep", {
        request_id: ctx.requestId,
        bytes: items.length,
      });
      return;
    }
    ctx.services.store.saveResponse({
      id,
      accountId: ctx.principal!.accountId,
      previousId: previousId(body) ?? null,
      items,
      contextTokens: response.usage.input + response.usage.output,
      createdAt: Date.now(),
    }).catch((error) =>
      log("warn", "conversation step not kept", {
        request_id: ctx.requestId,
        error: String(error),
      })
    );
  },

  answer(ctx, id) {
    const local = ctx.socket?.last;
    if (local?.id === id) {
      const last = local.messages.at(-1);
      return last?.role === "assistant" ? last.content : undefined;
    }
    const step = keptStep(ctx, id);
    const last = step ? (JSON.parse(step.items) as Message[]).at(-1) : undefined;
    return last?.role === "assistant" ? last.content : undefined;
  },
};
