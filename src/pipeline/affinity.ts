/**
 * Conversations stay on their cache: the calls of one conversation go to the deployment and the
 * upstream key that served it last — where the provider holds its prompt cache — while that
 * deployment is healthy. The conversation is what its protocol names from what clients already
 * send (see `ConversationId`: Claude Code's session, a `prompt_cache_key`, a `previous_response_id`
 * chain, else the hash of its cacheable prefix), for the calling account and the model asked for
 * (never shared across accounts). Its placement lasts as long as the provider keeps the cache after
 * the last call (5 minutes, or an hour for extended retention).
 *
 * A placement is a preference (`CallRoute.prefer`): the deployment is offered first, and the key
 * tried first on it, but an open circuit, resting keys, limits or a failure move the call on like
 * any other — and once another deployment or key answers, the conversation is placed there, the
 * move counted (`switchyard_cache_affinity_moves_total`) and logged (`affinity: "moved"`).
 *
 * Placements live in the board's table, shared by the process's serving threads (see
 * `routing/affinity.ts`); on a store several replicas share (`Store.affinity`), a placement is
 * also written there when it changes (or when the stored expiry runs low) before the call ends, and
 * read from there when this process has none or its copy is over a second old.
 *
 * A miss translation caused is noted too: on an Anthropic-type upstream (whose cache is read
 * exactly where a prefix matches, not best-effort), a translated call kept on the deployment and
 * key whose last call left a cache of the same client prefix (system, tools, first turn), that
 * reads none of it, missed only because what the gateway wrote upstream differed from last time —
 * noted on the bill as a `translation` miss. (Which prefix a provider holds is known to the process
 * that served the call; a placement read from a store replicas share knows none.)
 */
import type { ResolvedModel } from "../catalog/catalog.ts";
import { targetName } from "../catalog/catalog.ts";
import { boardOf, callRoute, type RequestContext } from "../context.ts";
import type { JsonBody } from "../http/body.ts";
import { log } from "../log.ts";
import { AFFINITY_MOVES, metrics } from "../metrics/gateway.ts";
import { hashesOf } from "../name_hash.ts";
import { prefixHash } from "../protocols/conversation.ts";
import { protocolsOf } from "../providers/index.ts";
import type { CallInput, ConversationId, WireProtocol } from "../protocols/wire.ts";
import type { Bill } from "../billing/ledger.ts";
import type { Usage } from "../billing/price.ts";
import type { Placement } from "../routing/affinity.ts";
import type { StepOf } from "./call.ts";

/** How long a provider keeps a prompt cache after its last use: the default, and extended. */
const CACHE_MS = 5 * 60_000;
const EXTENDED_CACHE_MS = 60 * 60_000;
/** How long this process trusts its copy of a placement on a store replicas share. */
const LOCAL_MS = 1000;

/** A call's conversation, as its placement is looked up and recorded. */
interface Conversation {
  /** The two halves of its hash (with the account, the table's key), and the store's name of it. */
  a: number;
  b: number;
  id: string;
  ttlMs: number;
  chained: boolean;
  accountId: number;
  /** The model asked for. */
  model: ResolvedModel;
  /** Its cacheable prefix as the client sent it (see `ConversationId.parts`), and its hash. */
  parts: readonly unknown[];
  prefixHash?: number;
  /**
   * Whether its placement is shared through a store replicas share; not when its model has
   * nothing to choose (it is followed only to note a translation's miss, see the module's doc).
   */
  shared: boolean;
  /** Its placement when the call began (live), if any. */
  was?: Placement;
}

const conversations = new WeakMap<RequestContext, Conversation>();

/** A name's 32-bit hash, as the table holds deployments and keys. */
const nameHash = (name: string) => hashesOf(name)[0];

/** A 32-bit hash as 8 hex digits. */
const hex = (hash: number) => (hash >>> 0).toString(16).padStart(8, "0");

/** The conversation `id` of the account, for `model` (see the module's doc). */
function conversationOf(
  accountId: number,
  model: ResolvedModel,
  id: string,
  extended: boolean,
  chained: boolean,
  parts: readonly unknown[] = [],
): Conversation {
  // Two FNV-1a hashes (nonzero: 0 is a free entry), in JavaScript: a native hash costs more.
  const [a, b] = hashesOf(`${accountId}\n${model.id}\n${id}`);
  return {
    a,
    b,
    id: `${accountId}:${hex(a)}${hex(b)}`,
    ttlMs: extended ? EXTENDED_CACHE_MS : CACHE_MS,
    chained,
    accountId,
    model,
    parts,
    shared: true,
  };
}

/** Whether the model's calls have a deployment or key to choose (else there is nothing to keep). */
function choosable(model: ResolvedModel): boolean {
  const targets = model.route.targets;
  return targets.length > 1 || (targets[0]?.provider.keys.length ?? 0) > 1;
}

/**
 * Whether `client`'s calls to `model` are translated for an Anthropic-type upstream somewhere: a
 * miss translation causes there is noted (see the module's doc) even with nothing to choose.
 */
function translatedToCache(client: WireProtocol, model: ResolvedModel): boolean {
  return model.route.targets.some((target) => {
    const speaks = protocolsOf(target.provider);
    return !speaks.includes(client.id) && speaks[0] === "messages";
  });
}

/**
 * Looks up where a text call's conversation has its cache and makes it the call's preference
 * (see the module's doc); the placement is recorded once the call is answered (`affinityStep`).
 */
export function keepConversation(
  ctx: RequestContext,
  client: WireProtocol,
  input: CallInput,
  body: JsonBody,
  model: ResolvedModel,
): Promise<void> | undefined {
  // Nothing to look up (affinity off, or no conversation to keep): no promise.
  if (!ctx.services.config.routing.cacheAffinity || !ctx.principal || !client.conversation) return;
  if (!choosable(model) && !translatedToCache(client, model)) return;
  const named = client.conversation(input, body);
  if (!named) return;
  return placeConversation(ctx, named, model);
}

/** `keepConversation`'s look-up of where the conversation `named` was placed last. */
async function placeConversation(
  ctx: RequestContext,
  named: ConversationId,
  model: ResolvedModel,
): Promise<void> {
  const conversation = conversationOf(
    ctx.principal!.accountId,
    model,
    named.id,
    named.extended,
    named.chained === true,
    named.parts,
  );
  conversation.prefixHash = named.prefixHash;
  conversation.shared = choosable(model);
  conversation.was = await placementOf(ctx, conversation);
  conversations.set(ctx, conversation);
  const was = conversation.was;
  if (!was) return;
  const target = model.route.targets.find((t) => nameHash(t.name) === was.target);
  const key = target?.provider.keys.find((k) => nameHash(k.id) === was.key);
  if (target) callRoute(ctx).prefer = { target: target.name, key: key?.id ?? "" };
}

/** The conversation's live placement: this process's, or the store's when that one is older. */
async function placementOf(
  ctx: RequestContext,
  conversation: Conversation,
): Promise<Placement | undefined> {
  const table = boardOf(ctx.services).affinity;
  const { a, b } = conversation;
  const now = ctx.now();
  const local = table.find(a, b, conversation.accountId, now);
  const store = ctx.services.store;
  if (
    !conversation.shared || !store.affinity || (local && now - local.synced <= LOCAL_MS) ||
    store.unreachable?.()
  ) {
    return local;
  }
  let record;
  try {
    record = await store.affinity(conversation.id);
  } catch {
    return local; // a placement is a preference: the call goes on without the store's
  }
  const target = record && nameHash(record.deployment);
  const key = record && nameHash(record.key);
  const placed: Placement | undefined = record && record.expiresAt > now
    ? {
      target: target!,
      key: key!,
      expires: record.expiresAt,
      synced: now,
      stored: record.expiresAt,
      // What this process knows of the provider's cache holds while the placement is the same.
      cached: local?.target === target && local?.key === key ? local?.cached ?? 0 : 0,
    }
    // The store has none (yet): this process's stands, checked again in a second.
    : local && { ...local, synced: now };
  if (placed) table.put(a, b, conversation.accountId, placed, now);
  return placed;
}

/**
 * The affinity step: as the answer's relay begins, the conversation is placed on the deployment
 * and key that answered (its cache is there now) — kept, new, or moved (counted) — for every thread
 * at once; for a client that continues by answer id, each answer's id then names the conversation
 * too. What a store replicas share is to hold is written before the call ends (so before the
 * client has the whole answer, and can send the next turn to another replica).
 */
export const affinityStep: StepOf = ({ call, bill }) => {
  const conversation = conversations.get(call.ctx);
  if (!conversation) return undefined;
  const { ctx } = call;
  const deployment = targetName(call.model);
  const key = callRoute(ctx).keyUsed ?? "";
  const writes: Promise<void>[] = [];
  let kept = false;
  return {
    before() {
      const was = conversation.was;
      let outcome: "kept" | "new" | "moved" = "new";
      if (was) {
        const same = was.target === nameHash(deployment) && was.key === nameHash(key);
        outcome = same ? "kept" : "moved";
      }
      ctx.log.affinity = outcome;
      if (outcome === "moved") {
        metrics.add(AFFINITY_MOVES, [deploymentOf(ctx, conversation, was!)]);
        // The cache it left behind: a miss the gateway caused, by another deployment or key. How
        // much it would have read is not known here; the bill caps it at the input it did not
        // read (so the loss is an upper estimate).
        const cause = was!.target === nameHash(deployment) ? "key_rotation" : "failover";
        bill.cacheMiss({ cause, tokens: Number.MAX_SAFE_INTEGER });
      }
      const write = place(ctx, conversation, deployment, key, outcome === "kept" ? was : undefined);
      if (write) writes.push(write);
      kept = outcome === "kept";
    },
    async after(end) {
      if (end.outcome === "charged" && call.translate && call.upstreamFormat === "anthropic") {
        noteCache(ctx, conversation, deployment, key, kept, end.usage, bill);
      }
      if (conversation.chained && end.outcome === "charged") {
        // The answer's id as the client sees it: the upstream's, or the gateway's translated one.
        const ids = end.objects.filter((o) => o.kind === "response").map((o) => o.id);
        if (call.translate) ids.push(call.translate.info.id);
        for (const id of ids) {
          const extended = conversation.ttlMs === EXTENDED_CACHE_MS;
          const alias = conversationOf(
            conversation.accountId,
            conversation.model,
            `answer:${id}`,
            extended,
            true,
          );
          alias.shared = conversation.shared;
          const write = place(ctx, alias, deployment, key);
          if (write) writes.push(write);
        }
      }
      await Promise.all(writes);
    },
  };
};

/**
 * For a translated call to an Anthropic-type upstream (see the module's doc): notes a miss that
 * translation caused on its bill, and which client prefix the provider now holds a cache of.
 */
function noteCache(
  ctx: RequestContext,
  conversation: Conversation,
  deployment: string,
  key: string,
  kept: boolean,
  usage: Usage | null,
  bill: Bill,
): void {
  if (!usage) return;
  const cached = usage.cachedInputTokens > 0 || usage.cacheWriteTokens > 0 ||
    usage.cacheWrite1hTokens > 0;
  const held = kept ? conversation.was?.cached ?? 0 : 0;
  if (!cached && !held) return;
  const prefix = conversation.prefixHash ??= prefixHash(conversation.parts);
  if (held === prefix && usage.cachedInputTokens === 0) {
    // As for a move, how much it would have read is not known: the bill caps it at the input.
    bill.cacheMiss({ cause: "translation", tokens: Number.MAX_SAFE_INTEGER });
  }
  const { a, b, accountId } = conversation;
  boardOf(ctx.services).affinity.markCached(
    a,
    b,
    accountId,
    nameHash(deployment),
    nameHash(key),
    cached ? prefix : 0,
  );
}

/**
 * Places `conversation` on `deployment` and `key` until its cache runs out, in the shared table;
 * and — the returned write, which never rejects — on a store replicas share, when the placement
 * changed or the stored expiry runs low (`kept`: the placement it had).
 */
function place(
  ctx: RequestContext,
  conversation: Conversation,
  deployment: string,
  key: string,
  kept?: Placement,
): Promise<void> | undefined {
  const now = ctx.now();
  const expires = now + conversation.ttlMs;
  const store = ctx.services.store;
  const write = conversation.shared && store.saveAffinity !== undefined &&
    !store.unreachable?.() && (!kept || kept.stored - now < conversation.ttlMs / 2);
  const { a, b, accountId } = conversation;
  boardOf(ctx.services).affinity.put(a, b, accountId, {
    target: nameHash(deployment),
    key: nameHash(key),
    expires,
    synced: write ? now : kept?.synced ?? now,
    stored: write ? expires : kept?.stored ?? 0,
    cached: kept?.cached ?? 0,
  }, now);
  if (!write) return undefined;
  return store.saveAffinity!(conversation.id, { deployment, key, expiresAt: expires }).catch((
    error,
  ) =>
    log("warn", "a conversation's placement was not stored", {
      request_id: ctx.requestId,
      error: String(error),
    })
  );
}

/** The name of the deployment a conversation left (its model's or a fallback's), for the metric. */
function deploymentOf(ctx: RequestContext, conversation: Conversation, was: Placement): string {
  const { route } = conversation.model;
  const catalog = ctx.services.config.catalog;
  const models = [
    conversation.model,
    ...route.fallbacks.map((id) => catalog.resolve(id)).flatMap((r) => r.ok ? [r.model] : []),
  ];
  for (const model of models) {
    const left = model.route.targets.find((t) => nameHash(t.name) === was.target);
    if (left) return left.name;
  }
  return "other";
}
