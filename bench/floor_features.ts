/**
 * The floor with the features: the floor proxy's work on a JSON call (see `floor_proxy.ts`) plus
 * what any gateway with Switchyard's features must also do on it, written straight, with none of
 * the gateway's layers — the most the gateway's request path could reach if its steps were folded
 * into one. On top of the floor it looks the key up in the store (the floor compares one constant
 * hash), reads the body within the configured bounds and validates it against its protocol's
 * schema, resolves the model in a catalog, plans and prices the hold from the request, sends the
 * body the protocol prepares (the upstream's model id in it), prices the charge from the answer's
 * usage, counts the gateway's metrics and writes the gateway's access-log line. JSON answers of
 * chat completions, Messages and Responses only: a stream is refused (501).
 * Prints `{"port":N}` once listening.
 *   deno run --allow-net --allow-read=DIR,src --allow-write=DIR bench/floor_features.ts UPSTREAM_URL DIR
 */
import { openSqliteStore } from "../src/store/sqlite.ts";
import { hashKey } from "../src/auth/keys.ts";
import { authenticate, presentedKey, type Principal } from "../src/auth/authenticate.ts";
import { log } from "../src/log.ts";
import { emptyUsage, price } from "../src/billing/price.ts";
import { planTokenCall } from "../src/billing/reserve.ts";
import { buildConfig } from "../src/config/load.ts";
import { readJsonObject } from "../src/http/body.ts";
import { GatewayError } from "../src/http/errors.ts";
import { fetchBody, type TextParts } from "../src/http/utf8.ts";
import { chat } from "../src/protocols/chat/index.ts";
import { messages } from "../src/protocols/messages/index.ts";
import { responses } from "../src/protocols/responses/index.ts";
import type { CallInput, WireProtocol } from "../src/protocols/wire.ts";
import {
  metrics,
  recordCharge,
  REQUESTS,
  UPSTREAM_SECONDS,
  UPSTREAM_TTFB,
} from "../src/metrics/gateway.ts";
import { FEATURES_KEY, UPSTREAM_HEADERS } from "./scenarios.ts";

const [target, dir] = Deno.args;
if (!target || !dir) throw new Error("usage: floor_features.ts UPSTREAM_URL DIR");

/** The upstream model ids the bench's floor calls name, each a catalog model of the same id. */
const config = buildConfig({
  defaultCatalog: false,
  providers: {
    openai: { type: "openai", baseUrl: `${target}/openai/v1`, apiKey: "env:UPSTREAM_KEY" },
    anthropic: { type: "anthropic", baseUrl: `${target}/anthropic`, apiKey: "env:UPSTREAM_KEY" },
  },
  models: {
    "gpt-5.4": { provider: "openai", upstream: "gpt-5.4", price: { input: 2.5, output: 15 } },
    "claude-sonnet-4-5": {
      provider: "anthropic",
      upstream: "claude-sonnet-4-5",
      price: { input: 3, output: 15 },
    },
  },
}, (name) => name === "UPSTREAM_KEY" ? UPSTREAM_HEADERS["x-api-key"] : undefined);

const store = openSqliteStore(`${dir}/floor.db`, { owner: true });
store.prepareForServing({ shared: false });
const account = await store.ensureAccount("floor-features");
await store.credit(account.id, 1e15, "bench");
const KEY_ID = `key_${FEATURES_KEY.split("-")[1]}`;
await store.insertKey({
  id: KEY_ID,
  accountId: account.id,
  hash: hashKey(FEATURES_KEY),
  prefix: FEATURES_KEY.slice(0, 10),
  rpm: null,
  createdAt: Date.now(),
});

/** The protocol of a call, by the upstream path the floor's clients call. */
const PROTOCOLS: [RegExp, WireProtocol][] = [
  [/\/chat\/completions$/, chat],
  [/\/messages$/, messages],
  [/\/responses$/, responses],
];

/** A call's input: no stored state is named by the bench's calls. */
function inputOf(req: Request, url: URL): CallInput {
  return {
    url,
    headers: req.headers,
    params: {},
    own: () => {
      throw new GatewayError(404, "No stored state here.");
    },
    owned: () => undefined,
  };
}

const error = (status: number, message: string) =>
  Response.json({ error: { message } }, { status });

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
  const started = performance.now();
  const url = new URL(req.url);
  const protocol = PROTOCOLS.find(([path]) => path.test(url.pathname))?.[1];
  if (!protocol) return error(404, "unknown path");
  let principal: Principal;
  try {
    const found = authenticate(store, presentedKey(req, url, "any"), 0, { now: Date.now() });
    principal = found instanceof Promise ? await found : found;
  } catch (e) {
    return error(401, String(e));
  }
  let body, accepted;
  try {
    body = await readJsonObject(req, config);
    accepted = protocol.accept(inputOf(req, url), body);
  } catch (e) {
    return error(e instanceof GatewayError ? e.status : 400, String(e));
  }
  if (accepted.stream) return error(501, "streams are not served here");
  const resolved = config.catalog.resolve(accepted.model);
  if (!resolved.ok) return error(404, "unknown model");
  const model = resolved.model;
  const prepared = protocol.prepare(inputOf(req, url), body, model, {
    stream: false,
    passthrough: true,
  });
  const plan = planTokenCall(
    model,
    { ...prepared.tokens, hostedTools: new Map() },
    Infinity,
    config.defaultMaxOutputTokens,
  );
  if (!plan.ok) throw new Error("a plan without a balance limit cannot fail");
  const hold = await store.reserve({
    requestId: crypto.randomUUID(),
    keyId: principal.keyId,
    accountId: principal.accountId,
    endpoint: url.pathname,
    model: model.id,
    provider: model.provider.name,
    upstreamModel: model.upstreamId,
    reserve: plan.reserve,
    estimate: price(plan.estimate, model.prices),
  });
  if (hold === null) return error(402, "insufficient balance");
  const call = prepared.call(undefined);
  const sent = performance.now();
  const upstream = await fetch(model.provider.baseUrl + call.path, {
    method: "POST",
    headers: { "content-type": "application/json", ...UPSTREAM_HEADERS },
    body: fetchBody(call.body as string | TextParts),
  });
  const labels = [model.provider.name, model.id];
  metrics.observe(UPSTREAM_TTFB, labels, (performance.now() - sent) / 1000);
  const text = await upstream.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text);
  } catch { /* no usage: charged at the estimate */ }
  const usage = prepared.usageFromJson(json);
  const charge = usage ? price(usage, model.prices) : price(plan.estimate, model.prices);
  await store.settle(hold, { ...charge, estimated: !usage });
  recordCharge(model.id, principal.accountName, usage ?? emptyUsage(), charge.amount);
  metrics.observe(UPSTREAM_SECONDS, labels, (performance.now() - sent) / 1000);
  const status = String(upstream.status);
  metrics.add(REQUESTS, [url.pathname, protocol.errors, model.id, model.provider.name, status]);
  log("info", "request", {
    request_id: `req_${crypto.randomUUID()}`,
    method: req.method,
    path: url.pathname,
    status: upstream.status,
    ms: Math.round((performance.now() - started) * 10) / 10,
    key_id: principal.keyId,
    account: principal.accountName,
    model: model.id,
    provider: model.provider.name,
    input_tokens: usage?.inputTokens ?? 0,
    output_tokens: usage?.outputTokens ?? 0,
    cost_nano_usd: charge.amount,
  });
  const type = upstream.headers.get("content-type") ?? "application/json";
  return new Response(text, { status: upstream.status, headers: { "content-type": type } });
});
console.log(JSON.stringify({ port: server.addr.port }));
// Ctrl-C exits normally, so a `--cpu-prof` run writes its profile.
Deno.addSignalListener("SIGINT", () => Deno.exit(0));
