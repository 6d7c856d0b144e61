/** Serving on this one thread (`--workers 1`, or when serving threads cannot run). */
import type { Services } from "../context.ts";
import { prepareStore, startBackground } from "./background.ts";
import { type RunningServer, startHttp } from "./http.ts";

/** The HTTP server and the background work in this one thread (`--workers 1`). */
export function startServer(services: Services): RunningServer {
  prepareStore(services, false);
  const http = startHttp(services);
  const background = startBackground(services);
  return {
    ...http,
    shutdown: () => {
      background.stop();
      return http.shutdown();
    },
  };
}
