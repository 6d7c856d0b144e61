/**
 * Emulated chat completions (`openai-other.md` §1), as OpenAI, xAI and the OpenAI-compatible
 * surfaces of DeepSeek, Moonshot and Zhipu serve them: `chat.completion` objects, unnamed SSE
 * chunks ending in `data: [DONE]`, a usage chunk with `choices: []` only when
 * `stream_options.include_usage` is true, and tool calls when function tools are offered.
 */
import { encodeSse } from "../http/sse.ts";
import { openaiError, openaiFault, servedTier, unknownModel } from "./openai.ts";
import {
  answer,
  collectText,
  countTokens,
  directives,
  exampleValue,
  newId,
  sleep,
  sseBody,
  tokenize,
} from "./text.ts";

type Json = Record<string, unknown>;

interface Message {
  role?: string;
  content?: unknown;
}

function lastUserText(messages: Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === "tool") {
      return `the tool returned ${typeof m.content === "string" ? m.content : "a result"}`;
    }
    if (m.role === "user") return collectText(m.content).join(" ");
  }
  return "";
}

/** The function tool to call, unless the conversation already answered one. */
function functionTool(body: Json, messages: Message[]): Json | undefined {
  const tools = Array.isArray(body.tools) ? body.tools as Json[] : [];
  if (body.tool_choice === "none" || messages.some((m) => m.role === "tool")) return undefined;
  return tools.find((t) => t.type === "function")?.function as Json | undefined;
}

/** `POST /v1/chat/completions`; `vendor` is the route's prefix (`openai/v1`, `deepseek/compat`…). */
export async function chatCompletions(
  req: Request,
  groups: Record<string, string | undefined> = {},
): Promise<Response> {
  const body = await req.json() as Json;
  const messages = Array.isArray(body.messages) ? body.messages as Message[] : [];
  const texts = collectText(messages);
  const d = directives(texts);
  await sleep(d.wait);
  const fault = openaiFault(d, body.model);
  if (fault) return fault;
  if (typeof body.model !== "string") return openaiError(400, "you must provide a model parameter");
  const unknown = /^(openai|xai)\//.test(groups.vendor ?? "")
    ? unknownModel(body.model)
    : undefined;
  if (unknown) return unknown;
  if (messages.length === 0) {
    return openaiError(
      400,
      "Invalid 'messages': empty array. Expected an array with minimum length 1.",
    );
  }

  const promptTokens = countTokens(texts.join(" ")) + 3 * messages.length;
  const cached = Math.min(d.cached ?? 0, promptTokens);
  const id = newId("chatcmpl-", 30);
  const created = Math.floor(Date.now() / 1000);
  const tool = functionTool(body, messages);
  const max = Number(body.max_completion_tokens ?? body.max_tokens ?? Infinity);
  let pieces: string[];
  let finish = "stop";
  let toolCall: Json | undefined;
  if (tool) {
    const args = JSON.stringify(exampleValue(tool.parameters));
    pieces = tokenize(args);
    finish = "tool_calls";
    toolCall = {
      id: newId("call_", 24),
      type: "function",
      function: { name: tool.name, arguments: args },
    };
  } else {
    pieces = tokenize(answer(lastUserText(messages), d));
    if (pieces.length > max) {
      pieces = pieces.slice(0, max);
      finish = "length";
    }
  }
  const usage = {
    prompt_tokens: promptTokens,
    completion_tokens: pieces.length,
    total_tokens: promptTokens + pieces.length,
    prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
  const common = {
    id,
    created,
    model: body.model,
    service_tier: servedTier(body.service_tier),
    system_fingerprint: "fp_emulator",
  };

  if (body.stream !== true) {
    const text = pieces.join("");
    return Response.json({
      ...common,
      object: "chat.completion",
      choices: [{
        index: 0,
        finish_reason: finish,
        logprobs: null,
        message: {
          role: "assistant",
          content: toolCall ? null : text,
          refusal: null,
          annotations: [],
          ...(toolCall ? { tool_calls: [toolCall] } : {}),
        },
      }],
      usage,
    });
  }

  const includeUsage = (body.stream_options as Json | undefined)?.include_usage === true;
  const chunk = (choices: Json[], extra: Json = {}) =>
    encodeSse(JSON.stringify({
      ...common,
      object: "chat.completion.chunk",
      choices,
      ...(includeUsage ? { usage: null } : {}),
      ...extra,
    }));
  const choice = (delta: Json, finishReason: string | null = null) => ({
    index: 0,
    delta,
    logprobs: null,
    finish_reason: finishReason,
  });
  async function* events(): AsyncGenerator<string> {
    if (toolCall) {
      const fn = toolCall.function as Json;
      yield chunk([choice({
        role: "assistant",
        content: null,
        tool_calls: [{
          index: 0,
          id: toolCall.id,
          type: "function",
          function: { name: fn.name, arguments: "" },
        }],
        refusal: null,
      })]);
      for (const piece of pieces) {
        yield chunk([choice({ tool_calls: [{ index: 0, function: { arguments: piece } }] })]);
      }
    } else {
      yield chunk([choice({ role: "assistant", content: "", refusal: null })]);
      for (const piece of pieces) yield chunk([choice({ content: piece })]);
    }
    yield chunk([choice({}, finish)]);
    if (includeUsage) yield chunk([], { usage });
    yield encodeSse("[DONE]");
  }
  return new Response(sseBody(events, d), {
    headers: { "content-type": "text/event-stream; charset=utf-8" },
  });
}
