/**
 * `POST /v1/messages` fields the gateway interprets. `system` blocks with `cache_control`,
 * `thinking`, `tools`, `context_management`, `output_config`… pass through untouched.
 */
import * as v from "valibot";

const model = v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty"));
const messages = v.array(
  v.looseObject({
    role: v.picklist(["user", "assistant", "system"], "must be user, assistant or system"),
    content: v.union([v.string(), v.array(v.unknown())], "must be a string or an array of blocks"),
  }),
  "must be an array of messages",
);

/** The largest token count a client may ask for (upstreams take 32-bit integers). */
const MAX_TOKENS = 2_147_483_647;

export const MessagesRequest = v.looseObject({
  model,
  max_tokens: v.pipe(
    v.number("must be an integer"),
    v.integer("must be an integer"),
    v.minValue(0, "must be ≥ 0"),
    v.maxValue(MAX_TOKENS, `must be at most ${MAX_TOKENS}`),
  ),
  messages,
  stream: v.optional(v.boolean("must be a boolean")),
  service_tier: v.optional(v.string("must be a string")),
});

export const CountTokensRequest = v.looseObject({ model, messages });
