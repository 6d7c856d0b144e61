/**
 * What the peer gateways' clients and configs name (see `peers.ts`): the headers that route a
 * Portkey request, claude-code-router's key and upstream. Free of side effects, so that the
 * scenarios (and the floor proxy, which imports them) do not load the peers' launcher.
 */

/** The peers by name. */
export type PeerId = "portkey" | "claude-code-router";

/** The key claude-code-router's clients present (its `APIKEY`). */
export const CCR_KEY = "ccr-bench-key";

/** claude-code-router's upstream: the emulator's OpenAI chat completions, and the model. */
export const CCR_UPSTREAM = { path: "/openai/v1/chat/completions", model: "gpt-5.4" };

/** The emulator's base URL of each provider Portkey is sent to. */
const PORTKEY_BASES = { openai: "/openai/v1", anthropic: "/anthropic/v1" };

/**
 * The headers that send a Portkey request to `provider` on the emulator: Portkey adds the
 * endpoint (`/chat/completions`, `/messages`) to the custom host.
 */
export function portkeyRoute(
  provider: keyof typeof PORTKEY_BASES,
  emulatorUrl: string,
): Record<string, string> {
  return {
    "x-portkey-provider": provider,
    "x-portkey-custom-host": emulatorUrl + PORTKEY_BASES[provider],
  };
}
