/**
 * What a serving gateway loads at start, read from Deno's own module graph (`deno info --json`):
 * the static imports of main.ts, of the commands it loads (`src/cli/main.ts`) and of the modules a
 * serving thread starts from. No `node:`
 * module but `node:sqlite` (the store) and `node:timers` (the store's group commit): importing
 * any other — `node:crypto`, `node:process`, `node:util`, `node:path` — makes Deno load its Node
 * compatibility layer, about 35 ms of every thread's start (docs/benchmark.md). Nor the
 * dashboard's page, which its first view loads.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const ENTRIES = ["main.ts", "src/cli/main.ts", "src/serve/one_thread.ts", "src/serve/worker.ts"];

interface Info {
  modules: {
    specifier: string;
    dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[];
  }[];
}

/** The modules reached from `entries` by static imports only. */
async function loadedAtStart(): Promise<Set<string>> {
  const infos = await Promise.all(ENTRIES.map(async (entry) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", "--lock=tests/deno.lock", entry],
      cwd: ROOT,
      stderr: "inherit",
    }).output();
    assert.ok(out.success, `deno info ${entry}`);
    return JSON.parse(new TextDecoder().decode(out.stdout)) as Info;
  }));
  const imports = new Map<string, string[]>();
  for (const info of infos) {
    for (const m of info.modules) {
      imports.set(
        m.specifier,
        (m.dependencies ?? []).filter((d) => !d.isDynamic && d.code).map((d) => d.code!.specifier),
      );
    }
  }
  const reached = new Set<string>();
  const visit = (specifier: string) => {
    if (reached.has(specifier)) return;
    reached.add(specifier);
    for (const next of imports.get(specifier) ?? []) visit(next);
  };
  for (const entry of ENTRIES) visit(new URL(entry, ROOT).href);
  return reached;
}

Deno.test("a serving gateway loads no node: module at start but node:sqlite and node:timers, nor the dashboard", async () => {
  const reached = await loadedAtStart();
  assert.ok(reached.size > 100, `reached ${reached.size} modules`);
  const node = [...reached].filter((s) => s.startsWith("node:")).sort();
  assert.deepEqual(node, ["node:sqlite", "node:timers"]);
  const dashboard = [...reached].filter((s) => s.includes("/src/dashboard/"));
  assert.deepEqual(dashboard, []);
});
