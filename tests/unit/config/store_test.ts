/**
 * `store.url`: the file's value, `env:NAME`, or `SWITCHYARD_DB_URL` (which wins) select the
 * PostgreSQL store; a value that is not a URL the driver can parse stops startup without echoing
 * it (it may hold a password).
 */
import assert from "node:assert/strict";
import { buildConfig, ConfigError } from "../../../src/config/load.ts";

const env = (vars: Record<string, string>) => (name: string) => vars[name];
const URL_A = "postgres://gw:s3cret@db:5432/a";

Deno.test("store.url: from the file, from env:NAME, from SWITCHYARD_DB_URL; none is SQLite", () => {
  assert.equal(buildConfig({}, env({})).dbUrl, null);
  assert.equal(buildConfig({ store: { url: URL_A } }, env({})).dbUrl, URL_A);
  assert.equal(
    buildConfig({ store: { url: "env:PG" } }, env({ PG: "postgresql://db/b" })).dbUrl,
    "postgresql://db/b",
  );
  assert.equal(
    buildConfig({ store: { url: URL_A } }, env({ SWITCHYARD_DB_URL: "postgres://db/c" })).dbUrl,
    "postgres://db/c",
  );
  assert.equal(buildConfig({ store: { url: URL_A, poolSize: 5 } }, env({})).dbPoolSize, 5);
  assert.equal(buildConfig({}, env({})).dbPoolSize, 2);
});

Deno.test("store.url: a bad value stops startup, naming the field and never the password", () => {
  const bad = [
    { store: { url: "mysql://gw:s3cret@db/a" } },
    // An unencoded "/" in the password: not a URL the driver can parse.
    { store: { url: "postgres://gw:s3c/ret@db:5432/a" } },
  ];
  for (const file of bad) {
    assert.throws(() => buildConfig(file, env({})), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /store\.url/);
      assert.ok(!error.message.includes("s3c"), error.message);
      return true;
    });
  }
  assert.throws(
    () => buildConfig({}, env({ SWITCHYARD_DB_URL: "postgres://gw:s3c/ret@db/a" })),
    (error: unknown) => error instanceof ConfigError && !error.message.includes("s3c"),
  );
  assert.throws(
    () => buildConfig({ store: { url: "env:NOPE" } }, env({})),
    /store\.url: the environment variable NOPE is not set/,
  );
  assert.throws(() => buildConfig({ store: { poolSize: 0 } }, env({})), /store\.poolSize/);
});
