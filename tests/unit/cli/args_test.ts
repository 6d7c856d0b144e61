/**
 * `parseCommandLine` reads a command line as `node:util`'s strict `parseArgs` does (which the CLI
 * used before): the same values and positionals, or the same error message, for each line here.
 */
import assert from "node:assert/strict";
import { parseArgs } from "node:util";
import { parseCommandLine, UsageError } from "../../../src/cli/args.ts";

const OPTIONS = {
  config: { type: "string", short: "c" },
  port: { type: "string" },
  json: { type: "boolean" },
  budget: { type: "string", multiple: true },
  "deny-models": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

const LINES = [
  [],
  ["serve"],
  ["serve", "--port", "8080", "--config", "a.json"],
  ["serve", "--port=8080", "--json"],
  ["keys", "create", "--budget", "5/day", "--budget=20/month", "--json"],
  ["keys", "update", "key_1", "--deny-models", "gpt-*,claude-*"],
  ["--port", "1", "--port", "2", "serve"],
  ["-h"],
  ["serve", "--help"],
  ["accounts", "credit", "team", "--", "-5"],
  ["serve", "--", "--port", "1"],
  ["serve", "-"],
  ["serve", "--port=-1"],
  ["serve", "--port=", "x"],
  ["serve", "--nope"],
  ["serve", "--nope=1"],
  ["serve", "-x"],
  ["serve", "--port"],
  ["serve", "--port", "--json"],
  ["serve", "--port", "-1"],
  ["serve", "--json=yes"],
  ["serve", "-h=1"],
  ["serve", "-hh"],
  ["serve", "-hx"],
  ["serve", "-cfile.json"],
  ["serve", "-c", "file.json"],
  ["serve", "--toString"],
  ["serve", "--__proto__"],
];

const outcome = (parse: () => { values: unknown; positionals: string[] }) => {
  try {
    const { values, positionals } = parse();
    return { values: { ...values as object }, positionals };
  } catch (error) {
    return { error: (error as Error).message };
  }
};

for (const line of LINES) {
  Deno.test(`parseCommandLine reads ${JSON.stringify(line)} as parseArgs does`, () => {
    const want = outcome(() =>
      parseArgs({ args: line, options: OPTIONS, allowPositionals: true, strict: true })
    );
    const got = outcome(() => parseCommandLine(line, OPTIONS));
    assert.deepEqual(got, want);
  });
}

Deno.test("parseCommandLine: a command line that does not fit throws UsageError", () => {
  assert.throws(() => parseCommandLine(["--nope"], OPTIONS), UsageError);
  assert.throws(() => parseCommandLine(["--port"], OPTIONS), UsageError);
  assert.throws(() => parseCommandLine(["--json=1"], OPTIONS), UsageError);
});
