/**
 * The command line's options and positionals, strictly: what `node:util`'s `parseArgs` does with
 * `strict` and `allowPositionals`, and the same messages, without importing `node:util` (which
 * makes Deno load its Node compatibility layer, tens of ms of every start).
 */

/** One option: a value (`string`, every occurrence kept with `multiple`) or a flag. */
export interface OptionSpec {
  type: "string" | "boolean";
  multiple?: boolean;
  /** A one-letter alias, given as `-x`. */
  short?: string;
}

/** The values of `S`'s options that were given. */
export type OptionValues<S extends Record<string, OptionSpec>> = {
  -readonly [K in keyof S]?: S[K]["type"] extends "boolean" ? boolean
    : S[K]["multiple"] extends true ? string[]
    : string;
};

/** A command line that does not fit the options: its message says why. */
export class UsageError extends Error {
  override name = "UsageError";
}

/**
 * Reads `given`: `--name value`, `--name=value`, `--flag`, `-x` (a short alias; `-xy` two) and
 * positionals;
 * everything after `--` is positional. A value that looks like an option (`--port -1`) must be
 * given as `--port=-1`. An option given twice keeps the last value, or every value with
 * `multiple`. Throws `UsageError` for an unknown option, a missing or ambiguous value, or a value
 * given to a flag.
 */
export function parseCommandLine<const S extends Record<string, OptionSpec>>(
  given: readonly string[],
  options: S,
): { values: OptionValues<S>; positionals: string[] } {
  let args = given;
  const values: Record<string, string | boolean | string[]> = {};
  const positionals: string[] = [];
  const shorts = new Map(
    Object.entries(options).flatMap(([name, spec]) => spec.short ? [[spec.short, name]] : []),
  );
  const set = (name: string, value: string | boolean) => {
    if (options[name].multiple) ((values[name] ??= []) as string[]).push(value as string);
    else values[name] = value;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      positionals.push(arg);
      continue;
    }
    if (!arg.startsWith("--") && arg.length > 2) {
      // A group of short options (`-hv`, or `-cVALUE` for one that takes a value): one at a time.
      const spec = options[shorts.get(arg[1]) ?? ""];
      const expanded = spec?.type === "string"
        ? [arg.slice(0, 2), arg.slice(2)]
        : [...arg.slice(1)].map((letter) => `-${letter}`);
      args = [...args.slice(0, i), ...expanded, ...args.slice(i + 1)];
      i--;
      continue;
    }
    const long = arg.startsWith("--");
    const equals = long ? arg.indexOf("=") : -1;
    const given = equals < 0 ? arg : arg.slice(0, equals);
    const name = long ? given.slice(2) : shorts.get(given.slice(1));
    if (name === undefined || !Object.hasOwn(options, name)) {
      throw new UsageError(
        `Unknown option '${given}'. To specify a positional argument starting with a '-', ` +
          `place it at the end of the command after '--', as in '-- "${given}"`,
      );
    }
    const shown = long ? given : `-${options[name].short}, --${name}`;
    if (options[name].type === "boolean") {
      if (equals >= 0) throw new UsageError(`Option '${shown}' does not take an argument`);
      set(name, true);
      continue;
    }
    if (equals >= 0) {
      set(name, arg.slice(equals + 1));
      continue;
    }
    const value = args[i + 1];
    if (value === undefined) throw new UsageError(`Option '${shown} <value>' argument missing`);
    if (value.length > 1 && value.startsWith("-")) {
      throw new UsageError(
        `Option '${shown}' argument is ambiguous.\nDid you forget to specify the option ` +
          `argument for '${shown}'?\nTo specify an option argument starting with a dash use ` +
          `'--${name}=-XYZ'.`,
      );
    }
    set(name, value);
    i++;
  }
  return { values: values as OptionValues<S>, positionals };
}
