/**
 * The plan for a call (pure): the client's route decides the wire format the client sees, the
 * model's provider decides the one sent upstream. A provider that speaks the client's protocol
 * gets the call as it is (the identity plan: bytes pass through); any other gets it translated
 * into the first protocol it speaks.
 */
import type { ProtocolId } from "./ir.ts";

/** How a call is made: passed through, translated, or refused (no protocol in common). */
export type Plan =
  | { kind: "passthrough"; protocol: ProtocolId }
  | { kind: "translate"; from: ProtocolId; to: ProtocolId }
  | { kind: "refuse" };

/** The plan for a client of `client` calling a provider that speaks `upstream` (preferred first). */
export function planCall(client: ProtocolId, upstream: readonly ProtocolId[]): Plan {
  if (upstream.includes(client)) return { kind: "passthrough", protocol: client };
  if (!upstream.length) return { kind: "refuse" };
  return { kind: "translate", from: client, to: upstream[0] };
}
