/**
 * Chat completions ⇄ canonical, for requests and whole answers (pure; `openai-other.md` §1,
 * `translation.md`). Policies where the formats differ:
 * - leading system/developer messages are the system prompt; later ones stay in place as system
 *   messages (the Messages and Gemini encoders hoist them); a participant's `name` is not carried;
 * - consecutive `tool` messages are one turn of results, each named after the call it answers;
 *   chat has no error flag, so a failed result is sent as its text prefixed `Error: ` (unless the
 *   text already starts with "error"); files inside a result cannot be sent and are refused;
 * - a user message of text only is sent as one string (its parts joined by a blank line), so
 *   servers that take only string content work; otherwise as parts;
 * - reasoning has no slot in a chat request: vendors' `reasoning_content` is read from a client's
 *   history and from answers, but never sent upstream, and opaque provider state (signatures,
 *   encrypted reasoning, Gemini thought signatures) has nowhere to live in a chat client's history:
 *   it does not survive a chat client's round trip (the other encoders cope with its absence);
 * - records of hosted work (`hosted-call` parts) are not sent: a chat upstream cannot replay them;
 * - hosted tools cannot run on a chat upstream and are refused by the client's field name;
 *   free-form (custom) tools are offered to a chat upstream as functions taking `{input}`;
 * - the output cap is `max_completion_tokens` for OpenAI itself, `max_tokens` for every other
 *   server (vLLM, Ollama, llama.cpp and most vendors read only that one); `top_k`, a reasoning
 *   budget's exact size (sent as the nearest effort) and `visible` have no field and are not sent;
 * - from a chat client, hints with no canonical field (`verbosity`, `service_tier`, `store`,
 *   `metadata`, `prompt_cache_key`, `stream_options` beyond usage) are not carried; features the
 *   answer depends on (log probabilities, audio, predicted output, token biases, grammar-bound
 *   custom tools, file ids) are refused by name;
 * - an answer that calls tools but says `stop` (some servers do) finishes with `tool-calls`; a
 *   refusal finishes with `content-filter`; `length` wins over both.
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
  ToolCallPart,
  ToolChoice,
  ToolResultPart,
} from "../../translate/ir.ts";
import { decodeFinishReason, encodeFinishReason } from "./finish_reason.ts";
import { effortFor, readEffort } from "../../translate/reasoning.ts";
import { parseArguments, stringifyArguments } from "../../translate/tool_ids.ts";
import {
  invalid,
  isObject,
  list,
  object,
  optionalBoolean,
  optionalString,
  string,
} from "../../http/json.ts";
import { inexpressible } from "../../translate/inexpressible.ts";
import { dataUrl, splitDataUrl } from "../../translate/data_url.ts";
import { decodeSampling, encodeSampling, oneAnswer } from "../../translate/sampling.ts";
import { decodeTokenUsage, encodeTokenUsage } from "./token_usage.ts";

const PROTOCOL = "chat completions";
const CLIENT_SIDE = "another protocol";

/** The schema of a free-form tool's one string input. */
export const CUSTOM_INPUT: Json = {
  type: "object",
  properties: { input: { type: "string" } },
  required: ["input"],
};

/** `input_audio.format` → media type. */
const AUDIO_TYPES: Record<string, string> = { wav: "audio/wav", mp3: "audio/mpeg" };
/** Audio media type subtypes → `input_audio.format`. */
const AUDIO_FORMATS: Record<string, string> = {
  wav: "wav",
  wave: "wav",
  "x-wav": "wav",
  mpeg: "mp3",
  mp3: "mp3",
};

const present = (value: unknown): boolean => value !== undefined && value !== null;

// ---------------------------------------------------------------------------------------------
// Client request → canonical

/** A content string or list of text (and refusal) parts as one string. */
function textOfParts(content: unknown, field: string): string {
  if (typeof content === "string") return content;
  return list(content, field).map((raw, i) => {
    const part = object(raw, `${field}[${i}]`);
    if (part.type === "text") return string(part.text, `${field}[${i}].text`);
    if (part.type === "refusal") return string(part.refusal, `${field}[${i}].refusal`);
    throw invalid(`${field}[${i}].type`, "must be text here");
  }).join("");
}

/** An `image_url` part: a data URL inline, any other URL by reference. */
function imagePart(part: Json, at: string): FilePart {
  const image = object(part.image_url, `${at}.image_url`);
  const url = string(image.url, `${at}.image_url.url`);
  const detail = typeof image.detail === "string" ? { detail: image.detail } : {};
  const data = splitDataUrl(url);
  if (data) {
    return { type: "file", mediaType: data.mediaType, data: { base64: data.base64 }, ...detail };
  }
  if (url.startsWith("data:")) throw invalid(`${at}.image_url.url`, "must be a base64 data URL");
  return { type: "file", mediaType: "image/*", data: { url }, ...detail };
}

function audioPart(part: Json, at: string): FilePart {
  const audio = object(part.input_audio, `${at}.input_audio`);
  const format = string(audio.format, `${at}.input_audio.format`);
  return {
    type: "file",
    mediaType: AUDIO_TYPES[format] ?? `audio/${format}`,
    data: { base64: string(audio.data, `${at}.input_audio.data`) },
  };
}

function filePart(part: Json, at: string): FilePart {
  const file = object(part.file, `${at}.file`);
  if (present(file.file_id)) {
    throw inexpressible(`${at}.file.file_id`, "a file id (ids are not portable)", CLIENT_SIDE);
  }
  const data = splitDataUrl(string(file.file_data, `${at}.file.file_data`));
  if (!data) throw invalid(`${at}.file.file_data`, "must be a base64 data URL");
  return {
    type: "file",
    mediaType: data.mediaType,
    data: { base64: data.base64 },
    ...(typeof file.filename === "string" ? { filename: file.filename } : {}),
  };
}

/** A user message's content as canonical parts (empty text dropped). */
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
      case "image_url":
        return [imagePart(part, at)];
      case "input_audio":
        return [audioPart(part, at)];
      case "file":
        return [filePart(part, at)];
      default:
        throw invalid(`${at}.type`, "must be text, image_url, input_audio or file");
    }
  });
}

/** One `tool_calls` entry of a client's assistant message. */
function toolCall(raw: unknown, field: string): ToolCallPart {
  const call = object(raw, field);
  const id = string(call.id, `${field}.id`);
  if (call.type === "custom") {
    const custom = object(call.custom, `${field}.custom`);
    return {
      type: "tool-call",
      id,
      name: string(custom.name, `${field}.custom.name`),
      input: { input: string(custom.input, `${field}.custom.input`) },
      kind: "custom",
    };
  }
  if (present(call.type) && call.type !== "function") {
    throw invalid(`${field}.type`, "must be function or custom");
  }
  const fn = object(call.function, `${field}.function`);
  return {
    type: "tool-call",
    id,
    name: string(fn.name, `${field}.function.name`),
    input: parseArguments(fn.arguments),
  };
}

/** An assistant message as canonical parts: vendor reasoning first, text, then calls. */
function assistantParts(message: Json, at: string): AssistantPart[] {
  if (present(message.function_call)) {
    throw invalid(`${at}.function_call`, "is deprecated; use tool_calls");
  }
  if (present(message.audio)) {
    throw inexpressible(`${at}.audio`, "an earlier audio answer", CLIENT_SIDE);
  }
  const parts: AssistantPart[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === "string" && reasoning) {
    parts.push({ type: "reasoning", text: reasoning });
  }
  let text = present(message.content) ? textOfParts(message.content, `${at}.content`) : "";
  if (!text && typeof message.refusal === "string") text = message.refusal;
  if (text) parts.push({ type: "text", text });
  list(message.tool_calls, `${at}.tool_calls`).forEach((raw, i) => {
    parts.push(toolCall(raw, `${at}.tool_calls[${i}]`));
  });
  return parts;
}

/** The conversation: the leading system text, and the messages after it. */
function decodeMessages(body: Json): { system: TextPart[]; messages: Message[] } {
  const system: TextPart[] = [];
  const messages: Message[] = [];
  /** Calls made so far, by id: a result is named after its call (Gemini needs the name). */
  const calls = new Map<string, ToolCallPart>();
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
      case "assistant": {
        const content = assistantParts(message, at);
        for (const part of content) if (part.type === "tool-call") calls.set(part.id, part);
        messages.push({ role: "assistant", content });
        return;
      }
      case "tool": {
        const id = string(message.tool_call_id, `${at}.tool_call_id`);
        const call = calls.get(id);
        const result: ToolResultPart = {
          type: "tool-result",
          id,
          ...(call ? { name: call.name } : {}),
          content: [{ type: "text", text: textOfParts(message.content ?? "", `${at}.content`) }],
          ...(call?.kind === "custom" ? { kind: "custom" as const } : {}),
        };
        const last = messages.at(-1);
        if (last?.role === "tool") last.content.push(result);
        else messages.push({ role: "tool", content: [result] });
        return;
      }
      case "function":
        throw invalid(`${at}.role`, "`function` messages are deprecated; use tool messages");
      default:
        throw invalid(`${at}.role`, "must be system, developer, user, assistant or tool");
    }
  });
  return { system, messages };
}

function decodeTools(body: Json): { tools: FunctionTool[]; hosted: HostedTool[] } {
  if (present(body.functions)) throw invalid("functions", "is deprecated; use tools");
  const tools: FunctionTool[] = [];
  const hosted: HostedTool[] = [];
  list(body.tools, "tools").forEach((raw, i) => {
    const at = `tools[${i}]`;
    const tool = object(raw, at);
    if (tool.type === "function") {
      const fn = object(tool.function, `${at}.function`);
      const strict = optionalBoolean(fn.strict, `${at}.function.strict`);
      tools.push({
        name: string(fn.name, `${at}.function.name`),
        ...(typeof fn.description === "string" ? { description: fn.description } : {}),
        parameters: isObject(fn.parameters) ? fn.parameters : { type: "object", properties: {} },
        ...(strict !== undefined ? { strict } : {}),
      });
    } else if (tool.type === "custom") {
      const custom = object(tool.custom, `${at}.custom`);
      const format = isObject(custom.format) ? custom.format : undefined;
      if (format && format.type !== "text") {
        throw inexpressible(`${at}.custom.format`, "a custom tool bound by a grammar", CLIENT_SIDE);
      }
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
  if (present(body.web_search_options)) {
    hosted.push({ type: "web_search", field: "web_search_options" });
  }
  const live = body.search_parameters;
  if (present(live) && !(isObject(live) && live.mode === "off")) {
    hosted.push({ type: "other", field: "search_parameters", name: "live search" });
  }
  return { tools, hosted };
}

function decodeChoice(value: unknown): ToolChoice | undefined {
  if (!present(value)) return undefined;
  if (value === "auto" || value === "none" || value === "required") return { type: value };
  const choice = object(value, "tool_choice");
  switch (choice.type) {
    case "function": {
      const fn = object(choice.function, "tool_choice.function");
      return { type: "tool", name: string(fn.name, "tool_choice.function.name") };
    }
    case "custom": {
      const custom = object(choice.custom, "tool_choice.custom");
      return { type: "tool", name: string(custom.name, "tool_choice.custom.name") };
    }
    case "allowed_tools":
      throw inexpressible("tool_choice", "an `allowed_tools` choice", CLIENT_SIDE);
    default:
      throw invalid("tool_choice", "must be auto, none, required or name a tool");
  }
}

function decodeFormat(value: unknown): CanonicalRequest["responseFormat"] {
  if (!present(value)) return undefined;
  const format = object(value, "response_format");
  switch (format.type) {
    case "text":
      return undefined;
    case "json_object":
      return { type: "json" };
    case "json_schema": {
      const spec = object(format.json_schema, "response_format.json_schema");
      const strict = optionalBoolean(spec.strict, "response_format.json_schema.strict");
      return {
        type: "json",
        ...(isObject(spec.schema) ? { schema: spec.schema } : {}),
        ...(typeof spec.name === "string" ? { name: spec.name } : {}),
        ...(typeof spec.description === "string" ? { description: spec.description } : {}),
        ...(strict !== undefined ? { strict } : {}),
      };
    }
    default:
      throw invalid("response_format.type", "must be text, json_object or json_schema");
  }
}

/** Request fields whose answer another protocol cannot give: refused by name. */
function refuseUntranslatable(body: Json): void {
  if (body.logprobs === true) {
    throw inexpressible("logprobs", "log probabilities", CLIENT_SIDE);
  }
  if (present(body.top_logprobs)) {
    throw inexpressible("top_logprobs", "log probabilities", CLIENT_SIDE);
  }
  if (present(body.audio)) throw inexpressible("audio", "audio output", CLIENT_SIDE);
  if (Array.isArray(body.modalities) && body.modalities.some((m) => m !== "text")) {
    throw inexpressible("modalities", "output other than text", CLIENT_SIDE);
  }
  if (present(body.prediction)) {
    throw inexpressible("prediction", "a predicted output", CLIENT_SIDE);
  }
  if (isObject(body.logit_bias) && Object.keys(body.logit_bias).length) {
    throw inexpressible("logit_bias", "token biases (token ids are per model)", CLIENT_SIDE);
  }
  if (present(body.function_call)) throw invalid("function_call", "is deprecated; use tool_choice");
}

/** A chat request (validated by `schema.ts`) as canonical. */
export function decodeRequest(body: Json, _route: RouteInfo): CanonicalRequest {
  refuseUntranslatable(body);
  const { system, messages } = decodeMessages(body);
  const { tools, hosted } = decodeTools(body);
  const choice = decodeChoice(body.tool_choice);
  const parallel = optionalBoolean(body.parallel_tool_calls, "parallel_tool_calls");
  const request: CanonicalRequest = {
    system,
    messages,
    tools,
    hostedTools: hosted,
    ...(choice ? { toolChoice: choice } : {}),
    ...(parallel !== undefined ? { parallelToolCalls: parallel } : {}),
    stream: body.stream === true,
    fields: { messages: "messages", tools: "tools", choices: "n", stop: "stop" },
  };
  decodeSampling("chat", body, request);
  const format = decodeFormat(body.response_format);
  if (format) request.responseFormat = format;
  const effort = readEffort(body.reasoning_effort);
  if (effort) request.reasoning = effort === "none" ? { off: true } : { effort };
  const user = optionalString(body.safety_identifier, "safety_identifier") ??
    optionalString(body.user, "user");
  if (user) request.user = user;
  return request;
}

// ---------------------------------------------------------------------------------------------
// Canonical → upstream request

function encodeUserPart(part: TextPart | FilePart, field: string): Json {
  if (part.type === "text") return { type: "text", text: part.text };
  if (part.mediaType.startsWith("image/")) {
    return {
      type: "image_url",
      image_url: { url: dataUrl(part), ...(part.detail ? { detail: part.detail } : {}) },
    };
  }
  if (!("base64" in part.data)) {
    throw inexpressible(field, `a \`${part.mediaType}\` file given by URL`, PROTOCOL);
  }
  if (part.mediaType.startsWith("audio/")) {
    const subtype = part.mediaType.slice("audio/".length);
    return {
      type: "input_audio",
      input_audio: { data: part.data.base64, format: AUDIO_FORMATS[subtype] ?? subtype },
    };
  }
  return {
    type: "file",
    file: { file_data: dataUrl(part), filename: part.filename ?? "file.pdf" },
  };
}

/** A user message: one string when it is all text, else parts. */
function encodeUser(content: (TextPart | FilePart)[], field: string): Json {
  const texts = content.filter((p): p is TextPart => p.type === "text");
  return {
    role: "user",
    content: texts.length === content.length
      ? texts.map((p) => p.text).join("\n\n")
      : content.map((p) => encodeUserPart(p, field)),
  };
}

/** An assistant message: its text and calls (reasoning and hosted work are not sent). */
function encodeAssistant(content: AssistantPart[]): Json | null {
  const text = content.flatMap((p) => p.type === "text" ? [p.text] : []).join("");
  const calls = content.flatMap((p) =>
    p.type === "tool-call"
      ? [{
        id: p.id,
        type: "function",
        function: { name: p.name, arguments: stringifyArguments(p.input) },
      }]
      : []
  );
  if (!text && !calls.length) return null;
  return {
    role: "assistant",
    content: text || null,
    ...(calls.length ? { tool_calls: calls } : {}),
  };
}

/** A result's text; a failed one says so (chat has no error flag). */
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
        const text = message.content.map((p) => p.text).filter(Boolean).join("\n\n");
        if (text) out.push({ role: "system", content: text });
        break;
      }
      case "user":
        out.push(encodeUser(message.content, field));
        break;
      case "assistant": {
        const assistant = encodeAssistant(message.content);
        if (assistant) out.push(assistant);
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

function encodeTool(tool: FunctionTool): Json {
  return {
    type: "function",
    function: {
      name: tool.name,
      ...(tool.description ? { description: tool.description } : {}),
      parameters: tool.kind === "custom" ? CUSTOM_INPUT : tool.parameters,
      ...(tool.strict !== undefined ? { strict: tool.strict } : {}),
    },
  };
}

function encodeChoice(choice: ToolChoice): unknown {
  return choice.type === "tool"
    ? { type: "function", function: { name: choice.name } }
    : choice.type;
}

function encodeFormat(format: NonNullable<CanonicalRequest["responseFormat"]>): Json {
  if (!format.schema) return { type: "json_object" };
  return {
    type: "json_schema",
    json_schema: {
      name: format.name ?? "response",
      schema: format.schema,
      ...(format.description ? { description: format.description } : {}),
      ...(format.strict !== undefined ? { strict: format.strict } : {}),
    },
  };
}

/** A canonical request as a chat body for `target`. */
export function encodeRequest(request: CanonicalRequest, target: Target): Json {
  oneAnswer(request, PROTOCOL);
  const hosted = request.hostedTools[0];
  if (hosted) {
    const name = hosted.type === "web_search" ? "web_search" : hosted.name;
    throw inexpressible(hosted.field, `the hosted tool \`${name}\``, PROTOCOL);
  }
  const body: Json = { model: target.model, messages: encodeMessages(request) };
  if (request.tools.length) {
    body.tools = request.tools.map(encodeTool);
    if (request.toolChoice) body.tool_choice = encodeChoice(request.toolChoice);
    if (request.parallelToolCalls !== undefined) {
      body.parallel_tool_calls = request.parallelToolCalls;
    }
  }
  // The output cap is `max_completion_tokens` for OpenAI itself, `max_tokens` for every other.
  encodeSampling("chat", request, body, {
    maxOutputTokens: target.family === "openai" ? "max_completion_tokens" : "max_tokens",
  });
  if (request.responseFormat) body.response_format = encodeFormat(request.responseFormat);
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

/** One `tool_calls` entry of an answer as a canonical call (a custom one keeps its raw input). */
function answerCall(raw: Json): ToolCallPart {
  if (raw.type === "custom") {
    const custom = isObject(raw.custom) ? raw.custom : {};
    return {
      type: "tool-call",
      id: String(raw.id ?? ""),
      name: String(custom.name ?? ""),
      input: { input: typeof custom.input === "string" ? custom.input : "" },
      kind: "custom",
    };
  }
  const fn = isObject(raw.function) ? raw.function : {};
  return {
    type: "tool-call",
    id: String(raw.id ?? ""),
    name: String(fn.name ?? ""),
    input: parseArguments(fn.arguments),
  };
}

/** An answer's `content`: a string, or (some vendors) a list of text parts. */
function answerText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p) =>
    isObject(p) && p.type === "text" && typeof p.text === "string" ? p.text : ""
  )
    .join("");
}

/** The choice a translated answer reads: index 0 (one answer is all a translation asks for). */
export function firstChoice(choices: unknown): Json | undefined {
  if (!Array.isArray(choices)) return undefined;
  const found = choices.find((c) => isObject(c) && (c.index ?? 0) === 0) ?? choices[0];
  return isObject(found) ? found : undefined;
}

/** A whole chat completion as canonical (its first choice). */
export function decodeResponse(body: Json, _provider: string): CanonicalResponse {
  const choice = firstChoice(body.choices) ?? {};
  const message = isObject(choice.message) ? choice.message : {};
  const content: AssistantPart[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === "string" && reasoning) {
    content.push({ type: "reasoning", text: reasoning });
  }
  const text = answerText(message.content);
  if (text) content.push({ type: "text", text });
  const refused = typeof message.refusal === "string" && message.refusal !== "";
  if (refused) content.push({ type: "text", text: message.refusal as string });
  for (const raw of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
    if (isObject(raw)) content.push(answerCall(raw));
  }
  const hasCalls = content.some((p) => p.type === "tool-call");
  return {
    id: typeof body.id === "string" ? body.id : "",
    model: typeof body.model === "string" ? body.model : "",
    content,
    finish: {
      reason: decodeFinishReason(choice.finish_reason, refused, hasCalls),
      ...(typeof choice.finish_reason === "string" ? { raw: choice.finish_reason } : {}),
    },
    usage: decodeTokenUsage(body.usage ?? choice.usage),
  };
}

// ---------------------------------------------------------------------------------------------
// Canonical → client answer

/** Whether a call is to one of the client's free-form tools (written as a custom call). */
export function isCustomCall(part: { name: string; kind?: string }, info: AnswerInfo): boolean {
  return part.kind === "custom" || !!info.customTools?.has(part.name);
}

/** A canonical tool call as a chat `tool_calls` entry. */
export function encodeCall(
  part: { id: string; name: string; input: unknown; kind?: string },
  info: AnswerInfo,
): Json {
  if (isCustomCall(part, info)) {
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
      finish_reason: encodeFinishReason(response.finish.reason),
    }],
    usage: encodeTokenUsage(response.usage),
  };
}
