/**
 * `POST /v1/responses` request fields the gateway interprets (spec §4.2). Everything else —
 * tools, include, reasoning, prompt_cache_key, client_metadata… — passes through untouched.
 */
import * as v from "valibot";
import { tokenCount } from "../../http/validate.ts";

/** A Responses request, as far as the gateway reads it. */
export const ResponsesRequest = v.looseObject({
  model: v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty")),
  input: v.union(
    [v.string(), v.array(v.unknown())],
    "must be a string or an array of input items",
  ),
  instructions: v.optional(v.nullable(v.string("must be a string"))),
  max_output_tokens: v.optional(v.nullable(tokenCount(16))),
  stream: v.optional(v.nullable(v.boolean("must be a boolean"))),
  service_tier: v.optional(v.nullable(v.string("must be a string"))),
  background: v.optional(v.nullable(v.boolean("must be a boolean"))),
  max_tool_calls: v.optional(v.nullable(tokenCount(0, 10_000))),
  previous_response_id: v.optional(v.nullable(v.pipe(
    v.string("must be a string"),
    v.maxLength(256, "must be at most 256 characters"),
  ))),
});
