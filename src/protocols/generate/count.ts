/**
 * generateContent token counting (`:countTokens`, `gemini.md`): the route's request — bare
 * `contents`, or a whole `generateContentRequest` — and answer, and the upstream endpoint.
 */
import { validate } from "../../http/validate.ts";
import { forwardedBody } from "../../http/forwarded_body.ts";
import { isObject } from "../../http/json.ts";
import type { CountClient, CountUpstream } from "../wire.ts";
import { pathModel } from "../../http/path_model.ts";
import { CountTokensRequest } from "./schema.ts";

/** `:countTokens` on the client's side: the model from the path, `{totalTokens}` back. */
export const generateCountClient: CountClient = {
  accept(input, body) {
    validate(CountTokensRequest, body);
    return { model: pathModel(input.params) };
  },
  request(body) {
    const whole = body.generateContentRequest ?? body.generate_content_request;
    return isObject(whole) ? whole : { contents: body.contents ?? [] };
  },
  counted: ["contents", "systemInstruction", "tools"],
  answer: (tokens) => ({ totalTokens: tokens }),
  passBody: (_input, body) => forwardedBody(body),
};

/** Gemini's `:countTokens` upstream: a whole `generateContentRequest` counted. */
export const generateCountUpstream: CountUpstream = {
  target: (model) => ({
    path: `/v1beta/models/${encodeURIComponent(model.upstreamId)}:countTokens`,
  }),
  fromRequest: (encoded, model) => ({
    generateContentRequest: { model: `models/${model.upstreamId}`, ...encoded },
  }),
  read: (answer) => typeof answer.totalTokens === "number" ? answer.totalTokens : undefined,
};
