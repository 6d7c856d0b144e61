/**
 * Demo mode (`serve --emulate`): the built-in provider emulator runs inside the process and every
 * built-in provider is pointed at it, so that every endpoint can be tried with no upstream key and
 * nothing real is called.
 */
import type { Overrides } from "../config/load.ts";

/** The upstream key the emulator takes in demo mode (not a secret: nothing real is behind it). */
const DEMO_KEY = "switchyard-demo";

/** A running demo emulator and the provider overrides that point at it. */
export interface Demo {
  url: string;
  providers: NonNullable<Overrides["providers"]>;
}

/** Starts the emulator on a free loopback port (its modules are loaded only then). */
export async function startDemo(): Promise<Demo> {
  const { PROVIDER_PREFIXES, startEmulator } = await import("../emulator/server.ts");
  const server = startEmulator({ hostname: "127.0.0.1", port: 0, requiredKey: DEMO_KEY });
  const url = `http://127.0.0.1:${server.addr.port}`;
  const providers: Demo["providers"] = {};
  for (const [name, at] of Object.entries(PROVIDER_PREFIXES)) {
    providers[name] = {
      baseUrl: url + at.baseUrl,
      ...(at.chatBaseUrl ? { chatBaseUrl: url + at.chatBaseUrl } : {}),
      apiKey: DEMO_KEY,
    };
  }
  return { url, providers };
}
