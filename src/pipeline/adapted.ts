/**
 * Adaptations made visible (see `translate/adaptations.ts`): a translated call's answer carries
 * the kinds it was adapted by in the `x-switchyard-adapted` header, its access-log line in
 * `adapted`, and the metrics count them; in strict mode — the key's setting, or the request's
 * `x-switchyard-strict: true` — an adaptation is refused instead (a 400, before anything is held).
 */
import type { RequestContext } from "../context.ts";
import { GatewayError } from "../http/errors.ts";
import { ADAPTED_CALLS, metrics } from "../metrics/gateway.ts";
import type { Adaptation, AdaptationKind } from "../translate/adaptations.ts";
import { kindsOf, refusal } from "../translate/adaptations.ts";
import type { ProtocolId } from "../translate/ir.ts";
import type { StepOf } from "./call.ts";

/** The response header listing the kinds a call was adapted by. */
export const ADAPTED_HEADER = "x-switchyard-adapted";

/** The request header that asks for strict mode. */
export const STRICT_HEADER = "x-switchyard-strict";

/**
 * Whether the request refuses adaptations: its key is strict, or it asks with `true` (`false`
 * leaves the key's setting; anything else is a 400).
 */
export function strictMode(ctx: RequestContext): boolean {
  const asked = ctx.req.headers.get(STRICT_HEADER)?.trim().toLowerCase();
  if (asked !== undefined && asked !== "true" && asked !== "false") {
    throw new GatewayError(400, `The ${STRICT_HEADER} header must be true or false.`, {
      param: STRICT_HEADER,
      code: "invalid_value",
    });
  }
  return ctx.principal?.strict === true || asked === "true";
}

/**
 * The kinds of a translation's `adaptations`, or in strict mode the 400 of its first one
 * (naming the client's field) when there is any.
 */
export function adaptedOrRefused(
  adaptations: readonly Adaptation[],
  strict: boolean,
  target: ProtocolId,
): AdaptationKind[] {
  if (strict && adaptations.length) throw refusal(adaptations[0], target);
  return kindsOf(adaptations);
}

/**
 * The adaptations step: as the answer of an adapted call begins, its kinds go in the response
 * header and the access log, and each is counted once.
 */
export const adaptedStep: StepOf = ({ call }) => {
  const kinds = call.translate?.adapted;
  if (!kinds?.length) return undefined;
  return {
    before() {
      const { ctx } = call;
      ctx.headers = { ...ctx.headers, [ADAPTED_HEADER]: kinds.join(",") };
      ctx.log.adapted = kinds;
      for (const kind of kinds) metrics.add(ADAPTED_CALLS, [kind]);
    },
  };
};
