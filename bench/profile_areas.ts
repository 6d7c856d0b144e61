/**
 * Where a server's main thread spends its time, per request: a V8 CPU profile (`--cpu-prof`, as
 * `BENCH_PROFILE` writes the gateways') read sample by sample, each sample's time given to the
 * area of the function it was in (garbage collection, SQLite statements, Deno's HTTP server and
 * fetch, the gateway's modules by directory), idle time left out, divided by the requests the
 * server answered while it was profiled.
 *   deno run --allow-read bench/profile_areas.ts PROFILE.cpuprofile REQUESTS
 * Prints one line per area, most first: microseconds per request, share of the busy time.
 */

/** The parts of a `.cpuprofile` read here. */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string } }[];
  samples: number[];
  timeDeltas: number[];
}

/** One area's time, µs per request, and its share of the busy time. */
export interface Area {
  area: string;
  usPerRequest: number;
  share: number;
}

/** Busy time per request and its areas, most first. */
export interface Areas {
  busyMs: number;
  usPerRequest: number;
  areas: Area[];
}

/** Deno's extensions, by the name of their `ext:` module. */
const DENO_AREAS: Record<string, string> = {
  deno_http: "Deno HTTP server (JS)",
  deno_fetch: "Deno fetch, headers, bodies (JS)",
  deno_web: "Deno web (streams, URL, events, encoding)",
  deno_webidl: "Deno webidl",
};

/** The area of a function, or null for idle time. */
export function areaOf(frame: { functionName: string; url: string }): string | null {
  const { functionName: name, url } = frame;
  if (name === "(idle)") return null;
  if (name === "(garbage collector)") return "garbage collection";
  if (name === "(program)") return "V8 and runtime (program)";
  if (!url) {
    // node:sqlite's statements run natively, under their JavaScript names.
    if (["run", "get", "all", "exec", "iterate"].includes(name)) return "SQLite statements";
    if (name.startsWith("op_http")) return "Deno HTTP server (ops)";
    if (name.startsWith("op_fetch") || name === "op_read_all") return "Deno fetch (ops)";
    return name.startsWith("op_") ? `other ops (${name})` : "builtins";
  }
  if (url.startsWith("ext:")) {
    const ext = url.slice(4).split("/")[0];
    return DENO_AREAS[ext] ?? `Deno ${ext}`;
  }
  const own = /\/(src\/[^/]+|bench|main\.ts)(?:\/|$)/.exec(url);
  if (own) return own[1].endsWith(".ts") ? own[1] : `${own[1]}/`;
  if (url.includes("/valibot/")) return "valibot";
  return `other (${url.split("/").pop()})`;
}

/** Sums the profile's samples by area (see the module's doc). */
export function profileAreas(profile: CpuProfile, requests: number): Areas {
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const byArea = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const frame = frames.get(id);
    const area = frame ? areaOf(frame) : "unknown";
    if (area === null) return;
    const us = profile.timeDeltas[i] ?? 0;
    busy += us;
    byArea.set(area, (byArea.get(area) ?? 0) + us);
  });
  const areas = [...byArea].map(([area, us]) => ({
    area,
    usPerRequest: us / requests,
    share: busy ? us / busy : 0,
  })).sort((a, b) => b.usPerRequest - a.usPerRequest);
  return { busyMs: busy / 1000, usPerRequest: busy / requests, areas };
}

if (import.meta.main) {
  const [path, count] = Deno.args;
  const requests = Number(count);
  if (!path || !(requests > 0)) {
    throw new Error("usage: profile_areas.ts PROFILE.cpuprofile REQUESTS");
  }
  const result = profileAreas(JSON.parse(await Deno.readTextFile(path)), requests);
  console.log(
    `busy ${result.busyMs.toFixed(0)} ms, ${requests} requests: ` +
      `${result.usPerRequest.toFixed(1)} µs a request`,
  );
  for (const a of result.areas) {
    if (a.usPerRequest < 0.05) continue;
    console.log(
      `${a.usPerRequest.toFixed(1).padStart(7)} µs ${
        (100 * a.share).toFixed(1).padStart(5)
      }%  ${a.area}`,
    );
  }
}
