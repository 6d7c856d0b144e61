/**
 * `POST /v1/chat/completions` (legacy chat, `openai-other.md` §1): passed through to OpenAI, xAI
 * and the OpenAI-compatible surfaces of DeepSeek, Moonshot and Zhipu. Streams always ask the
 * upstream for usage (`stream_options.include_usage`), so every stream can be billed; when the
 * client did not ask, the usage chunk is taken out again on the way back.
 */
import type { Handler } from "../../context.ts";
import { readJsonObject } from "../../http/body.ts";
import { validate } from "../../http/validate.ts";
import { chatMeter, openaiUsage } from "../../billing/usage.ts";
import { passThrough, withUpstreamModel } from "../../pipeline/passthrough.ts";
import { resolveModel } from "../../pipeline/resolve.ts";
import { ChatRequest } from "./schema.ts";
import { streamErrorChunk, withoutUsage } from "./stream.ts";

export const createChatCompletion: Handler = async (ctx) => {
  const body = await readJsonObject(ctx.req, ctx.services.config.maxBodyBytes);
  const request = validate(ChatRequest, body.value);
  const model = resolveModel(ctx, request.model, "chat");
  const stream = request.stream === true;
  const clientWantsUsage = request.stream_options?.include_usage === true;
  const upstreamBody = stream && !clientWantsUsage
    ? JSON.stringify({
      ...body.value,
      model: model.upstreamId,
      stream_options: { ...request.stream_options, include_usage: true },
    })
    : withUpstreamModel(body, model);
  const cap = request.max_completion_tokens ?? request.max_tokens;
  return await passThrough({
    ctx,
    format: "openai",
    endpoint: "chat",
    model,
    inputChars: body.text.length,
    maxOutputTokens: cap ? cap * (request.n ?? 1) : undefined,
    stream,
    call: {
      path: "/chat/completions",
      body: upstreamBody,
      surface: model.provider.type === "anthropic" ? "openai-compatible" : undefined,
    },
    usageFromJson: (json) => openaiUsage((json as { usage?: unknown }).usage),
    meter: chatMeter,
    rewrite: stream && !clientWantsUsage ? withoutUsage : undefined,
    errorTail: streamErrorChunk,
  });
};
