/**
 * A chat-completions request → the canonical form (pure; `openai-other.md` §1, `translation.md`).
 * Policies where the formats differ:
 * - leading system/developer messages are the system prompt; later ones stay in place as system
 *   messages (the Messages and Gemini encoders hoist them); a participant's `name` is not carried;
 * - consecutive `tool` messages are one turn of results, each named after the call it answers;
 * - vendors' `reasoning_content` (or `reasoning`) in a client's history is read as reasoning;
 * - hints with no canonical field (`verbosity`, `service_tier`, `store`, `metadata`,
 *   `stream_options` beyond usage) are not carried; features the answer depends on (log
 *   probabilities, audio, predicted output, token biases, grammar-bound custom tools, file ids)
 *   are refused by name, as are the deprecated `functions` and `function_call`;
 * - the protocol caches by itself: `prompt_cache_key` and `prompt_cache_retention` are the cache
 *   intent (`translate/prompt_cache.ts`); parameter and output schemas have their keywords in one
 *   order (`translate/schema_order.ts`);
 * - `web_search_options` and xAI's Live Search are hosted tools;
 * - of the hints not carried, those that change the answer — `verbosity`, a `service_tier` other
 *   than the default, a participant's `name`, `web_search_options`' own options — are noted as
 *   adaptations (see `translate/adaptations.ts`).
 */
import {
  eachObject,
  invalid,
  isObject,
  list,
  object,
  optionalBoolean,
  optionalString,
  string,
} from "../../http/json.ts";
import { isBaseTier } from "../../billing/price.ts";
import { type Adapt, IGNORED } from "../../translate/adaptations.ts";
import type { RouteInfo } from "../../translate/codec.ts";
import { CUSTOM_INPUT } from "../../translate/custom_tools.ts";
import { splitDataUrl } from "../../translate/data_url.ts";
import { inexpressible } from "../../translate/inexpressible.ts";
import type {
  AssistantPart,
  CanonicalRequest,
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
import { openAiCacheIntent } from "../../translate/prompt_cache.ts";
import { readEffort } from "../../translate/reasoning.ts";
import { decodeSampling } from "../../translate/sampling.ts";
import { parseArguments } from "../../translate/tool_ids.ts";

const CLIENT_SIDE = "another protocol";

/** `input_audio.format` → media type. */
const AUDIO_TYPES: Record<string, string> = { wav: "audio/wav", mp3: "audio/mpeg" };

const present = (value: unknown): boolean => value !== undefined && value !== null;

/** A content string or list of text (and refusal) parts as one string. */
function textOfParts(content: unknown, field: string): string {
  if (typeof content === "string") return content;
  return eachObject(content, field, (part, at) => {
    if (part.type === "text") return string(part.text, `${at}.text`);
    if (part.type === "refusal") return string(part.refusal, `${at}.refusal`);
    throw invalid(`${at}.type`, "must be text here");
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
  return eachObject(content, field, (part, at): (TextPart | FilePart)[] => {
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
  }).flat();
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
  eachObject(body.messages, "messages", (message, at) => {
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
  eachObject(body.tools, "tools", (tool, at) => {
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

/** Notes the hints of `body` not carried that change the answer (see the module's doc). */
function noteUncarried(body: Json, adapt: Adapt): void {
  if (present(body.verbosity)) adapt("hint_dropped", "verbosity");
  if (typeof body.service_tier === "string" && !isBaseTier(body.service_tier)) {
    adapt("hint_dropped", "service_tier");
  }
  if (Array.isArray(body.messages)) {
    const at = body.messages.findIndex((m) => isObject(m) && present(m.name));
    if (at >= 0) adapt("hint_dropped", `messages[${at}].name`);
  }
  const search = body.web_search_options;
  if (isObject(search) && Object.values(search).some(present)) {
    adapt("search_options_dropped", "web_search_options");
  }
}

/** A chat request (validated by `schema.ts`) as canonical. */
export function decodeRequest(
  body: Json,
  _route: RouteInfo,
  adapt: Adapt = IGNORED,
): CanonicalRequest {
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
    cache: openAiCacheIntent(body),
  };
  decodeSampling("chat", body, request);
  noteUncarried(body, adapt);
  const format = decodeFormat(body.response_format);
  if (format) {
    request.responseFormat = format;
    request.fields.responseFormat = "response_format";
  }
  const effort = readEffort(body.reasoning_effort);
  if (effort) {
    request.reasoning = effort === "none" ? { off: true } : { effort };
    request.fields.reasoning = "reasoning_effort";
  }
  const identifier = optionalString(body.safety_identifier, "safety_identifier");
  const user = identifier ?? optionalString(body.user, "user");
  if (user) {
    request.user = user;
    request.fields.user = identifier ? "safety_identifier" : "user";
  }
  return request;
}
