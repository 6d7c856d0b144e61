/**
 * `GET /healthz` (liveness) and `GET /readyz` (readiness), without authentication. Readiness reads
 * the store and reports each enabled provider's upstream calls and failures of the last minutes,
 * every serving thread's added up, its keys in use and refused, and each deployment's circuit
 * and calls in flight; it names providers and counts only (no URL, key or error text).
 */
import { StoreUnavailable } from "../store/store.ts";
import { boardOf, type Handler, type Services } from "../context.ts";
import { deploymentStates } from "../routing/status.ts";
import { refusedKeys } from "../routing/keys.ts";
import type { ProviderEntry } from "../catalog/catalog.ts";
import { jsonResponse } from "../http/json.ts";
import { log } from "../log.ts";
import { everyThread } from "../metrics/gateway.ts";
import { recentOutcomes, WINDOW_MINUTES } from "../metrics/recent.ts";

/** `GET /healthz`: the process answers. */
export const getHealth: Handler = () => jsonResponse({ status: "ok" });

/** One provider's line in `/readyz`. */
export interface ProviderHealth {
  calls: number;
  errors: number;
  /** `errors / calls`, to four decimals; null without a call in the window. */
  error_rate: number | null;
  /** Its upstream keys, and how many of them the upstream refused (out until a reload). */
  keys?: number;
  refused?: number;
}

/** Whether a cheap read through the store succeeds (the count of held calls: one index lookup). */
async function storeAnswers(services: Services): Promise<boolean> {
  try {
    await services.store.holdsOutstanding();
    return true;
  } catch (error) {
    // A store that cannot be reached has said so in the log already.
    if (!(error instanceof StoreUnavailable)) {
      log("error", "readiness: the store did not answer", { error: String(error) });
    }
    return false;
  }
}

/** The enabled providers that serve a model of the catalog (any deployment of it), by name. */
function enabledProviders(services: Services): ProviderEntry[] {
  const { catalog } = services.config;
  const names = new Set(
    catalog.entries().flatMap((entry) => entry.deployments.map((d) => d.provider)),
  );
  return [...names].sort().map((name) => catalog.provider(name)!).filter((p) => p.enabled);
}

/**
 * `GET /readyz`: 200 when the store answers, else 503; with each enabled provider's calls, failures
 * (see `isProviderFailure`) and error rate over the window.
 */
export const getReady: Handler = async (ctx) => {
  const { services } = ctx;
  const store = await storeAnswers(services);
  const outcomes = recentOutcomes(await everyThread(services));
  const board = boardOf(services);
  const providers: Record<string, ProviderHealth> = {};
  for (const provider of enabledProviders(services)) {
    const { calls, errors } = outcomes.get(provider.name) ?? { calls: 0, errors: 0 };
    providers[provider.name] = {
      calls,
      errors,
      error_rate: calls ? Math.round((errors / calls) * 10_000) / 10_000 : null,
      // A provider without a key (a local server) has none to count.
      ...(provider.keys.length
        ? { keys: provider.keys.length, refused: refusedKeys(board, provider) }
        : {}),
    };
  }
  return jsonResponse(
    {
      status: store ? "ready" : "unavailable",
      store: store ? "ok" : "error",
      ...(store
        ? {}
        : { store_error: services.store.unreachable?.() ?? "the store did not answer" }),
      window_seconds: WINDOW_MINUTES * 60,
      providers,
      deployments: deploymentStates(board, services.config.catalog),
    },
    store ? 200 : 503,
    { "cache-control": "no-store" },
  );
};
