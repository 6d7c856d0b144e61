/**
 * The counting routes — `/v1/messages/count_tokens`, `/v1/responses/input_tokens`, `:countTokens`
 * — for every text model, free of charge (the call still counts toward the key's RPM). The plan is
 * the text routes' own: a provider of the client's protocol gets the body as it is (model id
 * swapped); any other gets it translated to its own counting endpoint when its protocol has one;
 * a chat-only upstream, or a vendor without a counting endpoint, gets the local estimate. The
 * header `x-switchyard-token-count` says which (`upstream` | `estimate`).
 */
import { callRoute, type Handler, type RequestContext } from "../context.ts";
import { readJsonObject } from "../http/body.ts";
import { concatBytes } from "../http/bytes.ts";
import { GatewayError } from "../http/errors.ts";
import { jsonResponse } from "../http/json.ts";
import { estimateInput } from "../billing/estimate.ts";
import type { ResolvedModel } from "../catalog/catalog.ts";
import type { CountClient, CountTarget, WireProtocol } from "../protocols/wire.ts";
import { PROTOCOLS } from "../protocols/index.ts";
import { protocolsOf, upstreamDeadlines } from "../providers/index.ts";
import { send } from "../routing/send.ts";
import type { Json } from "../translate/ir.ts";
import { planCall } from "../translate/plan.ts";
import { relayUpstreamError } from "./upstream_errors.ts";
import { callInput, continuesKept, loadNamedState, resolveModel } from "./resolve.ts";
import { keptConversations } from "./conversations.ts";

const MAX_COUNT_BYTES = 1 << 16;

/** The handler of a counting route whose clients speak `client`. */
export function countCall(client: WireProtocol): Handler {
  return async (ctx) => {
    const body = await readJsonObject(ctx.req, ctx.services.config);
    const counting = client.count!.client;
    const input = callInput(ctx);
    const request = counting.accept(input, body.value);
    const names = client.names?.of(body.value);
    await loadNamedState(ctx, names);
    const model = request.model === undefined
      ? undefined
      : resolveModel(ctx, request.model, "text");
    if (!model) return estimate(counting, body.value);
    const plan = planCall(client.id, protocolsOf(model.provider));
    const held = continuesKept(ctx, names);
    if (plan.kind === "passthrough" && !held) {
      const own = client.count?.upstream.target(model, input);
      if (!own) return estimate(counting, body.value);
      return await forward(ctx, client, client, model, own, counting.passBody(input, body, model));
    }
    if (plan.kind === "refuse") return estimate(counting, body.value);
    const upstream = PROTOCOLS[plan.kind === "translate" ? plan.to : client.id];
    const target = upstream.count?.upstream.target(model, input);
    if (!target) return estimate(counting, body.value);
    const chained = client.names?.chained;
    const own = client.decodeRequest(
      counting.request(body.value),
      chained ? { kept: (id) => keptConversations.answer(ctx, id) } : {},
    );
    const canonical = chained ? keptConversations.restore(ctx, body.value, own) : own;
    const encoded = upstream.encodeRequest(canonical, {
      model: model.upstreamId,
      provider: model.provider.name,
      family: model.provider.type,
    });
    const sent = upstream.count!.upstream.fromRequest(encoded, model);
    return await forward(ctx, client, upstream, model, target, JSON.stringify(sent));
  };
}

/** Where a protocol's counting endpoint is, for a model. */
function estimate(counting: CountClient, body: Json): Response {
  const counted = counting.counted.map((field) => body[field]);
  return jsonResponse(counting.answer(estimateInput(counted).typical), 200, {
    "x-switchyard-token-count": "estimate",
  });
}

async function forward(
  ctx: RequestContext,
  client: WireProtocol,
  upstream: WireProtocol,
  model: ResolvedModel,
  target: CountTarget,
  text: string,
): Promise<Response> {
  const response = await send(
    model.provider,
    { protocol: upstream.id, path: target.path, body: text, headers: target.headers },
    new AbortController(),
    upstreamDeadlines(ctx.services.config),
    callRoute(ctx),
  );
  if (!response.ok) {
    return await relayUpstreamError(response, client.errors, model, upstream.errors);
  }
  const raw = await readSmall(response);
  let tokens: number | undefined;
  try {
    const json = JSON.parse(raw);
    if (json && typeof json === "object" && !Array.isArray(json)) {
      tokens = upstream.count!.upstream.read(json);
    }
  } catch { /* not JSON: 502 below */ }
  if (tokens === undefined || !Number.isSafeInteger(tokens) || tokens < 0) {
    throw new GatewayError(502, "The upstream provider answered the count with no token count.");
  }
  const answer = client === upstream ? JSON.parse(raw) : client.count!.client.answer(tokens);
  return jsonResponse(answer, 200, { "x-switchyard-token-count": "upstream" });
}

async function readSmall(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > MAX_COUNT_BYTES) {
      await reader.cancel();
      throw new GatewayError(502, "The upstream provider's count answer is too large.");
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(concatBytes(chunks));
}
