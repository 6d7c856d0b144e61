/**
 * Upstream state — stored responses, containers, conversations, cached contents — lives under the
 * operator's one upstream key, so one account must never reach another's. The ids the gateway
 * sees in an account's answers are recorded here as that account's; a request naming any other id
 * is refused as not found (the rule is `callInput`'s, in `named_state.ts`; what each protocol's
 * requests name is its own, e.g. `protocols/responses/state.ts`).
 */
import type { RequestContext } from "../context.ts";
import { log } from "../log.ts";
import { MAX_ID } from "./named_state.ts";

export type { CreatedObject } from "../billing/usage.ts";
import type { CreatedObject } from "../billing/usage.ts";

/** Records the objects an account's answer created (`contextTokens` for responses). */
export function rememberObjects(
  ctx: RequestContext,
  objects: CreatedObject[],
  contextTokens: number,
  provider: string,
): void {
  const accountId = ctx.principal!.accountId;
  for (const { id, kind } of objects) {
    if (id.length > MAX_ID) continue;
    ctx.services.store.recordObject({ id, accountId, kind, contextTokens, provider }).catch((
      error,
    ) =>
      log("warn", "upstream object not recorded", {
        request_id: ctx.requestId,
        error: String(error),
      })
    );
  }
}
