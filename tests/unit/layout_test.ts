/**
 * Unit tests mirror `src/`: a test in a folder of `tests/unit/` tests modules of the same folder of
 * `src/` (it imports at least one), so a reader finds a module's tests where the module is. At the
 * top of `tests/unit/` only the tests of top-level modules (`src/log.ts`, `src/router.ts`…), of
 * the project itself and of the money path across modules. No module of `src/` is over 600 lines.
 */
import assert from "node:assert/strict";

const UNIT = new URL("./", import.meta.url);
const SRC = new URL("../../src/", import.meta.url);

/** Tests at the top of `tests/unit/`, each with what it covers. */
const TOP = new Set([
  "import_graph_test.ts", // the import graph of src/
  "layout_test.ts", // this layout
  "lockfiles_test.ts", // deno.lock and tests/deno.lock
  "stands_alone_test.ts", // no file refers outside the repository
  "log_test.ts", // src/log.ts
  "money_test.ts", // src/money.ts and the store's amounts
  "money_path_test.ts", // the money path across billing, pipeline and store
  "router_test.ts", // src/router.ts and src/routes.ts
  "server_errors_test.ts", // src/server.ts
  "sha256_test.ts", // src/sha256.ts
  "start_imports_test.ts", // the modules a serving gateway loads at start
  "v8_flags_test.ts", // the V8 flags of the start and compile tasks and the operations guide
]);

function testsUnder(dir: URL, at = ""): string[] {
  const found: string[] = [];
  for (const entry of Deno.readDirSync(dir)) {
    if (entry.isDirectory) {
      found.push(...testsUnder(new URL(`${entry.name}/`, dir), `${at}${entry.name}/`));
    } else if (entry.name.endsWith("_test.ts")) found.push(`${at}${entry.name}`);
  }
  return found.sort();
}

Deno.test("a unit test sits in the folder of the src/ modules it tests", () => {
  const misplaced: string[] = [];
  for (const test of testsUnder(UNIT)) {
    const folder = test.includes("/") ? test.slice(0, test.lastIndexOf("/") + 1) : "";
    if (folder === "") {
      if (!TOP.has(test)) misplaced.push(`${test}: at the top, but not one of the listed few`);
      continue;
    }
    let isFolder = false;
    try {
      isFolder = Deno.statSync(new URL(folder, SRC)).isDirectory;
    } catch { /* no such folder */ }
    if (!isFolder) {
      misplaced.push(`${test}: src/${folder} does not exist`);
      continue;
    }
    const text = Deno.readTextFileSync(new URL(test, UNIT));
    const depth = test.split("/").length + 1; // tests/unit/<folder…>/file → the repository root
    const prefix = `${"../".repeat(depth)}src/${folder}`;
    if (!text.includes(`"${prefix}`)) {
      misplaced.push(`${test}: imports nothing from src/${folder}`);
    }
  }
  assert.deepEqual(misplaced, []);
});

Deno.test("every listed top-level test exists", () => {
  const top = new Set(testsUnder(UNIT).filter((t) => !t.includes("/")));
  assert.deepEqual([...TOP].filter((t) => !top.has(t)), []);
});

/** The most lines one module of `src/` may have: past it, a module does more than one job. */
const MAX_LINES = 600;

Deno.test(`no module of src/ is over ${MAX_LINES} lines`, () => {
  const sources = (dir: URL, at = ""): [string, string][] =>
    [...Deno.readDirSync(dir)].flatMap((entry): [string, string][] => {
      if (entry.isDirectory) {
        return sources(new URL(`${entry.name}/`, dir), `${at}${entry.name}/`);
      }
      if (!entry.name.endsWith(".ts")) return [];
      return [[`${at}${entry.name}`, Deno.readTextFileSync(new URL(entry.name, dir))]];
    });
  const files = sources(SRC);
  assert.ok(files.length > 100, "src/ was read");
  const long = files
    .map(([path, text]) => [path, text.split("\n").length - (text.endsWith("\n") ? 1 : 0)] as const)
    .filter(([, lines]) => lines > MAX_LINES)
    .map(([path, lines]) => `src/${path}: ${lines} lines`);
  assert.deepEqual(long, [], "split these by job");
});
