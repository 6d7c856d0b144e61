/**
 * generateContent request fields the gateway interprets (spec §2.4, §4.5). Parts other than
 * `text` and `inlineData` (`functionCall`, `functionResponse`, `thoughtSignature`, `fileData`…)
 * and every other field pass through.
 */
import * as v from "valibot";
import { tokenCount } from "../../http/validate.ts";

const Part = v.looseObject({
  text: v.optional(v.string("must be a string")),
  inlineData: v.optional(v.looseObject({
    mimeType: v.string("must be a string"),
    data: v.string("must be a base64 string"),
  }, "must be an object with mimeType and data")),
});

const Content = v.looseObject({
  role: v.optional(v.picklist(["user", "model"], "must be user or model")),
  parts: v.array(Part, "must be an array of parts"),
});

/** The output cap and answer count, in either spelling (the API accepts snake_case too). */
const GenerationConfig = v.looseObject({
  maxOutputTokens: v.optional(tokenCount(1)),
  max_output_tokens: v.optional(tokenCount(1)),
  candidateCount: v.optional(tokenCount(1, 8)),
  candidate_count: v.optional(tokenCount(1, 8)),
}, "must be an object");

/** A generateContent request, as far as the gateway reads it. */
export const GenerateRequest = v.looseObject({
  contents: v.pipe(v.array(Content, "must be an array"), v.minLength(1, "must not be empty")),
  systemInstruction: v.optional(v.looseObject({
    parts: v.array(Part, "must be an array of parts"),
  }, "must be an object with parts")),
  generationConfig: v.optional(GenerationConfig),
  generation_config: v.optional(GenerationConfig),
});

/** A `:countTokens` request: bare `contents` (or a whole `generateContentRequest`). */
export const CountTokensRequest = v.looseObject({
  contents: v.optional(v.array(Content, "must be an array")),
});
