/**
 * The coverage report CI prints and the floor it holds. Run after `deno task test:coverage`
 * (which collects the coverage of the test processes and of every gateway and CLI process they
 * start, serving threads included: Deno passes DENO_COVERAGE_DIR on to its children):
 *
 *   deno run -A tests/helpers/coverage.ts DIR
 *
 * prints the line and branch figures of each directory of the money path, of the four together
 * and of all of src/, and exits 1 when the money path's line or branch figure is under its floor.
 */

/**
 * The floors, in percent, for src/billing/, src/auth/, src/pipeline/ and src/translate/ together:
 * a point or so under the figures measured (94.4% of lines, 91.6% of branches when set), as a run
 * on a loaded machine takes a few timing-dependent paths more or less. Raise them as the figures
 * rise (issue #33 asked for at least 85% of lines).
 */
export const FLOOR = { lines: 93, branches: 90 };

/** The directories of the money path. */
export const MONEY_PATH = ["billing", "auth", "pipeline", "translate"];

interface Counts {
  lines: number;
  linesHit: number;
  branches: number;
  branchesHit: number;
}

/** Per source file, its line and branch counts, from an lcov file. */
export function parseLcov(text: string): Map<string, Counts> {
  const files = new Map<string, Counts>();
  let current: Counts | null = null;
  for (const line of text.split("\n")) {
    if (line.startsWith("SF:")) {
      current = { lines: 0, linesHit: 0, branches: 0, branchesHit: 0 };
      files.set(line.slice(3), current);
    } else if (!current) continue;
    else if (line.startsWith("LF:")) current.lines = Number(line.slice(3));
    else if (line.startsWith("LH:")) current.linesHit = Number(line.slice(3));
    else if (line.startsWith("BRF:")) current.branches = Number(line.slice(4));
    else if (line.startsWith("BRH:")) current.branchesHit = Number(line.slice(4));
  }
  return files;
}

/** The counts of the files under `dir`, added up. */
export function sum(files: Map<string, Counts>, dir: string): Counts {
  const total = { lines: 0, linesHit: 0, branches: 0, branchesHit: 0 };
  for (const [path, counts] of files) {
    if (!path.startsWith(dir)) continue;
    total.lines += counts.lines;
    total.linesHit += counts.linesHit;
    total.branches += counts.branches;
    total.branchesHit += counts.branchesHit;
  }
  return total;
}

function percent(hit: number, all: number): number {
  return all ? Math.floor((hit / all) * 1000) / 10 : 100;
}

if (import.meta.main) {
  const dir = Deno.args[0];
  if (!dir) {
    console.error("usage: deno run -A tests/helpers/coverage.ts COVERAGE_DIR");
    Deno.exit(2);
  }
  const src = new URL("../../src/", import.meta.url).pathname;
  const lcov = `${dir}/lcov.info`;
  // A process killed while it wrote its profile (the tests kill gateways with SIGKILL on purpose)
  // leaves it empty or cut short: such a profile is dropped, not the whole report.
  let dropped = 0;
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.isFile || !entry.name.endsWith(".json")) continue;
    const path = `${dir}/${entry.name}`;
    try {
      JSON.parse(await Deno.readTextFile(path));
    } catch {
      await Deno.remove(path);
      dropped++;
    }
  }
  if (dropped) console.log(`coverage: ${dropped} unreadable profiles dropped (processes killed)`);
  const report = await new Deno.Command(Deno.execPath(), {
    args: ["coverage", dir, "--lcov", `--output=${lcov}`, `--include=^file://${src}`],
    env: { NO_COLOR: "1" },
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!report.success) Deno.exit(report.code || 1);
  const files = parseLcov(await Deno.readTextFile(lcov));
  const rows: [string, Counts][] = MONEY_PATH.map((name) => [
    `src/${name}/`,
    sum(files, `${src}${name}/`),
  ]);
  const money = rows.reduce((total, [, c]) => ({
    lines: total.lines + c.lines,
    linesHit: total.linesHit + c.linesHit,
    branches: total.branches + c.branches,
    branchesHit: total.branchesHit + c.branchesHit,
  }), { lines: 0, linesHit: 0, branches: 0, branchesHit: 0 });
  rows.push(["money path (the four)", money], ["src/ (all)", sum(files, src)]);
  console.log("coverage                 lines            branches");
  for (const [name, c] of rows) {
    console.log(
      `${name.padEnd(24)} ${`${percent(c.linesHit, c.lines)}%`.padStart(6)} ` +
        `${`(${c.linesHit}/${c.lines})`.padEnd(12)} ${
          `${percent(c.branchesHit, c.branches)}%`.padStart(6)
        } (${c.branchesHit}/${c.branches})`,
    );
  }
  const lines = percent(money.linesHit, money.lines);
  const branches = percent(money.branchesHit, money.branches);
  console.log(
    `coverage: money path ${lines}% lines, ${branches}% branches ` +
      `(floor ${FLOOR.lines}% lines, ${FLOOR.branches}% branches)`,
  );
  if (lines < FLOOR.lines || branches < FLOOR.branches) {
    console.error("coverage: the money path is under its floor");
    Deno.exit(1);
  }
}
