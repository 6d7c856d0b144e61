/**
 * The text routes — Responses, Messages, generateContent, chat completions — as one pipeline:
 * read the client's request in its protocol, resolve the model, plan the call (see
 * `translate/plan.ts`), then run it: the body as it is when the provider speaks the client's
 * protocol, or decoded into the canonical form and encoded in the provider's. Everything after —
 * the route, the hold, the send, the relay and the settlement — is `routeCall`'s (see `route.ts`),
 * metered on the upstream's side.
 */
import type { Handler, RequestContext } from "../context.ts";
import { type JsonBody, readJsonObject } from "../http/body.ts";
import { GatewayError } from "../http/errors.ts";
import { PROTOCOLS } from "../protocols/index.ts";
import type { ResolvedModel } from "../catalog/catalog.ts";
import type { Accepted, CallInput, PreparedCall, WireProtocol } from "../protocols/wire.ts";
import { protocolsOf } from "../providers/index.ts";
import type { AnswerInfo } from "../translate/codec.ts";
import type { CanonicalResponse } from "../translate/ir.ts";
import { TOKEN_PREFIX, toToken } from "../translate/opaque.ts";
import { planCall } from "../translate/plan.ts";
import type { Call, Translation } from "./call.ts";
import { routeCall } from "./route.ts";
import { resolveModel } from "./resolve.ts";
import { callInput, loadNamedState } from "./named_state.ts";
import { conversationOf } from "./conversations.ts";

/** The handler of a text route whose clients speak `client`. */
export function textCall(client: WireProtocol): Handler {
  return async (ctx) => {
    const body = await readJsonObject(ctx.req, ctx.services.config);
    const input = callInput(ctx);
    const accepted = client.accept(input, body);
    await loadNamedState(ctx, body.value);
    const model = resolveModel(ctx, accepted.model, "text");
    // Each deployment (or fallback) the router tries gets the call built for its provider.
    const build = (target: ResolvedModel) => buildCall(ctx, input, client, accepted, body, target);
    // A body continuing upstream state (a stored response) goes to the provider holding it.
    const pin = client.stateProvider?.(input, body.value);
    return await routeCall(ctx, model, build, true, pin);
  };
}

/** The call of a text request as `model`'s provider takes it: passed through, or translated. */
function buildCall(
  ctx: RequestContext,
  input: CallInput,
  client: WireProtocol,
  accepted: Accepted,
  body: JsonBody,
  model: ResolvedModel,
): Call {
  const plan = planCall(client.id, protocolsOf(model.provider));
  if (plan.kind === "refuse") {
    throw new GatewayError(400, `The model \`${model.id}\` cannot be reached from this route.`, {
      param: "model",
      code: "model_not_supported",
    });
  }
  // A conversation the gateway keeps itself is continued through the canonical form, even on an
  // upstream of the client's own protocol (it holds nothing of it).
  // So is a body carrying gateway tokens of opaque state (a conversation that moved between
  // providers): each goes back to the provider that issued it, or nowhere.
  const held = (conversationOf(client.id)?.held(ctx, body.value) ?? false) ||
    body.text.includes(TOKEN_PREFIX);
  if (plan.kind === "passthrough" && !held) {
    const prepared = client.prepare(input, body, model, {
      stream: accepted.stream,
      jsonArray: accepted.jsonArray,
      passthrough: true,
      usageChunk: accepted.usageChunk,
    });
    return {
      ...callOptions(ctx, client, accepted, model, prepared),
      errorTail: (started) => client.errorTail(started, accepted.jsonArray),
      rewrite: prepared.rewrite,
      objectsFromJson: prepared.objectsFromJson,
      keepResponses: prepared.keepResponses,
      codec: client,
      showUsage: client.usageView,
      isAnswer: client.usageView.answer,
    };
  }
  const upstream = PROTOCOLS[plan.kind === "translate" ? plan.to : client.id];
  return translated(ctx, input, client, upstream, accepted, body.value, model);
}

/** What every text call is: the call as its upstream's protocol prepared it. */
function callOptions(
  ctx: RequestContext,
  client: WireProtocol,
  accepted: Accepted,
  model: ResolvedModel,
  prepared: PreparedCall,
) {
  return {
    ctx,
    format: client.errors,
    endpoint: accepted.endpoint,
    model,
    tokens: prepared.tokens,
    stream: accepted.stream,
    call: prepared.call,
    usageFromJson: prepared.usageFromJson,
    meter: prepared.meter,
    framing: prepared.framing,
  };
}

function translated(
  ctx: RequestContext,
  input: CallInput,
  client: WireProtocol,
  upstream: WireProtocol,
  accepted: Accepted,
  clientBody: Record<string, unknown>,
  model: ResolvedModel,
): Call {
  const own = client.decodeRequest(clientBody, { stream: accepted.stream });
  const conversation = conversationOf(client.id);
  const request = conversation ? conversation.restore(ctx, clientBody, own) : own;
  const encoded = upstream.encodeRequest(request, {
    model: model.upstreamId,
    provider: model.provider.name,
    family: model.provider.type,
  });
  const prepared = upstream.prepare(
    input,
    { text: JSON.stringify(encoded), value: encoded },
    model,
    { stream: accepted.stream, passthrough: false },
  );
  ctx.log.translated = `${client.id}>${upstream.id}`;
  const info: AnswerInfo = {
    id: client.answerId(),
    model: accepted.model,
    created: Math.floor(Date.now() / 1000),
    usageChunk: accepted.usageChunk,
    jsonArray: accepted.jsonArray,
    customTools: new Set(own.tools.filter((t) => t.kind === "custom").map((t) => t.name)),
    namespaced: new Map(
      own.tools.flatMap((t) =>
        t.namespace
          ? [[t.name, { namespace: t.namespace, name: t.name.slice(t.namespace.length + 2) }]]
          : []
      ),
    ),
    token: toToken,
  };
  const translation: Translation = {
    upstream,
    client,
    provider: model.provider.name,
    info,
    ...(conversation
      ? {
        onAnswer: (response: CanonicalResponse) =>
          conversation.keep(ctx, clientBody, own, response, info.id),
      }
      : {}),
  };
  return {
    ...callOptions(ctx, client, accepted, model, prepared),
    upstreamFormat: upstream.errors,
    translate: translation,
    isAnswer: upstream.usageView.answer,
  };
}
