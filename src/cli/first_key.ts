/**
 * The command that creates a first key, for the log line of a server whose store has none: the
 * program as the operator runs it (the compiled binary by its path, or `deno run -A main.ts` from a
 * checkout) with the server's own `--config`, so that the key lands in the store the server uses.
 */

/** What `firstKeyCommand` needs to know about the running server. */
export interface FirstKeyOptions {
  /** `Deno.execPath()`: the `deno` executable, or the compiled binary itself. */
  execPath: string;
  /** The `--config` the server was started with, if any. */
  configFile?: string;
  /** Demo mode (`--emulate`): a ready-to-paste account and credit instead of placeholders. */
  demo: boolean;
}

/** The `keys create` command line for the server described by `o`. */
export function firstKeyCommand(o: FirstKeyOptions): string {
  const name = o.execPath.split(/[\\/]/).pop() ?? "";
  const program = /^deno(\.exe)?$/i.test(name) ? "deno run -A main.ts" : shellWord(o.execPath);
  const account = o.demo ? "--account demo --credit 10" : "--account NAME --credit USD";
  const config = o.configFile === undefined ? "" : ` --config ${shellWord(o.configFile)}`;
  return `${program} keys create ${account}${config}`;
}

/** `word` as one POSIX shell word: as it is when that is safe, else single-quoted. */
function shellWord(word: string): string {
  return /^[\w./:@%+=,-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
