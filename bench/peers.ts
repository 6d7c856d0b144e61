/**
 * The peer gateways `deno task bench` measures Switchyard against: Node programs from npm (see
 * `peer_install.ts`), each started once on a free port and pointed at the same emulator.
 *
 * - Portkey's open-source gateway, for pass-through: chat completions JSON and Messages SSE. Run
 *   as `build/start-server.js --port=N --headless` (without `--headless`, outside
 *   `NODE_ENV=production`, it also serves its log console and streams every request to it). It
 *   takes the upstream from each request's headers — `x-portkey-provider` and
 *   `x-portkey-custom-host` (the provider's base URL, to which it adds `/chat/completions` or
 *   `/messages`) — and the upstream key from the client's own key header; it checks no key of its
 *   own and writes no access log. Its hono and @hono/node-server are held to the versions of
 *   Portkey's own lockfile: newer ones fail every stream.
 * - claude-code-router, for a Messages client on a chat-completions upstream (translated both
 *   ways). Run as `dist/cli.js start` (the server, in the foreground), configured by
 *   `~/.claude-code-router/config.json` under a home of its own: `HOST`, `PORT`, `APIKEY` (the key
 *   clients present, as `x-api-key` or a Bearer token), `Providers` (`api_base_url` is the whole
 *   chat completions URL), `Router.default` (`"provider,model"`), `LOG_LEVEL` (pino files under
 *   `~/.claude-code-router/logs`; on by default at `debug`, here `info`: a line when a request
 *   comes in, its body, a line when it is done — its access log).
 */
import { installPeer, nodeMajor, type PeerPackage } from "./peer_install.ts";
import { freePort, type Server, spawnOnPort } from "./procs.ts";
import { CCR_KEY, CCR_UPSTREAM, type PeerId } from "./peer_calls.ts";

export type { PeerId };

/** How one peer is installed and started. */
interface Peer {
  label: string;
  package: PeerPackage;
  /** The script node runs, inside the package. */
  entry: string;
  /** Its command-line arguments and environment on `port`; files it needs go under `home`. */
  prepare(port: number, upstream: Upstream, home: string): Promise<Launch>;
}

interface Launch {
  args: string[];
  env: Record<string, string>;
}

/** The emulator the peers call, and the key they present to it. */
export interface Upstream {
  url: string;
  key: string;
}

const PEERS: Record<PeerId, Peer> = {
  portkey: {
    label: "Portkey 1.15.2",
    package: {
      name: "@portkey-ai/gateway",
      version: "1.15.2",
      overrides: { hono: "4.9.7", "@hono/node-server": "1.13.5" },
    },
    entry: "build/start-server.js",
    prepare: (port) =>
      Promise.resolve({
        args: [`--port=${port}`, "--headless"],
        env: { NODE_ENV: "production" },
      }),
  },
  "claude-code-router": {
    label: "claude-code-router 2.0.0",
    package: { name: "@musistudio/claude-code-router", version: "2.0.0" },
    entry: "dist/cli.js",
    async prepare(port, upstream, home) {
      const config = {
        HOST: "127.0.0.1",
        PORT: port,
        APIKEY: CCR_KEY,
        LOG: true,
        LOG_LEVEL: "info",
        Providers: [{
          name: "emulator",
          api_base_url: upstream.url + CCR_UPSTREAM.path,
          api_key: upstream.key,
          models: [CCR_UPSTREAM.model],
        }],
        Router: { default: `emulator,${CCR_UPSTREAM.model}` },
      };
      await Deno.mkdir(`${home}/.claude-code-router`, { recursive: true });
      await Deno.writeTextFile(
        `${home}/.claude-code-router/config.json`,
        JSON.stringify(config, null, 2),
      );
      return { args: ["start"], env: { HOME: home, NODE_ENV: "production" } };
    },
  },
};

/** Every peer, in the order the report lists them. */
export const PEER_IDS = Object.keys(PEERS) as PeerId[];

/** A peer's name as the report prints it. */
export const peerLabel = (id: PeerId): string => PEERS[id].label;

/** A peer that is running. */
export interface RunningPeer {
  id: PeerId;
  label: string;
  server: Server;
}

/** The oldest Node the peers run on (claude-code-router's `engines`). */
const NODE_MAJOR = 20;

/**
 * Installs (if need be) and starts each peer of `ids` against `upstream`, its files under `dir`.
 * A peer that cannot be installed or started is left out, with a note saying why.
 */
export async function startPeers(
  ids: PeerId[],
  upstream: Upstream,
  dir: string,
): Promise<{ peers: RunningPeer[]; notes: string[] }> {
  if (!ids.length) return { peers: [], notes: [] };
  const node = await nodeMajor();
  if (typeof node === "string" || node < NODE_MAJOR) {
    const why = typeof node === "string" ? node : `node ${node} is older than ${NODE_MAJOR}`;
    return { peers: [], notes: ids.map((id) => `${peerLabel(id)} skipped: ${why}`) };
  }
  const peers: RunningPeer[] = [];
  const notes: string[] = [];
  for (const id of ids) {
    try {
      peers.push(await startPeer(id, upstream, dir));
    } catch (error) {
      notes.push(`${peerLabel(id)} skipped: ${(error as Error).message}`);
    }
  }
  return { peers, notes };
}

/** Installs (if need be) and starts one peer; throws when it cannot. */
export async function startPeer(id: PeerId, upstream: Upstream, dir: string): Promise<RunningPeer> {
  const peer = PEERS[id];
  const installed = await installPeer(peer.package);
  const home = `${dir}/${id}-home`;
  await Deno.mkdir(home, { recursive: true });
  const port = freePort();
  const launch = await peer.prepare(port, upstream, home);
  const server = await spawnOnPort({
    command: "node",
    args: [`${installed}/node_modules/${peer.package.name}/${peer.entry}`, ...launch.args],
    cwd: home,
    env: launch.env,
    port,
  }).catch((error) => {
    throw new Error(`it did not start: ${(error as Error).message}`);
  });
  return { id, label: peer.label, server };
}
