/**
 * The peer gateways' packages, installed from npm with `npm install` into a cache directory —
 * bench-only, never a dependency of Switchyard: `$SWITCHYARD_BENCH_DIR` (default
 * `~/.cache/switchyard-bench`), one directory per package manifest (named by its hash, so a
 * changed pin or override installs afresh). An install goes to a directory of its own and is
 * renamed into place when complete, so two runs installing at once do not mix their files.
 */

/** What one peer needs from npm: its pinned package and the versions forced under it. */
export interface PeerPackage {
  name: string;
  version: string;
  /** npm `overrides`: dependency versions forced over what the package asks for. */
  overrides?: Record<string, string>;
}

/** Where the peers are installed. */
export function peerCache(): string {
  return Deno.env.get("SWITCHYARD_BENCH_DIR") ||
    `${Deno.env.get("HOME") ?? "/tmp"}/.cache/switchyard-bench`;
}

/** An npm install may take this long (a registry that does not answer is a failure, not a hang). */
const INSTALL_MS = 300_000;

function manifest(pkg: PeerPackage): string {
  return JSON.stringify(
    {
      private: true,
      description: "A peer gateway of Switchyard's benchmark (bench/peers.ts)",
      dependencies: { [pkg.name]: pkg.version },
      ...(pkg.overrides ? { overrides: pkg.overrides } : {}),
    },
    null,
    2,
  ) + "\n";
}

async function shortHash(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest).slice(0, 6)].map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

/**
 * The directory holding `pkg` in its `node_modules/`, installed first if it is not there yet.
 * Throws, with npm's own words, when it cannot be installed.
 */
export async function installPeer(pkg: PeerPackage, cache = peerCache()): Promise<string> {
  const text = manifest(pkg);
  const slug = pkg.name.replace(/^@/, "").replace(/[^a-z0-9.-]+/gi, "-");
  const dir = `${cache}/${slug}-${pkg.version}-${await shortHash(text)}`;
  const installed = `${dir}/node_modules/${pkg.name}/package.json`;
  if (await exists(installed)) return dir;
  await Deno.mkdir(cache, { recursive: true });
  const work = await Deno.makeTempDir({ dir: cache, prefix: `.installing-${slug}-` });
  try {
    await Deno.writeTextFile(`${work}/package.json`, text);
    const npm = new Deno.Command("npm", {
      args: ["install", "--no-audit", "--no-fund", "--loglevel=error"],
      cwd: work,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    });
    let child: Deno.ChildProcess;
    try {
      child = npm.spawn();
    } catch {
      throw new Error(`no npm on PATH to install ${pkg.name}@${pkg.version}`);
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), INSTALL_MS);
    const out = await child.output().finally(() => clearTimeout(timer));
    if (!out.success) {
      // npm's first lines say what went wrong (`npm error code ETARGET`, …), the last where its log is.
      const said = new TextDecoder().decode(out.stderr).trim().split("\n").slice(0, 3).join(" / ");
      throw new Error(`npm install ${pkg.name}@${pkg.version} failed (exit ${out.code}): ${said}`);
    }
    try {
      await Deno.rename(work, dir);
    } catch (error) {
      // Another run installed the same manifest meanwhile: theirs is as good.
      if (!(await exists(installed))) throw error;
    }
    return dir;
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}

/** The major version of the `node` on PATH, or why there is none. */
export async function nodeMajor(): Promise<number | string> {
  try {
    const out = await new Deno.Command("node", { args: ["--version"], stderr: "null" }).output();
    const version = new TextDecoder().decode(out.stdout).trim().split("\n")[0];
    const major = Number(/^v(\d+)\./.exec(version)?.[1]);
    return out.success && major
      ? major
      : `the node on PATH is not Node.js (--version: "${version}")`;
  } catch {
    return "no node on PATH";
  }
}
