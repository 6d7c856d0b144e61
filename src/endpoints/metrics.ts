/**
 * `GET /metrics`: the Prometheus text exposition of every serving thread's metrics (see
 * `metrics/gateway.ts`), for the admin token — or without one on `server.metricsPort` (loopback).
 */
import { boardOf, type Handler, type Services } from "../context.ts";
import { deploymentStates } from "../routing/status.ts";
import { requireAdmin } from "../auth/admin.ts";
import { everyThread, exposition } from "../metrics/gateway.ts";

/** The exposition format's media type. */
const TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8";

/** The metrics of the whole process (every thread's), as exposition text. */
export async function metricsText(services: Services): Promise<string> {
  const states = deploymentStates(boardOf(services), services.config.catalog);
  const circuits = Object.fromEntries(
    Object.entries(states).map(([name, state]) => [name, state.circuit === "closed" ? 0 : 1]),
  );
  const held = await services.store.holdsOutstanding();
  return exposition(await everyThread(services), held, circuits);
}

/** The admin-token route. */
export const getMetrics: Handler = async (ctx) => {
  requireAdmin(ctx.req, ctx.services.config);
  return new Response(await metricsText(ctx.services), {
    headers: { "content-type": TEXT_FORMAT, "cache-control": "no-store" },
  });
};

/** The handler of the loopback metrics port: `/metrics` only, no token. */
export async function metricsPortHandler(req: Request, services: Services): Promise<Response> {
  const path = new URL(req.url).pathname;
  if (req.method !== "GET" || path !== "/metrics") {
    return new Response("Not found: this port serves GET /metrics only.\n", { status: 404 });
  }
  return new Response(await metricsText(services), {
    headers: { "content-type": TEXT_FORMAT, "cache-control": "no-store" },
  });
}
