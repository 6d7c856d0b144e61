/**
 * `POST /v1/chat/completions` (legacy chat, `openai-other.md` §1): passed through to OpenAI, xAI
 * and the OpenAI-compatible surfaces of DeepSeek, Moonshot and Zhipu. Streams always ask the
 * upstream for usage (`stream_options.include_usage`), so every stream can be billed; when the
 * client did not ask, the usage chunk is taken out again on the way back.
 */
import type { Handler } from "../../context.ts";
import { readJsonObject } from "../../http/body.ts";
import { validate } from "../../http/validate.ts";
import { estimateInput } from "../../billing/estimate.ts";
import { chatMeter, chatUsage } from "../../billing/usage.ts";
import { passThrough, withUpstreamModel } from "../../pipeline/passthrough.ts";
import { resolveModel } from "../../pipeline/resolve.ts";
import { ChatRequest } from "./schema.ts";
import { streamErrorChunk, withoutUsage } from "./stream.ts";
import { capField, chatToolUses, DEFAULT_SEARCH_RESULTS } from "./metering.ts";

export const createChatCompletion: Handler = async (ctx) => {
  const body = await readJsonObject(ctx.req, ctx.services.config);
  const request = validate(ChatRequest, body.value);
  const model = resolveModel(ctx, request.model, "chat");
  const stream = request.stream === true;
  const clientWantsUsage = request.stream_options?.include_usage === true;
  const tools = chatToolUses(body.value);
  const webSearch = tools.some((use) => use.tools.includes("web_search"));
  const field = capField(body.value, model.provider.type === "openai");
  return await passThrough({
    ctx,
    format: "openai",
    endpoint: "chat",
    model,
    tokens: {
      input: estimateInput(body.value),
      requestedCap: request.max_completion_tokens ?? request.max_tokens ?? undefined,
      output: true,
      minCap: 1,
      choices: request.n ?? 1,
      serviceTier: request.service_tier ?? undefined,
      tierField: "service_tier",
      tools,
    },
    stream,
    call: (cap) => {
      const patch: Record<string, unknown> = {};
      if (cap !== undefined) patch[field] = cap;
      if (stream && !clientWantsUsage) {
        patch.stream_options = { ...request.stream_options, include_usage: true };
      }
      const live = body.value.search_parameters as Record<string, unknown> | undefined;
      if (tools.some((use) => use.field === "search_parameters") && !live?.max_search_results) {
        patch.search_parameters = { ...live, max_search_results: DEFAULT_SEARCH_RESULTS };
      }
      return {
        path: "/chat/completions",
        body: withUpstreamModel(body, model, Object.keys(patch).length ? patch : undefined),
        surface: model.provider.type === "anthropic" ? "openai-compatible" : undefined,
      };
    },
    usageFromJson: (json) => chatUsage(json, webSearch),
    meter: () => chatMeter(webSearch),
    rewrite: stream && !clientWantsUsage ? withoutUsage : undefined,
    errorTail: streamErrorChunk,
  });
};
