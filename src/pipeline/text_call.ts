/**
 * The text routes — Responses, Messages, generateContent, chat completions — as one pipeline:
 * read the client's request in its protocol (`accept`), resolve what it names (its model and
 * stored state, see `resolve.ts`), then route it (`route.ts`: admit, send, relay, settle), which
 * takes from `callFor` the call each deployment it tries gets, planned for its provider (see
 * `translate/plan.ts`): the body as it is when the provider speaks the client's protocol, or
 * decoded into the canonical form and encoded in the provider's, with the adaptations that made
 * (shown, or refused in strict mode: see `adapted.ts`). Everything after is metered on the
 * upstream's side.
 */
import type { Handler, RequestContext } from "../context.ts";
import type { SocketSender } from "../providers/transport.ts";
import { type ClientBody, readJsonObject } from "../http/body.ts";
import { GatewayError } from "../http/errors.ts";
import { PROTOCOLS } from "../protocols/index.ts";
import type { ResolvedModel } from "../catalog/catalog.ts";
import type {
  Accepted,
  BodyNames,
  CallInput,
  PreparedCall,
  WireProtocol,
} from "../protocols/wire.ts";
import { protocolsOf } from "../providers/index.ts";
import { collect } from "../translate/adaptations.ts";
import type { AnswerInfo } from "../translate/codec.ts";
import type { CanonicalResponse } from "../translate/ir.ts";
import { TOKEN_PREFIX, toToken } from "../translate/opaque.ts";
import { planCall } from "../translate/plan.ts";
import { toolForms } from "../translate/tool_forms.ts";
import type { Call, Translation } from "./call.ts";
import { keptConversations } from "./conversations.ts";
import { translationDrift } from "../test_hooks.ts";
import { keepConversation } from "./affinity.ts";
import {
  callInput,
  continuedProvider,
  continuesKept,
  loadNamedState,
  resolveModel,
} from "./resolve.ts";
import { routeCall } from "./route.ts";
import { adaptedOrRefused, strictMode } from "./adapted.ts";
import { openThread, type ThreadCall } from "./threads.ts";

/** A text request as read and resolved, before any deployment is chosen. */
interface TextRequest {
  ctx: RequestContext;
  client: WireProtocol;
  input: CallInput;
  accepted: Accepted;
  /** Its parsed value is let go once a call is planned (see `plannedCall`). */
  body: ClientBody;
  names: BodyNames | undefined;
  /**
   * It must be translated whatever the upstream: it continues a conversation the gateway keeps,
   * or refers to items of an answer it keeps (an upstream of the client's own protocol holds
   * nothing of them), or carries gateway tokens of
   * opaque state (a conversation that moved between providers: each goes back to the provider
   * that issued it, or nowhere).
   */
  held: boolean;
  /** Adaptations are refused (strict mode). */
  strict: boolean;
  /** The Messages thread it creates or continues (see `threads.ts`). */
  thread?: ThreadCall;
}

/** The handler of a text route whose clients speak `client`. */
export function textCall(client: WireProtocol): Handler {
  return async (ctx) => {
    const body = await readJsonObject(ctx.req, ctx.services.config);
    const input = callInput(ctx);
    const accepted = client.accept(input, body);
    const names = client.names?.of(body.value);
    // Each of these answers at once in the common case (no stored state named, no thread, no
    // conversation to place): awaited only when it did not.
    const loading = loadNamedState(ctx, names);
    if (loading) await loading;
    const model = resolveModel(ctx, accepted.model, "text");
    let thread = openThread(ctx, names);
    if (thread instanceof Promise) thread = await thread;
    const held = continuesKept(ctx, names) || body.text.includes(TOKEN_PREFIX) || !!thread?.held;
    const strict = strictMode(ctx);
    const request: TextRequest = {
      ctx,
      client,
      input,
      accepted,
      body,
      names,
      held,
      strict,
      thread,
    };
    // A body continuing upstream state (a stored response) goes to the provider holding it.
    const pin = continuedProvider(ctx, names);
    // The deployment and key holding the conversation's prompt cache, first.
    const placing = keepConversation(ctx, client, input, body, model);
    if (placing) await placing;
    return await routeCall(ctx, model, plannedCall(request), true, pin);
  };
}

/**
 * The call of `request` for each deployment tried. Once one is planned, the client's parsed body
 * is let go: the call holds what it sends as text, and the value is parsed again only for another
 * deployment. An agent's conversation parsed is many thousands of small objects: kept while the
 * call waits for its hold and its upstream, young collections would copy them again and again.
 */
function plannedCall(request: TextRequest): (model: ResolvedModel) => Call {
  return (model) => {
    try {
      return callFor(request, model);
    } finally {
      request.body.release();
    }
  };
}

/** The provider types whose Responses API is also served over WebSocket. */
const SOCKET_TYPES = new Set(["openai", "xai"]);

/** The call of a text request as `model`'s provider takes it: passed through, or translated. */
function callFor(request: TextRequest, model: ResolvedModel): Call {
  const { client, accepted } = request;
  const plan = planCall(client.id, protocolsOf(model.provider));
  if (plan.kind === "refuse") {
    throw new GatewayError(400, `The model \`${model.id}\` cannot be reached from this route.`, {
      param: "model",
      code: "model_not_supported",
    });
  }
  // A thread goes as it is only to a provider that holds threads; the gateway holds it for others.
  const holdsThread = !request.thread || model.provider.messageThreads === true;
  if (plan.kind === "passthrough" && !request.held && holdsThread) {
    const prepared = client.prepare(request.input, request.body, model, {
      stream: accepted.stream,
      jsonArray: accepted.jsonArray,
      passthrough: true,
      usageChunk: accepted.usageChunk,
    });
    // A WebSocket's turn goes over the upstream's WebSocket where it has one (OpenAI's, xAI's).
    const socket = request.ctx.socket?.upstream;
    const overSocket = socket && client.id === "responses" && SOCKET_TYPES.has(model.provider.type);
    // One object, its fields added, not copied from another.
    const call = callOf(request, model, prepared);
    if (overSocket) call.call = overTheSocket(prepared, socket);
    call.errorTail = errorTailOf(client, accepted.jsonArray);
    call.strip = prepared.strip;
    call.objectsFromJson = prepared.objectsFromJson;
    call.keepResponses = prepared.keepResponses;
    call.codec = client;
    call.showUsage = client.answers.usage;
    call.isAnswer = client.answers.usage.answer;
    return call;
  }
  const upstream = PROTOCOLS[plan.kind === "translate" ? plan.to : client.id];
  return translated(request, upstream, model);
}

// The functions a call keeps are built apart from `callFor`'s scope, which holds `prepared` — its
// request builder holds the body's text, which a stream would otherwise keep to its end (see
// `relay.ts`).

/** A WebSocket turn's upstream request: the prepared one, over the upstream's socket. */
function overTheSocket(prepared: PreparedCall, socket: SocketSender): Call["call"] {
  return (cap) => ({ ...prepared.call(cap), socket });
}

/** The end of a stream the upstream cut, in the client's protocol. */
function errorTailOf(client: WireProtocol, jsonArray: boolean | undefined): Call["errorTail"] {
  return (started) => client.answers.errorTail(started, jsonArray);
}

/** What every text call is: the call as its upstream's protocol prepared it. */
function callOf(request: TextRequest, model: ResolvedModel, prepared: PreparedCall): Call {
  return {
    ctx: request.ctx,
    format: request.client.errors,
    endpoint: request.accepted.endpoint,
    model,
    tokens: prepared.tokens,
    stream: request.accepted.stream,
    call: prepared.call,
    usageFromJson: prepared.usageFromJson,
    meter: prepared.meter,
    framing: prepared.framing,
    abortFailed: request.client.answers.abortFailed,
  };
}

/**
 * A translated call: the client's request decoded (with the conversation the gateway keeps put in
 * front, for a client that chains calls or continues a thread) and encoded for the upstream; its
 * answer decoded and encoded back, and kept when the client may continue it.
 */
function translated(request: TextRequest, upstream: WireProtocol, model: ResolvedModel): Call {
  const { ctx, client, accepted } = request;
  const clientBody = request.body.value;
  if (clientBody.generate === false) {
    throw new GatewayError(
      400,
      `Invalid 'generate': a response that is not generated (warming up a WebSocket's state) is supported on OpenAI and xAI models only, not on \`${model.id}\`.`,
      { param: "generate", code: "unsupported_value" },
    );
  }
  const conversation = client.names?.chained ? keptConversations : undefined;
  const decoded = collect((adapt) =>
    client.decodeRequest(clientBody, {
      stream: accepted.stream,
      ...(conversation ? { kept: (id: string) => conversation.answer(ctx, id) } : {}),
    }, adapt)
  );
  const own = decoded.value;
  const thread = request.thread;
  const canonical = thread
    ? thread.restore(own)
    : conversation
    ? conversation.restore(ctx, clientBody, own)
    : own;
  const target = {
    model: model.upstreamId,
    provider: model.provider.name,
    family: model.provider.type,
    ...(model.cacheBreakpoints === false ? { cacheBreakpoints: false } : {}),
  };
  const drift = translationDrift(ctx.req);
  const sent = drift
    ? { ...canonical, system: [{ type: "text" as const, text: drift }, ...canonical.system] }
    : canonical;
  const { value: encoded, adaptations } = collect((adapt) =>
    upstream.encodeRequest(sent, target, adapt)
  );
  const adapted = adaptedOrRefused(
    [...decoded.adaptations, ...adaptations],
    request.strict,
    upstream.id,
  );
  const prepared = upstream.prepare(
    request.input,
    { text: JSON.stringify(encoded), value: encoded },
    model,
    { stream: accepted.stream, passthrough: false },
  );
  ctx.log.translated = `${client.id}>${upstream.id}`;
  const info: AnswerInfo = {
    id: client.answers.id(),
    model: accepted.model,
    created: Math.floor(Date.now() / 1000),
    usageChunk: accepted.usageChunk,
    jsonArray: accepted.jsonArray,
    // A thread's continuation names no tools: they are the thread's.
    ...toolForms(thread ? canonical.tools : own.tools),
    ...(conversation && typeof request.names?.previous === "string"
      ? { previousId: request.names.previous }
      : {}),
    token: toToken,
  };
  const translation: Translation = {
    upstream,
    client,
    provider: model.provider.name,
    info,
    adapted,
    ...(thread
      ? { onAnswer: (response: CanonicalResponse) => thread.keep(own, response, info.id) }
      : conversation
      ? {
        onAnswer: (response: CanonicalResponse) =>
          conversation.keep(ctx, clientBody, own, response, info.id, canonical),
      }
      : {}),
  };
  const call = callOf(request, model, prepared);
  call.upstreamFormat = upstream.errors;
  call.translate = translation;
  call.isAnswer = upstream.answers.usage.answer;
  return call;
}
