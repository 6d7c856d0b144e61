/**
 * Messages token counting (`/v1/messages/count_tokens`, `anthropic-messages.md`): the route's
 * request and answer, and the upstream endpoint — absent on the Anthropic-compatible vendors that
 * have none. The client's `anthropic-version`/`anthropic-beta` are forwarded.
 */
import { validate } from "../../http/validate.ts";
import { withUpstreamModel } from "../../http/forwarded_body.ts";
import type { CountClient, CountUpstream } from "../wire.ts";
import { anthropicCountsTokens } from "../../providers/anthropic.ts";
import { CountTokensRequest } from "./schema.ts";

/** The fields `count_tokens` takes of a Messages request. */
const COUNTED = ["model", "messages", "system", "tools", "tool_choice", "thinking"];

/** `/v1/messages/count_tokens` on the client's side: `{input_tokens}` back. */
export const messagesCountClient: CountClient = {
  accept(_input, body) {
    return { model: validate(CountTokensRequest, body).model };
  },
  // A counting body has no `max_tokens`; the request it stands for needs one.
  request: (body) => ({ max_tokens: 1, ...body }),
  counted: ["system", "messages", "tools"],
  answer: (tokens) => ({ input_tokens: tokens }),
  passBody: (_input, body, model) => withUpstreamModel(body, model),
};

/** Anthropic's counting endpoint upstream (none on the compatible vendors). */
export const messagesCountUpstream: CountUpstream = {
  target(model, input) {
    if (!anthropicCountsTokens(model.provider)) return undefined;
    const headers: Record<string, string> = {};
    for (const name of ["anthropic-version", "anthropic-beta"]) {
      const value = input.headers.get(name);
      if (value) headers[name] = value;
    }
    return { path: "/v1/messages/count_tokens", headers };
  },
  fromRequest(encoded) {
    return Object.fromEntries(
      Object.entries(encoded).filter(([key]) => COUNTED.includes(key)),
    );
  },
  read: (answer) => typeof answer.input_tokens === "number" ? answer.input_tokens : undefined,
};
