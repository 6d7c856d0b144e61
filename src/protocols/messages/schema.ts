/**
 * `POST /v1/messages` fields the gateway interprets. `system` blocks with `cache_control`,
 * `thinking`, `tools`, `context_management`, `output_config`… pass through untouched.
 */
import * as v from "valibot";
import { tokenCount } from "../../http/validate.ts";
import { ThreadField } from "./thread.ts";

const model = v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty"));
const messages = v.array(
  v.looseObject({
    role: v.picklist(["user", "assistant", "system"], "must be user, assistant or system"),
    content: v.union([v.string(), v.array(v.unknown())], "must be a string or an array of blocks"),
  }),
  "must be an array of messages",
);

/** A Messages request, as far as the gateway reads it. */
export const MessagesRequest = v.looseObject({
  model,
  max_tokens: tokenCount(0),
  messages,
  stream: v.optional(v.boolean("must be a boolean")),
  service_tier: v.optional(v.string("must be a string")),
  thread: ThreadField,
});

/** A `count_tokens` request: the model and the messages. */
export const CountTokensRequest = v.looseObject({ model, messages });
