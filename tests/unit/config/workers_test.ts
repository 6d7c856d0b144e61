/**
 * `server.workers`: the flag wins over `SWITCHYARD_WORKERS`, which wins over the config file,
 * which wins over the default (the number of cores); bad values name the field and the rule.
 */
import assert from "node:assert/strict";
import { buildConfig, ConfigError } from "../../../src/config/load.ts";
import { MAX_WORKERS } from "../../../src/config/schema.ts";

const env = (vars: Record<string, string>) => (name: string) => vars[name];
const file = (workers?: unknown) => ({ server: workers === undefined ? {} : { workers } });

Deno.test("workers: flag > SWITCHYARD_WORKERS > server.workers > the number of cores", () => {
  const cores = Math.min(MAX_WORKERS, Math.max(1, navigator.hardwareConcurrency || 1));
  const byDefault = buildConfig(file(), env({}));
  assert.equal(byDefault.workers, cores);
  assert.equal(byDefault.workersSet, false);

  const fromFile = buildConfig(file(3), env({}));
  assert.deepEqual([fromFile.workers, fromFile.workersSet], [3, true]);

  const fromEnv = buildConfig(file(3), env({ SWITCHYARD_WORKERS: "5" }));
  assert.deepEqual([fromEnv.workers, fromEnv.workersSet], [5, true]);

  const fromFlag = buildConfig(file(3), env({ SWITCHYARD_WORKERS: "5" }), { workers: 1 });
  assert.deepEqual([fromFlag.workers, fromFlag.workersSet], [1, true]);

  // An empty variable is unset, as for the other SWITCHYARD_* numbers.
  assert.equal(buildConfig(file(4), env({ SWITCHYARD_WORKERS: "" })).workers, 4);
});

Deno.test("workers: bad values stop startup naming the field and the rule", () => {
  const cases: [unknown, RegExp][] = [
    [0, /^server\.workers: must be ≥ 1$/],
    [-2, /^server\.workers: must be ≥ 1$/],
    [1.5, /^server\.workers: must be an integer$/],
    ["2", /^server\.workers: must be an integer$/],
    [MAX_WORKERS + 1, new RegExp(`^server\\.workers: must be at most ${MAX_WORKERS}$`)],
  ];
  const refused = (build: () => unknown, message: RegExp) =>
    assert.throws(build, (error) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, message);
      return true;
    });
  for (const [workers, message] of cases) {
    refused(() => buildConfig(file(workers), env({})), message);
  }
  for (const value of ["0", "two", "1.5", String(MAX_WORKERS + 1)]) {
    refused(
      () => buildConfig(file(2), env({ SWITCHYARD_WORKERS: value })),
      new RegExp(`^SWITCHYARD_WORKERS: must be an integer between 1 and ${MAX_WORKERS}, got "`),
    );
  }
});
