/**
 * Chat completions ⇄ canonical, for requests and whole answers (pure; `openai-other.md` §1,
 * `translation.md`). Policies where the formats differ:
 * - leading system/developer messages are the system prompt; later ones stay in place as system
 *   messages (the Messages and Gemini encoders hoist them);
 * - consecutive `tool` messages are one turn of results; a result's error flag is written as an
 *   `Error: ` prefix (chat has no flag);
 * - reasoning has no slot in chat: vendors' `reasoning_content` is read, reasoning is never sent
 *   upstream, and opaque provider state (signatures, encrypted reasoning) does not survive a chat
 *   client's round trip (the Messages and Gemini encoders cope with its absence);
 * - the output cap is `max_completion_tokens` for OpenAI itself, `max_tokens` for every other
 *   server (vLLM, Ollama, llama.cpp and most vendors read only that one); `top_k` has no field and
 *   is not sent;
 * - hosted tools cannot run on a chat upstream: they are refused by the client's field name.
 */
import type { AnswerInfo, RouteInfo, Target } from "../../translate/codec.ts";
import type {
  AssistantPart,
  CanonicalRequest,
  CanonicalResponse,
  FilePart,
  FunctionTool,
  HostedTool,
  Json,
  Message,
  TextPart,
  TokenUsage,
  ToolChoice,
  ToolResultPart,
} from "../../translate/ir.ts";
import { fromChat, toChat } from "../../translate/finish.ts";
import { effortFor, readEffort } from "../../translate/reasoning.ts";
import { parseArguments, stringifyArguments } from "../../translate/tool_ids.ts";
import {
  inexpressible,
  invalid,
  isObject,
  list,
  object,
  optionalNumber,
  optionalString,
  splitDataUrl,
  stopList,
  string,
} from "../../translate/read.ts";

const PROTOCOL = "chat completions";

/** The schema of a free-form tool's one string input. */
export const CUSTOM_INPUT = {
  type: "object",
  properties: { input: { type: "string" } },
  required: ["input"],
};

const AUDIO_TYPES: Record<string, string> = { wav: "audio/wav", mp3: "audio/mpeg" };

// ---------------------------------------------------------------------------------------------
// Client request → canonical

function textOfParts(content: unknown, field: string): string {
  if (typeof content === "string") return content;
  return list(content, field).map((raw, i) => {
    const part = object(raw, `${field}[${i}]`);
    if (part.type === "text") return string(part.text, `${field}[${i}].text`);
    if (part.type === "refusal") return string(part.refusal, `${field}[${i}].refusal`);
    throw invalid(`${field}[${i}].type`, "must be text here");
  }).join("");
}

function userParts(content: unknown, field: string): (TextPart | FilePart)[] {
  if (typeof content === "string") return content ? [{ type: "text", text: content }] : [];
  return list(content, field).flatMap((raw, i): (TextPart | FilePart)[] => {
    const at = `${field}[${i}]`;
    const part = object(raw, at);
    switch (part.type) {
      case "text": {
        const text = string(part.text, `${at}.text`);
        return text ? [{ type: "text", text }] : [];
      }
      case "image_url": {
        const image = object(part.image_url, `${at}.image_url`);
        const url = string(image.url, `${at}.image_url.url`);
        const detail = typeof image.detail === "string" ? { detail: image.detail } : {};
        const data = splitDataUrl(url);
        return [
          data
            ? { type: "file", mediaType: data.mediaType, data: { base64: data.base64 }, ...detail }
            : { type: "file", mediaType: "image/*", data: { url }, ...detail },
        ];
      }
      case "input_audio": {
        const audio = object(part.input_audio, `${at}.input_audio`);
        const format = string(audio.format, `${at}.input_audio.format`);
        return [{
          type: "file",
          mediaType: AUDIO_TYPES[format] ?? `audio/${format}`,
          data: { base64: string(audio.data, `${at}.input_audio.data`) },
        }];
      }
      case "file": {
        const file = object(part.file, `${at}.file`);
        if (file.file_id !== undefined) {
          throw inexpressible(`${at}.file.file_id`, "a file id", "another protocol");
        }
        const data = splitDataUrl(string(file.file_data, `${at}.file.file_data`));
        if (!data) throw invalid(`${at}.file.file_data`, "must be a base64 data URL");
        return [{
          type: "file",
          mediaType: data.mediaType,
          data: { base64: data.base64 },
          ...(typeof file.filename === "string" ? { filename: file.filename } : {}),
        }];
      }
      default:
        throw invalid(`${at}.type`, "must be text, image_url, input_audio or file");
    }
  });
}

function assistantParts(message: Json, at: string): AssistantPart[] {
  const parts: AssistantPart[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === "string" && reasoning) {
    parts.push({ type: "reasoning", text: reasoning });
  }
  if (message.content !== undefined && message.content !== null) {
    const text = textOfParts(message.content, `${at}.content`);
    if (text) parts.push({ type: "text", text });
  }
  if (message.function_call !== undefined && message.function_call !== null) {
    throw invalid(`${at}.function_call`, "is deprecated; use tool_calls");
  }
  list(message.tool_calls, `${at}.tool_calls`).forEach((raw, i) => {
    const field = `${at}.tool_calls[${i}]`;
    const call = object(raw, field);
    const id = string(call.id, `${field}.id`);
    if (call.type === "custom") {
      const custom = object(call.custom, `${field}.custom`);
      parts.push({
        type: "tool-call",
        id,
        name: string(custom.name, `${field}.custom.name`),
        input: { input: string(custom.input, `${field}.custom.input`) },
        kind: "custom",
      });
      return;
    }
    const fn = object(call.function, `${field}.function`);
    parts.push({
      type: "tool-call",
      id,
      name: string(fn.name, `${field}.function.name`),
      input: parseArguments(fn.arguments),
    });
  });
  return parts;
}

function decodeTools(body: Json): { tools: FunctionTool[]; hosted: HostedTool[] } {
  const tools: FunctionTool[] = [];
  const hosted: HostedTool[] = [];
  list(body.tools, "tools").forEach((raw, i) => {
    const at = `tools[${i}]`;
    const tool = object(raw, at);
    if (tool.type === "function") {
      const fn = object(tool.function, `${at}.function`);
      tools.push({
        name: string(fn.name, `${at}.function.name`),
        ...(typeof fn.description === "string" ? { description: fn.description } : {}),
        parameters: isObject(fn.parameters) ? fn.parameters : { type: "object", properties: {} },
        ...(typeof fn.strict === "boolean" ? { strict: fn.strict } : {}),
      });
    } else if (tool.type === "custom") {
      const custom = object(tool.custom, `${at}.custom`);
      tools.push({
        name: string(custom.name, `${at}.custom.name`),
        ...(typeof custom.description === "string" ? { description: custom.description } : {}),
        parameters: CUSTOM_INPUT,
        kind: "custom",
      });
    } else {
      throw invalid(`${at}.type`, "must be function or custom");
    }
  });
  if (body.web_search_options !== undefined && body.web_search_options !== null) {
    hosted.push({ type: "web_search", field: "web_search_options" });
  }
  if (body.search_parameters !== undefined && body.search_parameters !== null) {
    hosted.push({ type: "other", field: "search_parameters", name: "live search" });
  }
  return { tools, hosted };
}

function decodeChoice(value: unknown): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === "auto" || value === "none" || value === "required") return { type: value };
  const choice = object(value, "tool_choice");
  if (choice.type === "function") {
    const fn = object(choice.function, "tool_choice.function");
    return { type: "tool", name: string(fn.name, "tool_choice.function.name") };
  }
  if (choice.type === "custom") {
    const custom = object(choice.custom, "tool_choice.custom");
    return { type: "tool", name: string(custom.name, "tool_choice.custom.name") };
  }
  if (choice.type === "allowed_tools") {
    throw inexpressible("tool_choice", "an `allowed_tools` choice", "another protocol");
  }
  throw invalid("tool_choice", "must be auto, none, required or name a function");
}

/** A chat request (validated by `schema.ts`) as canonical. */
export function decodeRequest(body: Json, _route: RouteInfo): CanonicalRequest {
  for (const field of ["audio", "prediction", "top_logprobs"]) {
    if (body[field] !== undefined && body[field] !== null) {
      throw inexpressible(field, `\`${field}\``, "another protocol");
    }
  }
  if (body.logprobs === true) {
    throw inexpressible("logprobs", "log probabilities", "another protocol");
  }
  if (Array.isArray(body.modalities) && body.modalities.some((m) => m !== "text")) {
    throw inexpressible("modalities", "output other than text", "another protocol");
  }
  const system: TextPart[] = [];
  const messages: Message[] = [];
  list(body.messages, "messages").forEach((raw, i) => {
    const at = `messages[${i}]`;
    const message = object(raw, at);
    switch (message.role) {
      case "system":
      case "developer": {
        const text = textOfParts(message.content, `${at}.content`);
        if (!text) return;
        if (messages.length) messages.push({ role: "system", content: [{ type: "text", text }] });
        else system.push({ type: "text", text });
        return;
      }
      case "user":
        messages.push({ role: "user", content: userParts(message.content, `${at}.content`) });
        return;
      case "assistant":
        messages.push({ role: "assistant", content: assistantParts(message, at) });
        return;
      case "tool": {
        const result: ToolResultPart = {
          type: "tool-result",
          id: string(message.tool_call_id, `${at}.tool_call_id`),
          content: [{ type: "text", text: textOfParts(message.content ?? "", `${at}.content`) }],
        };
        const last = messages.at(-1);
        if (last?.role === "tool") last.content.push(result);
        else messages.push({ role: "tool", content: [result] });
        return;
      }
      default:
        throw invalid(`${at}.role`, "must be system, developer, user, assistant or tool");
    }
  });
  const { tools, hosted } = decodeTools(body);
  const choice = decodeChoice(body.tool_choice);
  const request: CanonicalRequest = {
    system,
    messages,
    tools,
    hostedTools: hosted,
    ...(choice ? { toolChoice: choice } : {}),
    ...(body.parallel_tool_calls === false ? { parallelToolCalls: false } : {}),
    stream: body.stream === true,
    fields: { messages: "messages", tools: "tools", choices: "n", stop: "stop" },
  };
  const cap = optionalNumber(body.max_completion_tokens, "max_completion_tokens") ??
    optionalNumber(body.max_tokens, "max_tokens");
  if (cap !== undefined) request.maxOutputTokens = cap;
  const numbers: [keyof CanonicalRequest, string][] = [
    ["temperature", "temperature"],
    ["topP", "top_p"],
    ["seed", "seed"],
    ["presencePenalty", "presence_penalty"],
    ["frequencyPenalty", "frequency_penalty"],
  ];
  for (const [key, field] of numbers) {
    const value = optionalNumber(body[field], field);
    if (value !== undefined) (request as unknown as Json)[key] = value;
  }
  const stop = stopList(body.stop, "stop");
  if (stop?.length) request.stop = stop;
  const n = optionalNumber(body.n, "n");
  if (n !== undefined) request.choices = n;
  const user = optionalString(body.safety_identifier, "safety_identifier") ??
    optionalString(body.user, "user");
  if (user) request.user = user;
  if (isObject(body.response_format)) {
    const format = body.response_format;
    if (format.type === "json_schema") {
      const spec = object(format.json_schema, "response_format.json_schema");
      request.responseFormat = {
        type: "json",
        ...(isObject(spec.schema) ? { schema: spec.schema } : {}),
        ...(typeof spec.name === "string" ? { name: spec.name } : {}),
        ...(typeof spec.description === "string" ? { description: spec.description } : {}),
        ...(typeof spec.strict === "boolean" ? { strict: spec.strict } : {}),
      };
    } else if (format.type === "json_object") {
      request.responseFormat = { type: "json" };
    } else if (format.type !== "text") {
      throw invalid("response_format.type", "must be text, json_object or json_schema");
    }
  }
  const effort = readEffort(body.reasoning_effort);
  if (effort) request.reasoning = effort === "none" ? { off: true } : { effort };
  return request;
}

// ---------------------------------------------------------------------------------------------
// Canonical → upstream request

function dataUrl(part: FilePart): string {
  return "base64" in part.data
    ? `data:${part.mediaType};base64,${part.data.base64}`
    : part.data.url;
}

function encodeUserPart(part: TextPart | FilePart, field: string): Json {
  if (part.type === "text") return { type: "text", text: part.text };
  if (part.mediaType.startsWith("image/")) {
    return {
      type: "image_url",
      image_url: { url: dataUrl(part), ...(part.detail ? { detail: part.detail } : {}) },
    };
  }
  if (!("base64" in part.data)) {
    throw inexpressible(field, "a file given by URL (not an image)", PROTOCOL);
  }
  if (part.mediaType.startsWith("audio/")) {
    const format = part.mediaType === "audio/mpeg" ? "mp3" : part.mediaType.slice(6);
    return { type: "input_audio", input_audio: { data: part.data.base64, format } };
  }
  return {
    type: "file",
    file: { file_data: dataUrl(part), filename: part.filename ?? "file.pdf" },
  };
}

function resultText(part: ToolResultPart, field: string): string {
  const text = part.content.map((c) => {
    if (c.type !== "text") throw inexpressible(field, "a file inside a tool result", PROTOCOL);
    return c.text;
  }).join("\n");
  return part.isError && !/^error\b/i.test(text) ? `Error: ${text}` : text;
}

function encodeMessages(request: CanonicalRequest): Json[] {
  const field = request.fields.messages;
  const out: Json[] = [];
  const system = request.system.map((p) => p.text).filter(Boolean).join("\n\n");
  if (system) out.push({ role: "system", content: system });
  for (const message of request.messages) {
    switch (message.role) {
      case "system": {
        const text = message.content.map((p) => p.text).join("\n\n");
        if (text) out.push({ role: "system", content: text });
        break;
      }
      case "user": {
        const onlyText = message.content.every((p) => p.type === "text");
        out.push({
          role: "user",
          content: onlyText
            ? message.content.map((p) => (p as TextPart).text).join("\n\n")
            : message.content.map((p) => encodeUserPart(p, field)),
        });
        break;
      }
      case "assistant": {
        const text = message.content.flatMap((p) => p.type === "text" ? [p.text] : []).join("");
        const calls = message.content.flatMap((p) =>
          p.type === "tool-call"
            ? [{
              id: p.id,
              type: "function",
              function: { name: p.name, arguments: stringifyArguments(p.input) },
            }]
            : []
        );
        if (!text && !calls.length) break;
        out.push({
          role: "assistant",
          content: text || null,
          ...(calls.length ? { tool_calls: calls } : {}),
        });
        break;
      }
      case "tool":
        for (const part of message.content) {
          out.push({ role: "tool", tool_call_id: part.id, content: resultText(part, field) });
        }
        break;
    }
  }
  return out;
}

function encodeChoice(choice: ToolChoice): unknown {
  return choice.type === "tool"
    ? { type: "function", function: { name: choice.name } }
    : choice.type;
}

/** A canonical request as a chat body for `target`. */
export function encodeRequest(request: CanonicalRequest, target: Target): Json {
  if ((request.choices ?? 1) > 1) {
    throw inexpressible(request.fields.choices ?? "n", "more than one answer per call", PROTOCOL);
  }
  const hosted = request.hostedTools[0];
  if (hosted) throw inexpressible(hosted.field, "a hosted tool", PROTOCOL);
  const body: Json = { model: target.model, messages: encodeMessages(request) };
  if (request.tools.length) {
    body.tools = request.tools.map((tool) => ({
      type: "function",
      function: {
        name: tool.name,
        ...(tool.description ? { description: tool.description } : {}),
        parameters: tool.parameters,
        ...(tool.strict !== undefined ? { strict: tool.strict } : {}),
      },
    }));
    if (request.toolChoice) body.tool_choice = encodeChoice(request.toolChoice);
    if (request.parallelToolCalls === false) body.parallel_tool_calls = false;
  }
  if (request.maxOutputTokens !== undefined) {
    body[target.family === "openai" ? "max_completion_tokens" : "max_tokens"] =
      request.maxOutputTokens;
  }
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (request.stop?.length) body.stop = request.stop;
  if (request.seed !== undefined) body.seed = request.seed;
  if (request.presencePenalty !== undefined) body.presence_penalty = request.presencePenalty;
  if (request.frequencyPenalty !== undefined) body.frequency_penalty = request.frequencyPenalty;
  const format = request.responseFormat;
  if (format) {
    body.response_format = format.schema
      ? {
        type: "json_schema",
        json_schema: {
          name: format.name ?? "response",
          schema: format.schema,
          ...(format.description ? { description: format.description } : {}),
          ...(format.strict !== undefined ? { strict: format.strict } : {}),
        },
      }
      : { type: "json_object" };
  }
  const reasoning = request.reasoning;
  if (reasoning && !reasoning.off) {
    const effort = reasoning.effort ??
      (reasoning.budgetTokens ? effortFor(reasoning.budgetTokens) : undefined);
    if (effort) body.reasoning_effort = effort;
  }
  if (request.user) body.user = request.user;
  if (request.stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
}

// ---------------------------------------------------------------------------------------------
// Upstream answer → canonical

const int = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;

/** A chat `usage` as canonical usage (`prompt_tokens` includes cached tokens). */
export function usageFromChat(raw: unknown): TokenUsage {
  const u = isObject(raw) ? raw : {};
  const input = isObject(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
  const output = isObject(u.completion_tokens_details) ? u.completion_tokens_details : {};
  return {
    input: int(u.prompt_tokens),
    cacheRead: int(input.cached_tokens) || int(u.prompt_cache_hit_tokens),
    cacheWrite: int(input.cache_write_tokens),
    output: int(u.completion_tokens),
    reasoning: int(output.reasoning_tokens),
  };
}

/** A whole chat completion as canonical (its first choice). */
export function decodeResponse(body: Json, _provider: string): CanonicalResponse {
  const choice = Array.isArray(body.choices) && isObject(body.choices[0]) ? body.choices[0] : {};
  const message = isObject(choice.message) ? choice.message : {};
  const content: AssistantPart[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === "string" && reasoning) {
    content.push({ type: "reasoning", text: reasoning });
  }
  if (typeof message.content === "string" && message.content) {
    content.push({ type: "text", text: message.content });
  }
  const refused = typeof message.refusal === "string" && message.refusal !== "";
  if (refused) content.push({ type: "text", text: message.refusal as string });
  for (const raw of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
    if (!isObject(raw)) continue;
    const fn = isObject(raw.function) ? raw.function : {};
    content.push({
      type: "tool-call",
      id: String(raw.id ?? ""),
      name: String(fn.name ?? ""),
      input: parseArguments(fn.arguments),
    });
  }
  return {
    id: typeof body.id === "string" ? body.id : "",
    model: typeof body.model === "string" ? body.model : "",
    content,
    finish: {
      reason: refused ? "content-filter" : fromChat(choice.finish_reason),
      ...(typeof choice.finish_reason === "string" ? { raw: choice.finish_reason } : {}),
    },
    usage: usageFromChat(body.usage),
  };
}

// ---------------------------------------------------------------------------------------------
// Canonical → client answer

/** Canonical usage in the chat shape. */
export function encodeUsage(usage: TokenUsage): Json {
  return {
    prompt_tokens: usage.input,
    completion_tokens: usage.output,
    total_tokens: usage.input + usage.output,
    prompt_tokens_details: { cached_tokens: usage.cacheRead },
    completion_tokens_details: { reasoning_tokens: usage.reasoning },
  };
}

/** A canonical tool call as a chat `tool_calls` entry. */
export function encodeCall(
  part: { id: string; name: string; input: unknown; kind?: string },
  info: AnswerInfo,
): Json {
  if (part.kind === "custom" || info.customTools?.has(part.name)) {
    const input = (part.input as { input?: unknown } | null)?.input;
    return {
      id: part.id,
      type: "custom",
      custom: {
        name: part.name,
        input: typeof input === "string" ? input : stringifyArguments(part.input),
      },
    };
  }
  return {
    id: part.id,
    type: "function",
    function: { name: part.name, arguments: stringifyArguments(part.input) },
  };
}

/** A canonical answer as a chat completion. */
export function encodeResponse(response: CanonicalResponse, info: AnswerInfo): Json {
  const text = response.content.flatMap((p) => p.type === "text" ? [p.text] : []).join("");
  const reasoning = response.content.flatMap((p) => p.type === "reasoning" ? [p.text] : [])
    .join("");
  const calls = response.content.flatMap((p) =>
    p.type === "tool-call" ? [encodeCall(p, info)] : []
  );
  return {
    id: info.id,
    object: "chat.completion",
    created: info.created,
    model: info.model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: text || null,
        refusal: null,
        ...(reasoning ? { reasoning_content: reasoning } : {}),
        ...(calls.length ? { tool_calls: calls } : {}),
      },
      logprobs: null,
      finish_reason: toChat(response.finish.reason),
    }],
    usage: encodeUsage(response.usage),
  };
}
