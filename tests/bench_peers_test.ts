/**
 * The benchmark's peer gateways (`bench/peers.ts`) are set up as the bench means them: each,
 * installed from npm and started as `deno task bench` starts it, answers every scenario call the
 * bench gives it — completely (a JSON answer with its usage, a stream to its last event) — by
 * calling the emulator on the path of the scenario's upstream call, for the same model, with the
 * upstream key in that family's header (the emulator here accepts only that key). Without Node the
 * peers cannot run: skipped here, a failure in CI. The peers are installed on first use into
 * `$SWITCHYARD_BENCH_DIR` (default `~/.cache/switchyard-bench`).
 */
import assert from "node:assert/strict";
import { startEmulator } from "../src/emulator/server.ts";
import { scenarios, UPSTREAM_KEY } from "../bench/scenarios.ts";
import { CCR_KEY } from "../bench/peer_calls.ts";
import { type PeerId, startPeer } from "../bench/peers.ts";
import { nodeMajor } from "../bench/peer_install.ts";
import { stopServer } from "../bench/procs.ts";
import { skippedWithout } from "./helpers/requires.ts";

const node = await nodeMajor();
const noNode = typeof node === "string"
  ? node
  : node < 20
  ? `node ${node} (20 or newer needed)`
  : "";
if (noNode) skippedWithout(`bench peer tests skipped: ${noNode}`);

interface Recorded {
  path: string;
  body: Record<string, unknown>;
}

/** Starts the peer against an emulator that records what it receives; runs `check`; stops all. */
async function withPeer(
  id: PeerId,
  check: (base: string, emulatorUrl: string, seen: () => Promise<Recorded[]>) => Promise<void>,
) {
  const emulator = startEmulator({ requiredKey: UPSTREAM_KEY, record: true });
  const emulatorUrl = `http://127.0.0.1:${emulator.addr.port}`;
  const dir = await Deno.makeTempDir({ prefix: "switchyard-peer-" });
  try {
    const peer = await startPeer(id, { url: emulatorUrl, key: UPSTREAM_KEY }, dir);
    try {
      const seen = async () => await (await fetch(`${emulatorUrl}/_emulator/requests`)).json();
      await check(`http://127.0.0.1:${peer.server.port}`, emulatorUrl, seen);
    } finally {
      await stopServer(peer.server);
    }
  } finally {
    await emulator.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
}

for (const id of ["portkey", "claude-code-router"] as const) {
  Deno.test({
    name: `bench peer ${id}: answers each of its scenarios' calls through the emulator`,
    ignore: Boolean(noNode),
    fn: () =>
      withPeer(id, async (base, emulatorUrl, seen) => {
        const mine = scenarios("sy-unused", undefined, emulatorUrl).filter((s) => s.peers?.[id]);
        assert.ok(mine.length > 0, `some scenario runs ${id}`);
        for (const scenario of mine) {
          const call = scenario.peers![id]!;
          const response = await fetch(base + call.path, {
            method: "POST",
            headers: { "content-type": "application/json", ...call.headers },
            body: JSON.stringify(call.body),
          });
          const text = await response.text();
          assert.equal(response.status, 200, `${scenario.name}: ${text}`);
          const upstream = scenario.upstream.body as Record<string, unknown>;
          if (upstream.stream) {
            assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/);
            assert.match(text, /event: message_stop\ndata: \{"type":"message_stop"\}/);
            // A call that offers tools (an agent's) is answered with a call of one.
            const answer = upstream.tools ? /"type":"tool_use"/ : /"text":" switchyards"/;
            assert.match(text, answer, `${scenario.name}: the answer streamed`);
          } else {
            const answer = JSON.parse(text);
            assert.match(answer.choices[0].message.content, /^You said: Write one sentence/);
            assert.ok(answer.usage.completion_tokens > 0, `${scenario.name}: usage`);
          }
          const last = (await seen()).at(-1)!;
          assert.equal(last.path, scenario.upstream.path, `${scenario.name}: the upstream path`);
          assert.equal(last.body.model, upstream.model, `${scenario.name}: the upstream model`);
          assert.equal(Boolean(last.body.stream), Boolean(upstream.stream));
        }
        if (id === "claude-code-router") {
          // Its APIKEY holds: a client without it is refused, and nothing goes upstream.
          // Every request the emulator ever took (its recorded list keeps only the latest 200).
          const sent = async () =>
            (await (await fetch(`${emulatorUrl}/_emulator/stats`)).json()).requests as number;
          const before = await sent();
          const call = mine[0].peers![id]!;
          const refused = await fetch(base + call.path, {
            method: "POST",
            headers: { "content-type": "application/json", "x-api-key": `${CCR_KEY}-not` },
            body: JSON.stringify(call.body),
          });
          assert.equal(refused.status, 401);
          await refused.body?.cancel();
          assert.equal(await sent(), before, "nothing went upstream");
        }
      }),
  });
}
