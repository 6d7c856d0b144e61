/**
 * The import graph of `src/` stays one-way: no file imports itself through others (no cycle), and
 * the lower parts never import the upper ones — the protocol contract and the protocols know
 * nothing of the pipeline or the request context, the HTTP and translation layers nothing of
 * either, the store nothing of the money, auth or request layers above it. Read from the files'
 * own import statements.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);

/** Every `.ts` file under `src/` (and main.ts), as paths from the repository's root. */
function sources(): string[] {
  const out = ["main.ts"];
  const walk = (dir: string) => {
    for (const entry of Deno.readDirSync(new URL(dir, ROOT))) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) walk(path);
      else if (entry.name.endsWith(".ts")) out.push(path);
    }
  };
  walk("src");
  return out.sort();
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^;"']*?from\s*["'](\.{1,2}\/[^"']+)["']/g;

/** The files each file imports (relative imports only; type-only imports count too). */
function graph(): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const file of sources()) {
    const text = Deno.readTextFileSync(new URL(file, ROOT));
    const targets: string[] = [];
    for (const match of text.matchAll(IMPORT)) {
      const url = new URL(match[1], new URL(file, ROOT));
      targets.push(url.pathname.slice(ROOT.pathname.length));
    }
    edges.set(file, targets);
  }
  return edges;
}

/** The strongly connected groups of more than one file (Tarjan). */
function cycles(edges: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!edges.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      for (let w = stack.pop()!;; w = stack.pop()!) {
        on.delete(w);
        group.push(w);
        if (w === v) break;
      }
      if (group.length > 1) found.push(group.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return found;
}

Deno.test("no import cycle among the files of src/", () => {
  const edges = graph();
  assert.ok(edges.size > 100, `read ${edges.size} files`);
  assert.deepEqual(cycles(edges), []);
});

/** Parts of `src/` and what each must never import (a prefix of the imported path). */
const NEVER: [string, string[]][] = [
  ["src/protocols/", ["src/pipeline/", "src/context.ts", "src/endpoints/", "src/server.ts"]],
  ["src/translate/", ["src/pipeline/", "src/context.ts", "src/protocols/", "src/endpoints/"]],
  ["src/http/", [
    "src/pipeline/",
    "src/context.ts",
    "src/protocols/",
    "src/endpoints/",
    "src/store/",
  ]],
  ["src/catalog/", ["src/pipeline/", "src/context.ts", "src/billing/", "src/store/"]],
  ["src/billing/", ["src/pipeline/", "src/context.ts", "src/protocols/", "src/endpoints/"]],
  ["src/store/", ["src/pipeline/", "src/context.ts", "src/billing/", "src/protocols/"]],
  ["src/routing/", ["src/pipeline/", "src/context.ts", "src/protocols/", "src/endpoints/"]],
  ["src/providers/", ["src/pipeline/", "src/context.ts", "src/protocols/", "src/endpoints/"]],
  ["src/pipeline/", ["src/endpoints/", "src/server.ts", "src/routes.ts"]],
];

Deno.test("lower parts of src/ never import the upper ones", () => {
  const wrong: string[] = [];
  for (const [file, targets] of graph()) {
    const rule = NEVER.find(([part]) => file.startsWith(part));
    if (!rule) continue;
    for (const target of targets) {
      if (rule[1].some((upper) => target.startsWith(upper))) wrong.push(`${file} -> ${target}`);
    }
  }
  assert.deepEqual(wrong, []);
});
