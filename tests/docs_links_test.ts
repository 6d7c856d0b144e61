/**
 * The documentation holds together: every relative link of README.md, ARCHITECTURE.md and
 * docs/*.md reaches a file that exists and, with an `#anchor`, a heading of that file (GitHub's
 * slugs); the README stays a front door (under 300 lines, opening with the two commands that run
 * the gateway and the tests); every `deno task` the pages name is a task of deno.json; and the config
 * fields of docs/configuration.md are the config schema's, every one of them documented.
 */
import assert from "node:assert/strict";
import {
  ConfigSchema,
  DeploymentSchema,
  ModelSchema,
  ProviderSchema,
} from "../src/config/schema.ts";

const ROOT = new URL("../", import.meta.url);

/** The documentation pages, as paths from the repository's root. */
function pages(): string[] {
  const docs = [...Deno.readDirSync(new URL("docs/", ROOT))]
    .filter((entry) => entry.isFile && entry.name.endsWith(".md"))
    .map((entry) => `docs/${entry.name}`)
    .sort();
  return ["README.md", "ARCHITECTURE.md", ...docs];
}

const read = (path: string) => Deno.readTextFileSync(new URL(path, ROOT));

/** The text with its fenced code blocks blanked out (line numbers kept). */
function withoutFences(text: string): string {
  let fence: string | null = null;
  return text.split("\n").map((line) => {
    const marker = line.match(/^\s*(`{3,}|~{3,})/)?.[1];
    if (fence === null && marker) {
      fence = marker[0].repeat(marker.length);
      return "";
    }
    if (fence !== null) {
      if (marker && marker[0] === fence[0] && marker.length >= fence.length) fence = null;
      return "";
    }
    return line;
  }).join("\n");
}

/** The contents of the fenced code blocks, in order. */
function fencedBlocks(text: string): string[] {
  const blocks: string[] = [];
  let current: string[] | null = null;
  for (const line of text.split("\n")) {
    if (/^\s*```/.test(line)) {
      if (current) {
        blocks.push(current.join("\n"));
        current = null;
      } else current = [];
    } else current?.push(line);
  }
  return blocks;
}

/** The inline code spans of the prose (outside fenced blocks). */
function codeSpans(text: string): string[] {
  return [...withoutFences(text).matchAll(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g)].map((m) =>
    m[2].trim()
  );
}

/** GitHub's anchor for a heading's text: lower case, punctuation dropped, spaces as hyphens. */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // links and images: their text
    .replace(/`/g, "")
    .replace(/\*/g, "")
    .replace(/<[^>]+>/g, "");
  return text.trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "").replace(/ /g, "-");
}

/** The anchors a Markdown file's headings produce (repeats get `-1`, `-2`… as on GitHub). */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of withoutFences(text).split("\n")) {
    const heading = line.match(/^#{1,6}\s+(.*?)\s*#*\s*$/)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count ? `${base}-${count}` : base);
  }
  return out;
}

/** The link targets of a page's prose (code spans and fenced blocks are not links). */
function links(text: string): string[] {
  const prose = withoutFences(text).replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, "``");
  return [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]);
}

Deno.test("every relative link reaches a file, and every anchor a heading of it", () => {
  const broken: string[] = [];
  let checked = 0;
  for (const page of pages()) {
    for (const target of links(read(page))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:…
      checked++;
      const [path, anchor] = target.split("#", 2);
      const url = path ? new URL(path, new URL(page, ROOT)) : new URL(page, ROOT);
      const file = url.pathname.slice(ROOT.pathname.length);
      if (!url.pathname.startsWith(ROOT.pathname)) {
        broken.push(`${page}: ${target} (outside the repository)`);
        continue;
      }
      let isFile = false;
      try {
        isFile = Deno.statSync(url).isFile;
      } catch {
        broken.push(`${page}: ${target} (no such file: ${file})`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!isFile || !file.endsWith(".md")) {
        broken.push(`${page}: ${target} (an anchor into something not Markdown)`);
      } else if (!anchors(Deno.readTextFileSync(url)).has(anchor)) {
        broken.push(`${page}: ${target} (no heading of ${file} makes #${anchor})`);
      }
    }
  }
  assert.ok(checked > 50, `checked ${checked} links`);
  assert.deepEqual(broken, []);
});

Deno.test("headings make the anchors GitHub makes", () => {
  assert.equal(
    slug("Install on a Debian host (systemd)"),
    "install-on-a-debian-host-systemd",
  );
  assert.equal(
    slug("Figures so far (2-core machine, 2026-11-23)"),
    "figures-so-far-2-core-machine-2026-11-23",
  );
  assert.equal(slug("Keys, accounts and money"), "keys-accounts-and-money");
  assert.equal(slug("The `deno task` names"), "the-deno-task-names");
});

Deno.test("the README is a front door: short, and the two commands come first", () => {
  const readme = read("README.md");
  const lines = readme.trimEnd().split("\n").length;
  assert.ok(lines < 300, `README.md has ${lines} lines; keep it under 300 (details go in docs/)`);
  // The first code block comes before any section and holds the two commands, in this order.
  const firstSection = readme.search(/^##\s/m);
  const firstFence = readme.search(/^```/m);
  assert.ok(firstFence >= 0 && firstFence < firstSection, "the commands open the README");
  const commands = fencedBlocks(readme)[0].split("\n")
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter((line) => line && !line.startsWith("#"));
  const version = read(".ci/run").match(/^DENO_VERSION=(\S+)$/m)?.[1];
  assert.ok(version, "the Deno version CI installs");
  assert.deepEqual(commands, [
    `npx -y deno@${version} task start`,
    `npx -y deno@${version} task test`,
  ]);
});

Deno.test("every `deno task` the pages name is a task of deno.json", () => {
  const tasks = new Set(Object.keys(JSON.parse(read("deno.json")).tasks));
  const named = new Set<string>();
  for (const page of pages()) {
    for (const m of read(page).matchAll(/\bdeno(?:@[\w.-]+)? task ([a-z][\w:-]*)/g)) {
      named.add(m[1]);
    }
  }
  assert.ok(named.has("start") && named.has("test"), [...named].join(", "));
  assert.deepEqual([...named].filter((name) => !tasks.has(name)), []);
});

/** A valibot schema with its `optional`/`nullable` wrappers taken off. */
// deno-lint-ignore no-explicit-any
type Schema = any;
function unwrap(schema: Schema): Schema {
  while (["optional", "nullable", "nullish"].includes(schema?.type)) schema = schema.wrapped;
  return schema;
}
const isObject = (schema: Schema) => ["object", "strict_object"].includes(unwrap(schema)?.type);

/** The dotted paths of a schema's fields (objects descended into; records, arrays are leaves). */
function fieldPaths(schema: Schema, prefix: string[] = []): string[][] {
  const s = unwrap(schema);
  if (!isObject(s)) return [prefix];
  return Object.entries(s.entries).flatMap(([key, entry]) => fieldPaths(entry, [...prefix, key]));
}

/** The names in the first column of docs/configuration.md's `field` tables. */
function documentedFields(text: string): string[] {
  const out: string[] = [];
  let inTable = false;
  for (const line of withoutFences(text).split("\n")) {
    const cells = line.trim().startsWith("|") ? line.trim().slice(1).split("|") : null;
    if (!cells) {
      inTable = false;
      continue;
    }
    if (/^\s*field\s*$/.test(cells[0])) inTable = true;
    else if (inTable && !/^[\s:-]+$/.test(cells[0])) {
      out.push(...[...cells[0].matchAll(/`([^`]+)`/g)].map((m) => m[1]));
    }
  }
  return out;
}

Deno.test("docs/configuration.md documents the config schema's fields, and only those", () => {
  const text = read("docs/configuration.md");
  const fields = documentedFields(text);
  assert.ok(fields.length > 30, `read ${fields.length} fields`);
  // Each documented field is one of the schema's (NAME, ID: a record's keys; `*`: an object's).
  const unknown = fields.filter((field) => {
    let schema = unwrap(ConfigSchema);
    for (const part of field.split(".")) {
      if (part === "*") return !isObject(schema);
      if (/^[A-Z]+$/.test(part)) {
        if (schema?.type !== "record") return true;
        schema = unwrap(schema.value);
      } else {
        if (!isObject(schema) || !(part in schema.entries)) return true;
        schema = unwrap(schema.entries[part]);
      }
    }
    return false;
  });
  assert.deepEqual(unknown, [], "documented fields the config schema does not have");

  // Each field of the schema is documented: by its path, or under its section's `section.*`.
  const spans = new Set(codeSpans(text));
  const undocumented = fieldPaths(ConfigSchema).filter((path) => {
    const [section, ...rest] = path;
    if (spans.has(path.join("."))) return false;
    if (unwrap(unwrap(ConfigSchema).entries[section]).type === "record") {
      return ![...spans].some((span) => span.startsWith(`${section}.`));
    }
    return !(spans.has(`${section}.*`) && spans.has(rest.join(".")));
  });
  assert.deepEqual(
    undocumented.map((path) => path.join(".")),
    [],
    "config fields docs/configuration.md does not document",
  );

  // A provider's, a model's and a deployment's own fields are named there or in docs/routing.md.
  const words = new Set(
    [...codeSpans(text), ...codeSpans(read("docs/routing.md"))]
      .flatMap((span) => span.match(/\w+/g) ?? []),
  );
  const unnamed = [ProviderSchema, ModelSchema, DeploymentSchema]
    .flatMap((schema) => fieldPaths(schema))
    .flatMap((path) => path)
    .filter((name) => !words.has(name));
  assert.deepEqual([...new Set(unnamed)], [], "provider and model fields the docs never name");
});
