/**
 * The runtime resolves only what it runs: `deno.lock` (frozen, used by `deno run main.ts`, the start
 * and compile tasks) names just the packages of deno.json's imports, so a fresh clone's
 * `deno task start` downloads no test-only client; `tests/deno.lock` (the test and check tasks
 * pass `--lock=tests/deno.lock`) holds those same packages at the same versions, plus the SDKs the
 * tests drive.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const read = (path: string) => JSON.parse(Deno.readTextFileSync(new URL(path, ROOT)));

const config = read("deno.json");
const runtime = read("deno.lock");
const tests = read("tests/deno.lock");

/** A package's name from a lock entry key (`@scope/name@1.2.3` → `@scope/name`). */
const nameOf = (entry: string) => entry.slice(0, entry.lastIndexOf("@"));

Deno.test("deno.lock names only the runtime's imports, and is frozen", () => {
  const imports = Object.values(config.imports as Record<string, string>).sort();
  assert.deepEqual(Object.keys(runtime.specifiers).sort(), imports);
  const allowed = new Set(imports.map((s) => nameOf(s.slice("npm:".length))));
  for (const entry of Object.keys(runtime.npm ?? {})) {
    assert.ok(allowed.has(nameOf(entry)), `${entry} is not a runtime import (nor a dependency)`);
  }
  assert.equal(config.lock?.frozen, true);
  assert.equal(config.lock?.path, "./deno.lock");
});

Deno.test("tests/deno.lock has the runtime's packages at the same versions, and the tasks use it", () => {
  for (const [specifier, version] of Object.entries(runtime.specifiers)) {
    assert.equal(tests.specifiers[specifier], version, specifier);
  }
  for (const [entry, meta] of Object.entries(runtime.npm ?? {})) {
    assert.deepEqual(tests.npm[entry], meta, entry);
  }
  for (const task of ["test", "check", "test:agents"]) {
    assert.match(config.tasks[task], /--lock=tests\/deno\.lock/, task);
  }
  for (const task of ["start", "compile", "emulate"]) {
    assert.doesNotMatch(config.tasks[task], /--lock/, task);
  }
});
