/**
 * The V8 flags a gateway serves with are one set: the `compile` task bakes them into the binary (the
 * tests' gateways read them from there), the `start` task runs with the same, and the operations
 * guide shows them as they are — its `DENO_V8_FLAGS` line included.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const config = JSON.parse(Deno.readTextFileSync(new URL("deno.json", ROOT)));
const operations = Deno.readTextFileSync(new URL("docs/operations.md", ROOT));

/** The `--v8-flags=` value of a task's command line. */
function v8Flags(task: string): string {
  const flags = (config.tasks[task] as string).match(/--v8-flags=(\S+)/);
  assert.ok(flags, `the ${task} task has --v8-flags`);
  return flags[1];
}

Deno.test("the start task, the compile task and the operations guide name the same V8 flags", () => {
  const compiled = v8Flags("compile");
  assert.equal(v8Flags("start"), compiled);
  assert.ok(operations.includes(`--v8-flags=${compiled} `), "the binary's flags in operations.md");
  assert.ok(operations.includes(`DENO_V8_FLAGS=${compiled}\``), "DENO_V8_FLAGS in operations.md");
  // What the guide explains each flag for (see its section on building a binary).
  for (const flag of compiled.split(",")) {
    assert.ok(operations.includes(flag.split("=")[0]), `${flag} explained in operations.md`);
  }
});
