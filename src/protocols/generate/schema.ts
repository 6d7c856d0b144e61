/**
 * generateContent request fields the gateway interprets (spec §2.4, §4.5). Parts other than
 * `text` and `inlineData` (`functionCall`, `functionResponse`, `thoughtSignature`, `fileData`…)
 * and every other field pass through.
 */
import * as v from "valibot";

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

export const GenerateRequest = v.looseObject({
  contents: v.pipe(v.array(Content, "must be an array"), v.minLength(1, "must not be empty")),
  systemInstruction: v.optional(v.looseObject({
    parts: v.array(Part, "must be an array of parts"),
  }, "must be an object with parts")),
  generationConfig: v.optional(v.looseObject({
    maxOutputTokens: v.optional(v.pipe(
      v.number("must be an integer"),
      v.integer("must be an integer"),
      v.minValue(1, "must be ≥ 1"),
      v.maxValue(2_147_483_647, "must be at most 2147483647"),
    )),
  }, "must be an object")),
});

export const CountTokensRequest = v.looseObject({
  contents: v.optional(v.array(Content, "must be an array")),
});
