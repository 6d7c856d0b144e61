/**
 * The floor: the least any gateway with Switchyard's guarantees does per call, and nothing more —
 * the ceiling of what the gateway could reach on the same box. On top of the bare proxy it reads
 * and parses the client's body and sends it on re-serialised, checks a key (SHA-256 and a
 * constant-time compare), takes a hold in the SQLite store and waits for its commit before going
 * upstream, reads the usage (the whole JSON answer, or every event of a stream through the
 * project's relay and meter), records the stored response and its items, settles (committed before
 * the client sees the end) and writes an access-log line. No routing, limits, validation, pricing,
 * metrics or translation: the calls go to the upstream as they arrive (the bare proxy's requests).
 * Prints `{"port":N}` once listening.
 *   deno run --allow-net --allow-read=DIR,src --allow-write=DIR bench/floor_proxy.ts UPSTREAM_URL DIR
 */
import { openSqliteStore } from "../src/store/sqlite.ts";
import { hashKey, timingSafeEqual } from "../src/auth/keys.ts";
import { presentedKey } from "../src/auth/authenticate.ts";
import { PassUnits, ReadUnits, type RelayStages, UnitFramer } from "../src/http/relay.ts";
import { relayStream } from "../src/http/relay_stream.ts";
import { log } from "../src/log.ts";
import type { CreatedObject, StreamMeter } from "../src/billing/usage.ts";
import type { Usage } from "../src/billing/price.ts";
import {
  responsesMeter,
  responsesObjects,
  responsesUsage,
} from "../src/protocols/responses/usage.ts";
import { messagesMeter, messagesUsage } from "../src/protocols/messages/usage.ts";
import { geminiMeter, generateUsage } from "../src/protocols/generate/usage.ts";
import { chatMeter, chatUsage } from "../src/protocols/chat/usage.ts";
import { FLOOR_KEY, UPSTREAM_HEADERS } from "./scenarios.ts";

const [target, dir] = Deno.args;
if (!target || !dir) throw new Error("usage: floor_proxy.ts UPSTREAM_URL DIR");

const store = openSqliteStore(`${dir}/floor.db`, { owner: true });
store.prepareForServing({ shared: false });
const account = await store.ensureAccount("floor");
await store.credit(account.id, 1e15, "bench");
const keyHash = hashKey(FLOOR_KEY);

/** How a family's answers are read, by the upstream path. */
interface Family {
  usage(json: unknown): Usage | null;
  meter(): StreamMeter;
}
const FAMILIES: [RegExp, Family][] = [
  [/\/responses$/, { usage: responsesUsage, meter: responsesMeter }],
  [/\/messages$/, { usage: messagesUsage, meter: messagesMeter }],
  [/:(stream)?generateContent$/i, { usage: generateUsage, meter: geminiMeter }],
  [/\/chat\/completions$/, { usage: (json) => chatUsage(json), meter: () => chatMeter() }],
];

/** Whether the request presents the floor's key, the way the gateway reads keys. */
function authorized(req: Request, url: URL): boolean {
  try {
    return timingSafeEqual(hashKey(presentedKey(req, url, "any")), keyHash);
  } catch {
    return false; // no key presented
  }
}

/** What a hold's estimate charges: one input token. */
const ESTIMATE = { units: [{ unit: "input_tokens", quantity: 1, amount: 1 }], amount: 1 };
/** One nanoUSD per token (the store requires the amount to be the sum of the lines). */
const charge = (usage: Usage | null) => {
  const units = usage
    ? [
      { unit: "input_tokens", quantity: usage.inputTokens, amount: usage.inputTokens },
      { unit: "output_tokens", quantity: usage.outputTokens, amount: usage.outputTokens },
    ]
    : ESTIMATE.units;
  return { units, amount: units.reduce((n, u) => n + u.amount, 0), estimated: !usage };
};

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
  const started = performance.now();
  const url = new URL(req.url);
  const family = FAMILIES.find(([path]) => path.test(url.pathname))?.[1];
  if (!family || !authorized(req, url)) {
    return new Response("{}", { status: 401 });
  }
  const body = JSON.stringify(JSON.parse(await req.text()));
  const hold = await store.reserve({
    requestId: crypto.randomUUID(),
    keyId: "key_floor",
    accountId: account.id,
    endpoint: url.pathname,
    model: "floor",
    provider: "emulator",
    reserve: 1,
    estimate: ESTIMATE,
  });
  if (hold === null) return new Response("{}", { status: 402 });
  const upstream = await fetch(target + url.pathname + url.search, {
    method: "POST",
    headers: { "content-type": "application/json", ...UPSTREAM_HEADERS },
    body,
  });
  const headers = { "content-type": upstream.headers.get("content-type") ?? "application/json" };
  const finish = async (usage: Usage | null, objects: CreatedObject[]) => {
    // A stored response, and its items (a later input may refer to them), in one write.
    const recorded = objects.filter(({ kind }) => kind !== "container").map(({ id, kind }) => ({
      id,
      accountId: account.id,
      kind,
      contextTokens: usage && kind === "response" ? usage.inputTokens + usage.outputTokens : 0,
      provider: "emulator",
    }));
    if (recorded.length) store.recordObjects(recorded);
    await store.settle(hold, charge(usage));
    log("info", "request", {
      method: req.method,
      path: url.pathname,
      status: upstream.status,
      ms: Math.round(performance.now() - started),
      input_tokens: usage?.inputTokens ?? 0,
      output_tokens: usage?.outputTokens ?? 0,
    });
  };
  if (!headers["content-type"].startsWith("text/event-stream") || !upstream.body) {
    const text = await upstream.text();
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text);
    } catch { /* no usage: estimated */ }
    const id = typeof json.id === "string" ? json.id : "";
    await finish(family.usage(json), id.startsWith("resp") ? responsesObjects(json) : []);
    return new Response(text, { status: upstream.status, headers });
  }
  const meter = family.meter();
  const stages: RelayStages = [
    new UnitFramer("sse"),
    new ReadUnits(meter),
    new PassUnits(),
  ];
  const relayed = relayStream(upstream.body, stages, {
    onEnd: () => finish(meter.usage(), meter.objects()),
    abort: () => {},
    idleMs: 0,
    maxMs: 0,
  });
  return new Response(relayed, { status: upstream.status, headers });
});
console.log(JSON.stringify({ port: server.addr.port }));
// Ctrl-C exits normally, so a `--cpu-prof` run of the floor writes its profile.
Deno.addSignalListener("SIGINT", () => Deno.exit(0));
