/**
 * Matching a request against the routing table: static paths through a map, the rest through
 * patterns compiled once to regular expressions. Distinguishes "no such path" (404) from "path
 * exists, wrong method" (405).
 *
 * A path is literal text with `:name` segments (one or more characters other than `/`, as in
 * `URLPattern`); a literal colon is written `\\:`. Nothing else of the `URLPattern` syntax is
 * accepted: `URLPattern.exec` cost a few microseconds per pattern tried, on every request to a
 * Gemini path.
 */
import type { Route } from "./routes.ts";

export type Match =
  | { route: Route; params: Record<string, string> }
  | { route: undefined; allow: string[] };

const PARAM = /:([A-Za-z_][A-Za-z0-9_]*)/y;

/**
 * The regular expression of a route path (see the module doc); throws on any other pattern syntax.
 * `null` for a path without parameters (matched as a string).
 */
export function compilePath(path: string): RegExp | null {
  let source = "";
  let params = false;
  for (let i = 0; i < path.length;) {
    const char = path[i];
    if (char === "\\" && path[i + 1] === ":") {
      source += ":";
      i += 2;
      continue;
    }
    if (char === ":") {
      PARAM.lastIndex = i;
      const name = PARAM.exec(path)?.[1];
      if (!name) throw new Error(`route path ${path}: a ':' that is not a parameter name`);
      source += `(?<${name}>[^/]+?)`;
      params = true;
      i += name.length + 1;
      continue;
    }
    if ("*()?+{}[]|^$\\".includes(char)) {
      throw new Error(`route path ${path}: '${char}' is not supported`);
    }
    source += char === "." ? "\\." : char;
    i++;
  }
  return params ? new RegExp(`^${source}$`) : null;
}

/** A compiled routing table. */
export class Router {
  readonly #static = new Map<string, Route[]>();
  readonly #patterns: { pattern: RegExp; routes: Route[] }[] = [];

  constructor(routes: readonly Route[]) {
    const byPath = new Map<string, Route[]>();
    for (const route of routes) {
      byPath.set(route.path, [...(byPath.get(route.path) ?? []), route]);
    }
    for (const [path, group] of byPath) {
      const pattern = compilePath(path);
      if (pattern) this.#patterns.push({ pattern, routes: group });
      else this.#static.set(path.replaceAll("\\:", ":"), group);
    }
  }

  match(method: string, pathname: string): Match {
    let group = this.#static.get(pathname);
    let params: Record<string, string> = {};
    if (!group) {
      for (const { pattern, routes } of this.#patterns) {
        const result = pattern.exec(pathname);
        if (result) {
          group = routes;
          params = { ...result.groups };
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
