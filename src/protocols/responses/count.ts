/**
 * Responses token counting (`/v1/responses/input_tokens`, `openai-responses.md` §7): the route's
 * request (`model` optional: without one, an estimate) and answer, and OpenAI's endpoint (xAI has
 * none).
 */
import * as v from "valibot";
import { validate } from "../../http/validate.ts";
import { withUpstreamModel } from "../../http/forwarded_body.ts";
import type { CountClient, CountUpstream } from "../wire.ts";
import { responsesState } from "./state.ts";

/** An `input_tokens` request (`model` optional: without one, an estimate). */
export const InputTokensRequest = v.looseObject({
  model: v.optional(v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty"))),
  input: v.optional(v.union(
    [v.string(), v.array(v.unknown())],
    "must be a string or an array of input items",
  )),
  instructions: v.optional(v.nullable(v.string("must be a string"))),
});

/** The fields `input_tokens` takes of a Responses request. */
const COUNTED = [
  "model",
  "input",
  "instructions",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "reasoning",
  "text",
];

/** `/v1/responses/input_tokens` on the client's side. */
export const responsesCountClient: CountClient = {
  accept(_input, body) {
    return { model: validate(InputTokensRequest, body).model };
  },
  request: (body) => ({ input: [], ...body }),
  counted: ["instructions", "input", "tools"],
  answer: (tokens) => ({ object: "response.input_tokens", input_tokens: tokens }),
  passBody(input, body, model) {
    // Counting another account's conversation would tell its size.
    responsesState(input, body.value);
    return withUpstreamModel(body, model);
  },
};

/** OpenAI's `input_tokens` endpoint upstream (xAI has none). */
export const responsesCountUpstream: CountUpstream = {
  target: (model) =>
    model.provider.type === "openai" ? { path: "/responses/input_tokens" } : undefined,
  fromRequest(encoded) {
    return Object.fromEntries(
      Object.entries(encoded).filter(([key]) => COUNTED.includes(key)),
    );
  },
  read: (answer) => typeof answer.input_tokens === "number" ? answer.input_tokens : undefined,
};
