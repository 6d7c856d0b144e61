/**
 * A clone stands alone: the check `.ci/run` makes before anything else, run with the tests so a
 * change that would stop CI in its first second fails here first. No file of the project names the
 * reference folder beside the repository (its relative path) nor an absolute path of
 * the machine it was written on.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
/** `.ci/run` names the patterns it looks for; this file builds them, so it is checked too. */
const EXEMPT = new Set([".ci/run"]);

/** The same two patterns `.ci/run` greps for (its grep is a substring match: so is this). */
const FORBIDDEN = ["../" + "shared", "/" + "work/"];

/** The project's files: git's list when this is a checkout, else every file under the root. */
function projectFiles(): string[] {
  try {
    const out = new Deno.Command("git", {
      args: ["ls-files", "-z"],
      cwd: ROOT,
      stdout: "piped",
      stderr: "null",
    }).outputSync();
    if (out.success) return new TextDecoder().decode(out.stdout).split("\0").filter(Boolean);
  } catch {
    // No git on this machine: walk the tree.
  }
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of Deno.readDirSync(new URL(dir, ROOT))) {
      const path = dir + entry.name;
      if (entry.isDirectory && entry.name !== ".git") walk(path + "/");
      else if (entry.isFile) files.push(path);
    }
  };
  walk("");
  return files;
}

Deno.test("no file refers to anything beside the repository", () => {
  const files = projectFiles();
  assert.ok(files.length > 100, `found ${files.length} files`);
  const found: string[] = [];
  for (const file of files) {
    if (EXEMPT.has(file)) continue;
    let text: string;
    try {
      text = Deno.readTextFileSync(new URL(file, ROOT));
    } catch {
      continue; // deleted in the work tree, not yet in git's index
    }
    text.split("\n").forEach((line, i) => {
      if (FORBIDDEN.some((pattern) => line.includes(pattern))) {
        found.push(`${file}:${i + 1}: ${line.trim().slice(0, 120)}`);
      }
    });
  }
  assert.deepEqual(found, []);
});
