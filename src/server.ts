/**
 * The HTTP front: request id, route lookup, auth, rate limit, the handler, protocol-native errors,
 * and one JSON access-log line per request. `server.ts` only strings the steps together.
 */
import { authenticate, presentedKey } from "./auth/authenticate.ts";
import { type RateDecision, RateLimiter, rateLimitHeaders, UNLIMITED } from "./auth/ratelimit.ts";
import { type Store, StoreUnavailable } from "./store/store.ts";
import type { RequestContext, Services, SocketState } from "./context.ts";
import { type ErrorFormat, errorResponse, formatForPath, GatewayError } from "./http/errors.ts";
import { Router } from "./router.ts";
import { type Route, routes as defaultRoutes } from "./routes.ts";
import { log } from "./log.ts";
import { LimitRefused } from "./billing/ledger.ts";
import { noteRefused } from "./billing/spend_notes.ts";
import { metrics, RATE_LIMITED, REFUSED, REQUESTS } from "./metrics/gateway.ts";
import { redactServerSpan, startCallSpan } from "./metrics/trace.ts";
import { faultPoint, requestClock } from "./test_hooks.ts";
import { lastUsed } from "./auth/last_used.ts";
import { checkHeaderBytes } from "./http/header_size.ts";

/** A client's own request id is used when it is this safe (else one is generated). */
const REQUEST_ID = /^[\w.:-]{1,128}$/;
/** Longer request ids are refused (400). */
const MAX_REQUEST_ID = 128;
/** How often the keys' last use is written (see `auth/last_used.ts`). */
const LAST_USED_FLUSH_MS = 30_000;

/**
 * Counts requests per key per minute: a `RateLimiter` in this thread, or the process's one that
 * serving threads share (see `serve/workers.ts`).
 */
export interface Limiter {
  check(key: string, limit: number): RateDecision | Promise<RateDecision>;
}

/**
 * A store several hosts share counts requests per minute itself (see `Store.countRequest`), for
 * the key as a whole; else `fallback` counts them in this process.
 */
function limiterFor(store: Store, fallback: Limiter): Limiter {
  const count = store.countRequest?.bind(store);
  return count ? { check: (key, limit) => limit <= 0 ? UNLIMITED : count(key, limit) } : fallback;
}

/** The 503 of a call the gateway cannot bill now: its store cannot be reached. */
function storeUnavailable(): GatewayError {
  return new GatewayError(
    503,
    "The gateway cannot reach its database right now, so it cannot bill this call; retry shortly.",
    { headers: { "retry-after": "1" } },
  );
}

/** The client's response to a failed request (an unexpected error is logged, and a 500). */
function failure(error: unknown, format: ErrorFormat, requestId: string, path: string): Response {
  if (!(error instanceof GatewayError) && !(error instanceof StoreUnavailable)) {
    log("error", "unhandled error", { request_id: requestId, error: String(error) });
  }
  const gatewayError = error instanceof GatewayError
    ? error
    : error instanceof StoreUnavailable
    ? storeUnavailable()
    : new GatewayError(500, "The gateway had an internal error while handling the request.");
  if (gatewayError.status < 500) metrics.add(REFUSED, [path, String(gatewayError.status)]);
  return errorResponse(format, gatewayError, requestId);
}

/** The server's own headers on a response: the request id, rate limits, how the call was routed. */
function setServerHeaders(
  response: Response,
  ctx: RequestContext,
  format: ErrorFormat,
  requestId: string,
  extra: Record<string, string>,
): void {
  const headers = response.headers;
  headers.set("x-request-id", requestId);
  // Anthropic's own header, which its SDK exposes as `_request_id`.
  if (format === "anthropic") headers.set("request-id", requestId);
  for (const name in extra) headers.set(name, extra[name]);
  const own = ctx.headers;
  if (own) { for (const name in own) headers.set(name, own[name]); }
  const route = ctx.route;
  if (route && route.count > 0) {
    headers.set("x-switchyard-attempts", String(route.count));
    if (route.served) {
      headers.set("x-switchyard-provider", route.served.provider);
      headers.set("x-switchyard-model", route.served.model);
    }
    if (route.count > 1) ctx.log.attempts = route.count;
  }
}

/** Builds the request handler for the given services (and routing table, for tests). */
export function createHandler(
  services: Services,
  routes: readonly Route[] = defaultRoutes,
  fallbackLimiter: Limiter = new RateLimiter(),
): (req: Request, info?: Deno.ServeHandlerInfo) => Promise<Response> {
  const router = new Router(routes);
  const { store } = services;
  const limiter = limiterFor(store, fallbackLimiter);
  // Keys' last use, written about once a minute (the timer does not keep the process alive).
  const touching = setInterval(() => {
    lastUsed.flush(store).catch((error) =>
      log("warn", "recording keys' last use failed", { error: String(error) })
    );
  }, LAST_USED_FLUSH_MS);
  Deno.unrefTimer(touching);

  const handle = async (
    req: Request,
    info?: Deno.ServeHandlerInfo,
    socket?: SocketState,
  ): Promise<Response> => {
    const started = performance.now();
    // The config of this request (a reload replaces `services.config` for the next ones).
    const config = services.config;
    const url = new URL(req.url);
    redactServerSpan(url);
    const given = req.headers.get("x-request-id");
    const requestId = given && REQUEST_ID.test(given) ? given : `req_${crypto.randomUUID()}`;
    const match = router.match(req.method, url.pathname);
    const errors = match.route?.errors;
    const format: ErrorFormat = typeof errors === "function"
      ? errors(req)
      : errors ?? formatForPath(url.pathname);
    const ctx: RequestContext = {
      req,
      url,
      params: match.route ? match.params : {},
      requestId,
      principal: null,
      services,
      log: {},
      now: requestClock(req),
      socket,
      // The turns keep the address the upgrade came from (its own request is closed by then).
      serve: (turn, state) =>
        handle(turn, remote && { remoteAddr: remote, completed: Promise.resolve() }, state),
    };
    let remote: Deno.Addr | undefined;
    let extraHeaders: Record<string, string> = {};
    let response: Response;
    try {
      checkHeaderBytes(req.headers, config.maxHeaderBytes);
      if (given && given.length > MAX_REQUEST_ID) {
        throw new GatewayError(
          400,
          `The x-request-id header must be at most ${MAX_REQUEST_ID} characters.`,
          { param: "x-request-id" },
        );
      }
      if (!match.route) {
        if (match.allow.length) {
          throw new GatewayError(
            405,
            `Method ${req.method} is not allowed on ${url.pathname}; use ${
              match.allow.join(", ")
            }.`,
            { headers: { allow: match.allow.join(", ") } },
          );
        }
        throw new GatewayError(404, `Invalid URL (${req.method} ${url.pathname})`, {
          code: "unknown_url",
        });
      }
      const route = match.route;
      if (route.auth !== "none") {
        const key = presentedKey(req, url, route.auth);
        remote = info?.remoteAddr;
        const address = (remote as Deno.NetAddr | undefined)?.hostname;
        let principal = authenticate(store, key, config.defaultRpm, { address, now: ctx.now() });
        if (principal instanceof Promise) principal = await principal;
        ctx.principal = principal;
        lastUsed.note(principal.keyId, Date.now());
        let decision = route.perMinute === false
          ? UNLIMITED
          : limiter.check(principal.keyId, principal.rpm);
        if (decision instanceof Promise) decision = await decision;
        extraHeaders = rateLimitHeaders(decision);
        if (!decision.allowed) {
          metrics.add(RATE_LIMITED, [route.path]);
          throw new GatewayError(
            429,
            `Rate limit reached: ${decision.limit} requests per minute for this key. Retry after ${
              extraHeaders["retry-after"]
            }s.`,
          );
        }
      }
      response = await startCallSpan(route.path, (span) => {
        ctx.trace = span;
        return route.handle(ctx);
      });
    } catch (error) {
      // A budget that refused a call is looked at for alerts, off the request path.
      if (error instanceof LimitRefused && ctx.principal) {
        noteRefused(ctx.principal, error.refusal, ctx.now());
      }
      response = failure(error, format, requestId, match.route?.path ?? "");
    }
    try {
      faultPoint(req, "respond");
      // A WebSocket's handshake (101) is Deno's own, its headers immutable.
      if (response.status !== 101) {
        setServerHeaders(response, ctx, format, requestId, extraHeaders);
      }
    } catch (error) {
      // The answer cannot be sent as it is: the client is told the call failed instead (its holds
      // released first, so that cancelling the answer's stream charges nothing).
      await ctx.scope?.close(true);
      response.body?.cancel().catch(() => {});
      response = failure(error, format, requestId, match.route?.path ?? "");
      response.headers.set("x-request-id", requestId);
    }
    // Whatever way the request ended, nothing it opened stays open (see `pipeline/hold.ts`).
    if (ctx.scope) await ctx.scope.close(response.status >= 400);
    // The model only once it resolved to a provider: ids the catalog does not know are the
    // client's choice, and would make series of their own.
    const resolved = ctx.log.provider !== undefined;
    metrics.add(REQUESTS, [
      match.route?.path ?? "",
      format,
      resolved ? String(ctx.log.model ?? "") : "",
      resolved ? String(ctx.log.provider) : "",
      String(response.status),
    ]);
    if (ctx.trace) {
      ctx.trace.set({ "http.response.status_code": response.status });
      if (response.status >= 400) ctx.trace.set({ "error.type": String(response.status) });
      if (!ctx.trace.deferred || response.status >= 400) ctx.trace.end();
    }
    if (config.accessLog) {
      log("info", "request", {
        request_id: requestId,
        method: req.method,
        path: url.pathname,
        status: response.status,
        ms: Math.round((performance.now() - started) * 10) / 10,
        key_id: ctx.principal?.keyId,
        account: ctx.principal?.accountName,
        worker: services.worker,
        ...ctx.log,
      });
    }
    return response;
  };
  return (req, info) => handle(req, info);
}
