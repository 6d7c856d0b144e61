/**
 * Emulated chat completions (`openai-other.md` §1), as OpenAI, xAI and the OpenAI-compatible
 * surfaces of DeepSeek, Moonshot and Zhipu serve them: `chat.completion` objects, unnamed SSE
 * chunks ending in `data: [DONE]`, a usage chunk with `choices: []` only when
 * `stream_options.include_usage` is true, tool calls when function tools are offered (see
 * `text.ts` for steering them), JSON matching `response_format`'s schema (`json_object`: a small
 * object), and the real API's check that `tool` messages answer exactly the calls of the
 * assistant turn before them. The `local` route is an `openai-compatible` server (vLLM, Ollama)
 * that needs no key and ignores any `Authorization`. Streams play two more upstreams on demand:
 * `[[emulate stream_error=N]]` ends the stream after N chunks with a chunk carrying a top-level
 * `error` (OpenAI's envelope of a rate limit) and no `[DONE]`; `[[emulate finish_usage=1]]` puts
 * the usage on the chunk with the finish reason whether it was asked for or not, as some
 * OpenAI-compatible servers do.
 */
import { encodeSse } from "../http/sse.ts";
import { EMULATED_ORG, openaiError, openaiFault, servedTier, unknownModel } from "./openai.ts";
import {
  answer,
  collectText,
  countTokens,
  type Directives,
  directives,
  exampleValue,
  newId,
  pickTools,
  sleep,
  sseBody,
  tokenize,
  toolArguments,
} from "./text.ts";
import { type CacheContext, openaiCached, openaiSeed, prefixes } from "./prompt_cache.ts";

type Json = Record<string, unknown>;

interface Message {
  role?: string;
  content?: unknown;
  tool_calls?: { id?: unknown }[];
  tool_call_id?: unknown;
}

function lastUserText(messages: Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === "tool") {
      const result = collectText(m.content).join(" ");
      return `the tool returned ${result || "a result"}`;
    }
    if (m.role === "user") return collectText(m.content).join(" ");
  }
  return "";
}

/** A 400 as OpenAI words it for a bad history, naming the message's role. */
function historyError(message: string, index: number): Response {
  return Response.json({
    error: {
      message,
      type: "invalid_request_error",
      param: `messages.[${index}].role`,
      code: null,
    },
  }, { status: 400 });
}

/**
 * Histories the real API rejects: a `tool` message that answers no call of the assistant turn
 * before it, and an assistant turn whose calls are not all answered before the next message.
 */
function invalidHistory(messages: Message[]): Response | undefined {
  let pending: string[] = [];
  let asked = -1;
  const unanswered = () =>
    historyError(
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${
        pending.join(", ")
      }`,
      asked,
    );
  let open = new Set<string>();
  for (const [i, message] of messages.entries()) {
    if (message.role === "tool") {
      const id = String(message.tool_call_id);
      if (!open.has(id)) {
        return historyError(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          i,
        );
      }
      pending = pending.filter((p) => p !== id);
      continue;
    }
    if (pending.length) return unanswered();
    open = new Set();
    if (message.role === "assistant" && Array.isArray(message.tool_calls)) {
      pending = message.tool_calls.map((call) => String(call?.id));
      open = new Set(pending);
      asked = i;
    }
  }
  return pending.length ? unanswered() : undefined;
}

/** The function tools to call, unless the conversation already answered one. */
function functionTools(body: Json, messages: Message[], d: Directives): Json[] {
  const tools = Array.isArray(body.tools) ? body.tools as Json[] : [];
  if (body.tool_choice === "none" || messages.some((m) => m.role === "tool")) return [];
  const functions = tools.flatMap((t) => t.type === "function" ? [t.function as Json] : []);
  const choice = body.tool_choice as Json | undefined;
  const forced = choice?.type === "function"
    ? (choice.function as Json | undefined)?.name as string | undefined
    : undefined;
  return pickTools(functions, (f) => String(f.name), d, {
    forced,
    single: body.parallel_tool_calls === false,
  });
}

/** The answer text: JSON for a structured-output request, else the echo. */
function answerText(body: Json, messages: Message[], d: Directives): string {
  const format = body.response_format as Json | undefined;
  if (format?.type === "json_schema") {
    return JSON.stringify(exampleValue((format.json_schema as Json | undefined)?.schema));
  }
  if (format?.type === "json_object") {
    return JSON.stringify({ answer: answer(lastUserText(messages), d) });
  }
  return answer(lastUserText(messages), d);
}

/** OpenAI's error envelope of a rate limit, as a chat stream's last chunk carries it. */
function streamRateLimit(model: unknown): Json {
  return {
    message:
      `Rate limit reached for ${model} in organization ${EMULATED_ORG} on tokens per min (TPM).`,
    type: "tokens",
    param: null,
    code: "rate_limit_exceeded",
  };
}

/**
 * The tokens OpenAI's cache reads for a chat request (its `prompt_cache_key` and tools, then each
 * message: 3 tokens of structure and its text), at most `total`.
 */
function cachedPrompt(body: Json, messages: Message[], total: number, cache: CacheContext): number {
  const seed = openaiSeed(body);
  const prompt = prefixes(
    seed,
    messages.map((m) => ({
      text: JSON.stringify(m),
      tokens: 3 + countTokens(collectText(m).join(" ")),
    })),
  );
  return openaiCached(cache, String(body.model), body.prompt_cache_retention, prompt, total);
}

/**
 * `POST /v1/chat/completions`; `vendor` is the route's prefix (`openai/v1`, `deepseek/compat`…);
 * `cache`: the prompt cache of the request's key (OpenAI's only).
 */
export async function chatCompletions(
  req: Request,
  groups: Record<string, string | undefined> = {},
  cache?: CacheContext,
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
  const invalid = invalidHistory(messages);
  if (invalid) return invalid;

  const promptTokens = countTokens(texts.join(" ")) + 3 * messages.length;
  // `[[emulate cached=N cache_write=N]]` say what is read and written, else OpenAI's cache does.
  const directed = d.cached !== undefined || d.cacheWrite !== undefined;
  const cached = !directed && cache?.provider === "openai"
    ? cachedPrompt(body, messages, promptTokens, cache)
    : Math.min(d.cached ?? 0, promptTokens);
  const written = Math.min(d.cacheWrite ?? 0, promptTokens - cached);
  const id = newId("chatcmpl-", 30);
  const created = Math.floor(Date.now() / 1000);
  const tools = functionTools(body, messages, d);
  const max = Number(body.max_completion_tokens ?? body.max_tokens ?? Infinity);
  let pieces: string[] = [];
  let finish = "stop";
  const toolCalls = tools.map((tool) => {
    const args = JSON.stringify(toolArguments(tool.parameters, d));
    return {
      id: newId("call_", 24),
      type: "function",
      function: { name: tool.name, arguments: args },
      pieces: tokenize(args),
    };
  });
  if (toolCalls.length) {
    finish = "tool_calls";
    pieces = toolCalls.flatMap((c) => c.pieces);
  } else {
    pieces = tokenize(answerText(body, messages, d));
    if (pieces.length > max) {
      pieces = pieces.slice(0, max);
      finish = "length";
    }
  }
  const usage = {
    prompt_tokens: promptTokens,
    completion_tokens: pieces.length,
    total_tokens: promptTokens + pieces.length,
    // `cache_write_tokens` is newer than the field it sits in: older answers leave it out.
    prompt_tokens_details: {
      cached_tokens: cached,
      audio_tokens: 0,
      ...(written ? { cache_write_tokens: written } : {}),
    },
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
          content: toolCalls.length ? null : text,
          refusal: null,
          annotations: [],
          ...(toolCalls.length
            ? { tool_calls: toolCalls.map(({ pieces: _, ...call }) => call) }
            : {}),
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
  let sent = 0;
  async function* events(): AsyncGenerator<string> {
    for await (const event of answerEvents()) {
      if (d.streamError !== undefined && sent++ >= d.streamError) {
        yield encodeSse(JSON.stringify({ error: streamRateLimit(body.model) }));
        return;
      }
      yield event;
    }
  }
  async function* answerEvents(): AsyncGenerator<string> {
    if (toolCalls.length) {
      yield chunk([choice({ role: "assistant", content: null, refusal: null })]);
      for (const [index, call] of toolCalls.entries()) {
        yield chunk([choice({
          tool_calls: [{
            index,
            id: call.id,
            type: "function",
            function: { name: call.function.name, arguments: "" },
          }],
        })]);
        for (const piece of call.pieces) {
          yield chunk([choice({ tool_calls: [{ index, function: { arguments: piece } }] })]);
        }
      }
    } else {
      yield chunk([choice({ role: "assistant", content: "", refusal: null })]);
      for (const piece of pieces) yield chunk([choice({ content: piece })]);
    }
    yield chunk([choice({}, finish)], d.finishUsage ? { usage } : {});
    if (includeUsage) yield chunk([], { usage });
    yield encodeSse("[DONE]");
  }
  return new Response(sseBody(events, d), {
    headers: { "content-type": "text/event-stream; charset=utf-8" },
  });
}
