/**
 * `POST /v1/chat/completions` request fields the gateway interprets (`openai-other.md` §1.1).
 * Everything else — tools, response_format, reasoning_effort, audio… — passes through untouched.
 */
import * as v from "valibot";
import { tokenCount } from "../../http/validate.ts";

const positiveInt = tokenCount(1);

/** A chat-completions request, as far as the gateway reads it. */
export const ChatRequest = v.looseObject({
  model: v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty")),
  messages: v.pipe(
    v.array(
      v.looseObject({ role: v.string("must be a string") }, "must be a message object"),
      "must be an array of messages",
    ),
    v.minLength(1, "must contain at least one message"),
  ),
  stream: v.optional(v.nullable(v.boolean("must be a boolean"))),
  stream_options: v.optional(v.nullable(v.looseObject({
    include_usage: v.optional(v.nullable(v.boolean("must be a boolean"))),
  }, "must be an object"))),
  max_completion_tokens: v.optional(v.nullable(positiveInt)),
  max_tokens: v.optional(v.nullable(positiveInt)),
  n: v.optional(v.nullable(v.pipe(positiveInt, v.maxValue(128, "must be at most 128")))),
  service_tier: v.optional(v.nullable(v.string("must be a string"))),
});
/** A validated chat-completions request. */
export type ChatRequest = v.InferOutput<typeof ChatRequest>;
