/**
 * Matching a request against the routing table: static paths through a map, the rest through
 * `URLPattern`. Distinguishes "no such path" (404) from "path exists, wrong method" (405).
 */
import type { Route } from "./routes.ts";

export type Match =
  | { route: Route; params: Record<string, string> }
  | { route: undefined; allow: string[] };

/** A compiled routing table. */
export class Router {
  readonly #static = new Map<string, Route[]>();
  readonly #patterns: { pattern: URLPattern; routes: Route[] }[] = [];

  constructor(routes: readonly Route[]) {
    const byPath = new Map<string, Route[]>();
    for (const route of routes) {
      byPath.set(route.path, [...(byPath.get(route.path) ?? []), route]);
    }
    for (const [path, group] of byPath) {
      if (/[:*(]/.test(path.replaceAll("\\:", ""))) {
        this.#patterns.push({ pattern: new URLPattern({ pathname: path }), routes: group });
      } else {
        this.#static.set(path.replaceAll("\\:", ":"), group);
      }
    }
  }

  match(method: string, pathname: string): Match {
    let group = this.#static.get(pathname);
    let params: Record<string, string> = {};
    if (!group) {
      for (const { pattern, routes } of this.#patterns) {
        const result = pattern.exec({ pathname });
        if (result) {
          group = routes;
          params = result.pathname.groups as Record<string, string>;
          break;
        }
      }
    }
    if (!group) return { route: undefined, allow: [] };
    const route = group.find((r) => r.method === method) ??
      (method === "HEAD" ? group.find((r) => r.method === "GET") : undefined);
    return route ? { route, params } : { route: undefined, allow: group.map((r) => r.method) };
  }
}
