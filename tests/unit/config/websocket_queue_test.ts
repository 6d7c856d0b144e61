/**
 * `server.webSocketQueueBytes`: 64 MiB unless set; a bad value stops startup naming the field and
 * the rule.
 */
import assert from "node:assert/strict";
import { buildConfig, ConfigError } from "../../../src/config/load.ts";

const env = () => undefined;
const file = (webSocketQueueBytes?: unknown) => ({
  server: webSocketQueueBytes === undefined ? {} : { webSocketQueueBytes },
});

Deno.test("webSocketQueueBytes: 64 MiB by default, else the file's", () => {
  assert.equal(buildConfig(file(), env).webSocketQueueBytes, 64 * 1024 * 1024);
  assert.equal(buildConfig(file(65536), env).webSocketQueueBytes, 65536);
});

Deno.test("webSocketQueueBytes: bad values stop startup naming the field and the rule", () => {
  const cases: [unknown, RegExp][] = [
    [65535, /^server\.webSocketQueueBytes: must be ≥ 65536$/],
    [0, /^server\.webSocketQueueBytes: must be ≥ 65536$/],
    [1e6 + 0.5, /^server\.webSocketQueueBytes: must be an integer$/],
    ["1048576", /^server\.webSocketQueueBytes: must be an integer$/],
  ];
  for (const [value, message] of cases) {
    assert.throws(() => buildConfig(file(value), env), (error) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, message);
      return true;
    });
  }
});
