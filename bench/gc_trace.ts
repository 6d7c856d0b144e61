/**
 * What a server's garbage collector was given per request: the output of a run with V8's
 * `--trace-gc-nvp` (one `GC: {…}` record per collection, with the bytes allocated since the one
 * before and the bytes promoted to the old generation) summed and divided by the requests the
 * server answered meanwhile. Allocation per request is steady from run to run (within a fraction
 * of a percent), so it shows changes that requests a second cannot tell from the machine's spread.
 *   deno run --allow-read bench/gc_trace.ts OUTPUT REQUESTS
 * Prints KB allocated and promoted per request, the collections' pause per request (µs), and how
 * many collections there were, young (scavenges) and full. The server's own log may be in the same
 * output (see `LOG_LINE`).
 */

/** What the collections of one run were given, per request. */
export interface GcPerRequest {
  /** Collections in the output: young ones (scavenges) and the rest (mark-compact). */
  young: number;
  full: number;
  /** Bytes allocated per request. */
  allocated: number;
  /** Bytes promoted to the old generation per request. */
  promoted: number;
  /** Main-thread pause per request, µs. */
  pauseUs: number;
}

/** The start of a collection's record: its pause (ms) and its kind (`s` for a scavenge). */
const RECORD = /GC: \{"pause":([\d.]+),"mutator":[\d.]+,"gc":"(\w+)"/g;
/** A record's allocation and promotion, in bytes. */
const BYTES = /"allocated":(\d+),"promoted":(\d+)/;

/**
 * A line of the program's own log (`src/log.ts`: one JSON object a line, written whole). V8 writes
 * its trace through a buffer flushed at its own times, so a log line may come in the middle of a
 * record: the log's lines are taken out first, which joins the record again.
 */
const LOG_LINE = /\{"time":"[^\n]*\n/g;

/**
 * The collections recorded in `output` (the log's lines taken out, see `LOG_LINE`; other output
 * may come between records), per request of `requests`. A record whose byte counts are missing
 * counts its pause only.
 */
export function gcPerRequest(output: string, requests: number): GcPerRequest {
  if (!(requests > 0)) throw new Error("the number of requests must be positive");
  output = output.replace(LOG_LINE, "");
  const starts = [...output.matchAll(RECORD)];
  let young = 0;
  let full = 0;
  let allocated = 0;
  let promoted = 0;
  let pause = 0;
  starts.forEach((record, i) => {
    const end = i + 1 < starts.length ? starts[i + 1].index : output.length;
    const bytes = BYTES.exec(output.slice(record.index, end));
    pause += Number(record[1]);
    if (record[2] === "s") young++;
    else full++;
    if (bytes) {
      allocated += Number(bytes[1]);
      promoted += Number(bytes[2]);
    }
  });
  return {
    young,
    full,
    allocated: allocated / requests,
    promoted: promoted / requests,
    pauseUs: (pause * 1000) / requests,
  };
}

if (import.meta.main) {
  const [file, count] = Deno.args;
  if (!file || !count) {
    console.error("usage: gc_trace.ts OUTPUT REQUESTS");
    Deno.exit(2);
  }
  const r = gcPerRequest(await Deno.readTextFile(file), Number(count));
  console.log(
    `allocated ${(r.allocated / 1024).toFixed(1)} KB a request, promoted ${
      (r.promoted / 1024).toFixed(2)
    } KB, pause ${r.pauseUs.toFixed(1)} µs; ${r.young} young and ${r.full} full collections`,
  );
}
