/**
 * The import graph of `src/` stays one-way: no file imports itself through others (no cycle), and
 * every import goes to a module of the same level or a lower one (`LEVELS`: the entry points on
 * top, the request handler, the pipeline and the endpoints, the protocols and providers, the
 * money, auth, translation and metrics, the store, config and catalog, and the HTTP and logging
 * leaves at the bottom). Besides the levels, a few parts never import some of their own level or
 * above (`NEVER`). Read from the files' own import statements.
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

/**
 * Parts of `src/` and what each must never import (a prefix of the imported path), beyond what
 * their level forbids (`LEVELS`): parts of their own level or below they stay apart from — the
 * catalog is data the store never needs, routing decides among deployments and keys without the
 * pipeline, the request context, the endpoints or the protocols, a provider is reached without
 * its protocol's codec, and the pipeline runs beneath the endpoints.
 */
const NEVER: [string, string[]][] = [
  ["src/catalog/", ["src/store/"]],
  ["src/routing/", ["src/pipeline/", "src/context.ts", "src/protocols/", "src/endpoints/"]],
  ["src/providers/", ["src/protocols/"]],
  ["src/pipeline/", ["src/endpoints/"]],
];

Deno.test("parts of src/ never import what they stay apart from", () => {
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

/**
 * The levels of `src/` (and main.ts), top (1) to bottom (7): a module imports only from its own
 * level or below. A folder is named with its slash, a file alone by its name; a file of `src/`
 * that no entry names fails the test below, so that a new folder is given its place.
 */
const LEVELS: Record<string, number> = {
  "main.ts": 1,
  "src/serve/": 1,
  "src/cli/": 1,
  "src/emulator/": 1,
  "src/server.ts": 2,
  "src/routes.ts": 2,
  "src/router.ts": 2,
  "src/pipeline/": 3,
  "src/endpoints/": 3,
  "src/routing/": 3,
  "src/alerts/": 3,
  "src/context.ts": 3,
  "src/dashboard/": 3,
  "src/protocols/": 4,
  "src/providers/": 4,
  "src/translate/": 5,
  "src/billing/": 5,
  "src/auth/": 5,
  "src/metrics/": 5,
  "src/store/": 6,
  "src/config/": 6,
  "src/catalog/": 6,
  "src/http/": 7,
  "src/log.ts": 7,
  "src/field_path.ts": 7,
  "src/money.ts": 7,
  "src/name_hash.ts": 7,
  "src/sha256.ts": 7,
  "src/test_hooks.ts": 7,
};

/** The level of a file (see `LEVELS`), or undefined when it has none. */
function levelOf(file: string): number | undefined {
  if (file in LEVELS) return LEVELS[file];
  const parts = file.split("/");
  return parts.length > 2 ? LEVELS[`${parts[0]}/${parts[1]}/`] : undefined;
}

Deno.test("every file of src/ has a level", () => {
  const unplaced = [...graph().keys()].filter((file) => levelOf(file) === undefined);
  assert.deepEqual(unplaced, [], "give these a place in LEVELS");
});

Deno.test("imports go to the same level or a lower one, never up", () => {
  const up: string[] = [];
  for (const [file, targets] of graph()) {
    const level = levelOf(file);
    if (level === undefined) continue;
    for (const target of targets) {
      const below = levelOf(target);
      if (below === undefined || below < level) {
        up.push(`${file} (${level}) -> ${target} (${below})`);
      }
    }
  }
  assert.deepEqual(up, []);
});

Deno.test("levelOf places a file by its name or its folder, and no other", () => {
  assert.equal(levelOf("main.ts"), 1);
  assert.equal(levelOf("src/store/postgres.ts"), 6);
  assert.equal(levelOf("src/protocols/chat/codec.ts"), 4);
  assert.equal(levelOf("src/money.ts"), 7);
  assert.equal(levelOf("src/nowhere.ts"), undefined);
  assert.equal(levelOf("src/nowhere/file.ts"), undefined);
});

Deno.test("ARCHITECTURE.md states the same levels as this test", () => {
  const text = Deno.readTextFileSync(new URL("ARCHITECTURE.md", ROOT));
  const rule = text.slice(text.indexOf("## The one-way import rule"));
  const stated: Record<string, number> = {};
  // A level's line, and the lines that continue it (indented under it).
  for (const [, level, parts] of rule.matchAll(/^(\d)\. (.+(?:\n {3}.+)*)$/gm)) {
    for (const [, part] of parts.matchAll(/`([^`]+)`/g)) {
      stated[part === "main.ts" ? part : `src/${part}`] = Number(level);
    }
  }
  assert.deepEqual(stated, LEVELS);
});

Deno.test("a serving gateway does not load the emulator: main.ts's static imports reach no module of src/emulator/", () => {
  // The emulator is imported dynamically, for `emulate` and `serve --emulate` only.
  const edges = graph();
  const reached = new Set<string>();
  const visit = (file: string) => {
    if (reached.has(file)) return;
    reached.add(file);
    for (const next of edges.get(file) ?? []) visit(next);
  };
  // main.ts imports the commands dynamically (after starting a serving thread early).
  visit("main.ts");
  visit("src/cli/main.ts");
  assert.deepEqual([...reached].filter((file) => file.startsWith("src/emulator/")), []);
});
