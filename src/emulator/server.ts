/**
 * The provider emulator: an offline stand-in for the upstream families on one port. Each family
 * lives under its own path prefix so one emulator can be every provider of a config:
 *   /openai/v1/…  /xai/v1/…  (Responses)
 * Requests must carry some upstream key (as the real services require); with `requiredKey` set,
 * only that key is accepted. Recent requests are listed at `GET /_emulator/requests`.
 */
import { openaiError, responses } from "./openai.ts";
import { stats } from "./text.ts";

export interface EmulatorOptions {
  hostname?: string;
  port?: number;
  /** Accept only this upstream key. */
  requiredKey?: string;
  /** Keep the last 200 requests for `GET /_emulator/requests` (tests; costs a body copy). */
  record?: boolean;
}

interface Seen {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

type Family = "openai";

const ROUTES: {
  family: Family;
  method: string;
  pattern: URLPattern;
  handle: (r: Request) => Promise<Response>;
}[] = [
  {
    family: "openai",
    method: "POST",
    pattern: new URLPattern({ pathname: "/:vendor(openai|xai)/v1/responses" }),
    handle: responses,
  },
];

/** Starts the emulator; resolves once it listens. */
export function startEmulator(options: EmulatorOptions = {}): Deno.HttpServer<Deno.NetAddr> {
  const seen: Seen[] = [];
  return Deno.serve({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port ?? 0,
    onListen: () => {},
  }, async (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/_emulator/requests") return Response.json(seen);
    if (url.pathname === "/_emulator/stats") return Response.json(stats);
    const route = ROUTES.find((r) =>
      r.method === req.method && r.pattern.test({ pathname: url.pathname })
    );
    if (!route) return openaiError(404, `Invalid URL (${req.method} ${url.pathname})`);
    const key = (req.headers.get("authorization") ?? "").replace(/^Bearer\s+/i, "");
    if (!key || (options.requiredKey && key !== options.requiredKey)) {
      return openaiError(401, "Incorrect API key provided.");
    }
    if (options.record) {
      seen.push({
        method: req.method,
        path: url.pathname + url.search,
        headers: Object.fromEntries(req.headers),
        body: await req.clone().json().catch(() => null),
      });
      if (seen.length > 200) seen.shift();
    }
    return route.handle(req);
  });
}
