/** The first-key hint names the program as it runs and the server's own config file. */
import assert from "node:assert/strict";
import { firstKeyCommand } from "../../../src/cli/first_key.ts";

Deno.test("from source: deno run main.ts; the demo's account ready to paste", () => {
  assert.equal(
    firstKeyCommand({ execPath: "/home/me/.deno/bin/deno", demo: true }),
    "deno run -A main.ts keys create --account demo --credit 10",
  );
});

Deno.test("the compiled binary by its path, with the server's --config", () => {
  assert.equal(
    firstKeyCommand({
      execPath: "/usr/local/bin/switchyard",
      configFile: "/etc/switchyard/switchyard.json",
      demo: false,
    }),
    "/usr/local/bin/switchyard keys create --account NAME --credit USD " +
      "--config /etc/switchyard/switchyard.json",
  );
});

Deno.test("paths that are not one shell word are quoted", () => {
  assert.equal(
    firstKeyCommand({
      execPath: "/opt/my gateway/switchyard",
      configFile: "it's.json",
      demo: true,
    }),
    `'/opt/my gateway/switchyard' keys create --account demo --credit 10 --config 'it'\\''s.json'`,
  );
});
