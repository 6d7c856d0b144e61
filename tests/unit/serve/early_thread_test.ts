/**
 * Which command lines start the first serving thread before the config is read
 * (`src/serve/early_thread.ts`): `serve` on several cores, unless one thread is asked for.
 */
import assert from "node:assert/strict";
import { mayServeOnThreads } from "../../../src/serve/early_thread.ts";

Deno.test("mayServeOnThreads: serve on several cores, unless --workers 1 or SWITCHYARD_WORKERS=1", () => {
  const cases: [string[], number, string | undefined, boolean][] = [
    [["serve"], 2, undefined, true],
    [["serve", "--port", "8080"], 8, undefined, true],
    [["serve", "--workers", "4"], 8, undefined, true],
    [["serve", "--workers=2"], 2, "1", true], // the flag before the environment
    [["serve", "--workers", "1"], 2, "2", false],
    [["serve"], 1, undefined, false], // one core: one thread by default
    [["serve", "--workers", "1"], 8, undefined, false],
    [["serve", "--workers=1"], 8, undefined, false],
    [["serve", "--", "--workers", "1"], 8, undefined, false],
    [["serve"], 8, "1", false],
    [["serve"], 8, "3", true],
    [["keys", "list"], 8, undefined, false],
    [["emulate"], 8, undefined, false],
    [[], 8, undefined, false],
  ];
  for (const [args, cores, env, want] of cases) {
    assert.equal(mayServeOnThreads(args, cores, env), want, JSON.stringify([args, cores, env]));
  }
});
