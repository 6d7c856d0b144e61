/**
 * Messages threads (`thread`, the `message-threads-2026-08-12` beta) on calls whose upstream does
 * not hold them. A thread is created with the whole conversation (`{type: "create"}`) and
 * continued with only the new messages (`{type: "continue", previous_message_id}`, the last
 * answer's id), the thread keeping the `system` and `tools` it was created with. Passed through to
 * a Messages upstream the field goes as it is and the upstream holds the thread (the protocol
 * records each answer as the caller's, so a continuation goes back to that provider). Translated,
 * the gateway holds it itself, as it keeps Responses conversations (`conversations.ts`): each
 * turn — its messages and the answer, canonical, and for the turn that creates the thread its
 * system prompt and tools — is kept under the answer's id, for the caller's account only, for
 * `conversations.retentionHours`; a continuation gets the whole conversation put in before it is
 * translated (so the upstream bills the whole input), whatever the upstream, Anthropic's included.
 *
 * A thread is never dropped silently. An id that is unknown, expired, another account's, or held
 * by a provider the call cannot reach is Anthropic's 404 `thread_not_found` (the SDK replays the
 * conversation under a new thread); a turn too large to keep (`conversations.maxBytes`; the whole
 * thread four times that) is refused as `thread_unsupported_request` (the SDK's tool runner then
 * sends the conversation without a thread) — before the call when its input is, and on the next
 * continuation when the answer made it so. A kept turn may be continued more than once (a retried
 * continuation is answered again).
 */
import type { RequestContext } from "../context.ts";
import { GatewayError } from "../http/errors.ts";
import { log } from "../log.ts";
import type { BodyNames } from "../protocols/wire.ts";
import { threadNotFound, threadUnsupported } from "../protocols/messages/thread.ts";
import type { ThreadTurn } from "../store/store.ts";
import { unmarked } from "../translate/prompt_cache.ts";
import type {
  CanonicalRequest,
  CanonicalResponse,
  FunctionTool,
  HostedTool,
  Message,
  TextPart,
} from "../translate/ir.ts";
import { MAX_STEPS, namedState } from "./resolve.ts";

/** A thread a request creates or continues, as its call uses it. */
export interface ThreadCall {
  /**
   * The gateway holds the thread the request continues: the call is translated whatever its
   * upstream (an upstream of the client's protocol holds nothing of it).
   */
  held: boolean;
  /**
   * The request a translated call sends: with the thread's conversation, system prompt and tools
   * put in. Throws when the gateway cannot hold the turn.
   */
  restore(request: CanonicalRequest): CanonicalRequest;
  /** Keeps the turn — `request` as the client sent it — and its answer under the answer's `id`. */
  keep(request: CanonicalRequest, response: CanonicalResponse, id: string): void;
}

/** What a kept turn's JSON holds (`ThreadTurn.turn`). */
interface KeptTurn {
  /** The turn that created the thread: the system prompt and tools the thread keeps. */
  create?: { system: TextPart[]; tools: FunctionTool[]; hostedTools: HostedTool[] };
  /** The turn's messages, then its answer. */
  messages?: Message[];
  /** The turn was answered but too large to keep: the thread cannot be continued from it. */
  unkept?: true;
}

/** The thread the request names, opened: read from the store when it continues one. */
export function openThread(
  ctx: RequestContext,
  names: BodyNames | undefined,
): ThreadCall | undefined | Promise<ThreadCall> {
  const thread = names?.thread;
  // No thread (the common case): no promise either.
  if (!thread) return undefined;
  if (thread.type === "create") return creating(ctx);
  return continued(ctx, thread.previous);
}

/** The thread whose last turn is `id`, read from the store. */
async function continued(ctx: RequestContext, id: string): Promise<ThreadCall> {
  const maxBytes = ctx.services.config.conversationMaxBytes;
  const chain = await ctx.services.store.threadChain(id, {
    steps: MAX_STEPS + 1,
    bytes: maxBytes * 4,
  });
  if (!chain.length) {
    const upstream = namedState(ctx).objects.get(id);
    if (upstream?.kind === "response" && upstream.accountId === ctx.principal!.accountId) {
      return heldUpstream(id);
    }
    throw threadNotFound(id);
  }
  return continuing(ctx, id, history(ctx, id, chain));
}

/** The kept conversation `chain` (newest turn first) ends, oldest first; throws when it cannot be continued. */
function history(ctx: RequestContext, id: string, chain: ThreadTurn[]): KeptTurn[] {
  const oldest = Date.now() - ctx.services.config.conversationRetentionMs;
  const account = ctx.principal!.accountId;
  // Pruning runs only every 6 h: a turn past the retention is not the caller's any more.
  if (chain.some((t) => t.accountId !== account || t.createdAt < oldest)) throw threadNotFound(id);
  const maxBytes = ctx.services.config.conversationMaxBytes;
  const bytes = chain.reduce((n, t) => n + t.turn.length, 0);
  if (chain.length > MAX_STEPS || bytes > maxBytes * 4) {
    throw threadUnsupported(
      `The thread of '${shortId(id)}' is too long for this gateway to hold.`,
    );
  }
  const turns = chain.map((t) => JSON.parse(t.turn) as KeptTurn).reverse();
  if (turns.some((t) => t.unkept)) {
    throw threadUnsupported(
      `A turn of the thread of '${shortId(id)}' was too large for this gateway to keep.`,
    );
  }
  // A thread whose first turn was pruned is gone.
  if (chain.at(-1)!.previousId !== null || !turns[0].create) throw threadNotFound(id);
  return turns;
}

/** A thread the request creates: kept when the call is translated. */
function creating(ctx: RequestContext): ThreadCall {
  return {
    held: false,
    restore(request) {
      const { system, tools, hostedTools, messages } = request;
      const bytes = JSON.stringify({ create: { system, tools, hostedTools }, messages }).length;
      if (bytes > ctx.services.config.conversationMaxBytes) {
        throw threadUnsupported("This conversation is too large for this gateway to hold.");
      }
      return request;
    },
    keep(request, response, id) {
      const { system, tools, hostedTools } = request;
      save(ctx, id, null, {
        create: { system, tools, hostedTools },
        messages: turn(request, response),
      });
    },
  };
}

/** A thread the gateway holds, continued: `turns` is its conversation so far, oldest first. */
function continuing(ctx: RequestContext, id: string, turns: KeptTurn[]): ThreadCall {
  const { create } = turns[0];
  const kept = turns.flatMap((t) => t.messages ?? []);
  return {
    held: true,
    restore(request) {
      // The thread keeps `system` and `tools` from the request that created it.
      if (request.system.length) throw keptField("system");
      if (request.tools.length || request.hostedTools.length) throw keptField("tools");
      const bytes = JSON.stringify(request.messages).length;
      if (bytes > ctx.services.config.conversationMaxBytes) {
        throw threadUnsupported("This turn is too large for this gateway to hold.");
      }
      // Breakpoints of the turns kept no longer stand: the client set this turn's.
      return { ...request, ...create!, messages: [...unmarked(kept), ...request.messages] };
    },
    keep(request, response, answerId) {
      save(ctx, answerId, id, { messages: turn(request, response) });
    },
  };
}

/** A thread the caller created on a provider that holds it: only a call to that provider can continue it. */
function heldUpstream(id: string): ThreadCall {
  return {
    held: false,
    restore() {
      throw threadNotFound(
        id,
        ": it is held by the provider of the model that created it, which does not serve this call",
      );
    },
    keep() {},
  };
}

/** The turn's messages and its answer. */
function turn(request: CanonicalRequest, response: CanonicalResponse): Message[] {
  return [...request.messages, { role: "assistant", content: response.content }];
}

/** Keeps a turn (too large: a mark that the thread ends there); a failure is logged. */
function save(ctx: RequestContext, id: string, previousId: string | null, kept: KeptTurn): void {
  let turn = JSON.stringify(kept);
  if (turn.length > ctx.services.config.conversationMaxBytes) {
    log("warn", "thread turn too large to keep", { request_id: ctx.requestId, bytes: turn.length });
    turn = JSON.stringify({ unkept: true } satisfies KeptTurn);
  }
  ctx.services.store.saveThreadTurn({
    id,
    accountId: ctx.principal!.accountId,
    previousId,
    turn,
    createdAt: Date.now(),
  }).catch((error) =>
    log("warn", "thread turn not kept", { request_id: ctx.requestId, error: String(error) })
  );
}

/** The 400 for a field a continuation may not send: the thread keeps it. */
function keptField(field: string): GatewayError {
  return new GatewayError(
    400,
    `${field}: not allowed when continuing a thread; the thread keeps the \`${field}\` of the request that created it.`,
    { param: field },
  );
}

function shortId(id: string): string {
  return id.length > 64 ? `${id.slice(0, 64)}…` : id;
}
