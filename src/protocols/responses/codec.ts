/**
 * Responses ⇄ canonical, for requests and whole answers (pure; `openai-responses.md`,
 * `translation.md`). Policies where the formats differ:
 * - `instructions` and the system/developer items before any other item are the system prompt;
 *   later ones stay in place (sent to a Responses upstream as `developer` items);
 * - calls go upstream stateless: `store: false` with `include: ["reasoning.encrypted_content"]`,
 *   so reasoning travels in the items themselves and is replayed only to the provider that
 *   encrypted it (never forged, dropped elsewhere); another provider's state (an Anthropic
 *   signature, a Gemini thought signature) reaches a Responses client as the `encrypted_content`
 *   token of a reasoning item, and a Gemini signature on a call rides on an empty reasoning item
 *   just before the call, read back onto the call;
 * - functions grouped in a `namespace` tool (Codex) are flattened to `<namespace>__<name>`; a call
 *   comes back to the client with its own `namespace` and `name` fields;
 * - a free-form (`custom`) tool is a function with one string `input` elsewhere, its grammar given
 *   to the model as that field's description; its calls come back as `custom_tool_call`s;
 * - `tool_choice: allowed_tools` offers the model only the allowed tools, with its mode (the same
 *   effect; only OpenAI's caching of the whole list is lost); a forced hosted tool is refused;
 * - stored state only OpenAI holds (`conversation`, a stored `prompt`, `item_reference`,
 *   `compaction` and other hosted items) and log probabilities are refused by name;
 * - Responses has no stop sequences (refused by name); `top_k`, `seed`, the penalties and
 *   `text.verbosity` are sampling hints with no field on the other side and are not sent;
 *   `max_output_tokens` is at least 16; a user id longer than `safety_identifier` allows (64) is
 *   sent as a stable hash of it;
 * - a tool result marked as an error is sent as text starting with `Error:` (Responses has no
 *   error flag);
 * - hosted web search records a foreign provider made are kept for the client and never sent
 *   upstream (an OpenAI item id cannot be forged); a Gemini signature on a text part has no slot
 *   in Responses and is not carried.
 */
import type { AnswerInfo, RouteInfo, Target } from "../../translate/codec.ts";
import type {
  AssistantPart,
  CanonicalRequest,
  CanonicalResponse,
  FilePart,
  FunctionTool,
  HostedCallPart,
  HostedTool,
  Json,
  Message,
  Opaque,
  TextPart,
  TokenUsage,
  ToolCallPart,
  ToolChoice,
  ToolResultPart,
} from "../../translate/ir.ts";
import { decodeStatus, encodeStatus } from "./status.ts";
import { fromToken, readOpaque, replayable, signaturesOntoCalls } from "../../translate/opaque.ts";
import { effortFor, readEffort } from "../../translate/reasoning.ts";
import { parseArguments, shortHash, stringifyArguments } from "../../translate/tool_ids.ts";
import {
  invalid,
  isObject,
  list,
  object,
  optionalBoolean,
  optionalNumber,
  optionalString,
  string,
} from "../../http/json.ts";
import { inexpressible } from "../../translate/inexpressible.ts";
import { dataUrl, splitDataUrl } from "../../translate/data_url.ts";
import { decodeSampling, encodeSampling, oneAnswer } from "../../translate/sampling.ts";
import { decodeTokenUsage, encodeTokenUsage } from "./token_usage.ts";

const PROTOCOL = "the Responses protocol";
const ELSEWHERE = "another protocol";

/** Hosted tool types that are web search. */
const WEB_SEARCH = new Set([
  "web_search",
  "web_search_preview",
  "web_search_2025_08_26",
  "web_search_preview_2025_03_11",
]);

/** Media types by file extension, both ways (for `input_file` names and URLs). */
const EXTENSIONS: Record<string, string> = {
  pdf: "application/pdf",
  txt: "text/plain",
  md: "text/markdown",
  csv: "text/csv",
  json: "application/json",
  html: "text/html",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
};

/** The namespaced function's canonical name (see `FunctionTool.namespace`). */
export function flatName(name: string, namespace: unknown): string {
  return typeof namespace === "string" && namespace ? `${namespace}__${name}` : name;
}

// ---------------------------------------------------------------------------------------------
// Client request → canonical

/** The media type a file name or URL suggests, else `fallback`. */
function mediaTypeOf(name: unknown, fallback: string): string {
  if (typeof name !== "string") return fallback;
  const ext = /\.([a-z0-9]+)(?:[?#].*)?$/i.exec(name)?.[1]?.toLowerCase();
  return (ext && EXTENSIONS[ext]) || fallback;
}

function imagePart(part: Json, at: string): FilePart {
  if (part.file_id !== undefined && part.file_id !== null) {
    throw inexpressible(
      `${at}.file_id`,
      "a file id (provider file ids are not portable)",
      ELSEWHERE,
    );
  }
  const url = string(part.image_url, `${at}.image_url`);
  const detail = typeof part.detail === "string" ? { detail: part.detail } : {};
  const data = splitDataUrl(url);
  return data
    ? { type: "file", mediaType: data.mediaType, data: { base64: data.base64 }, ...detail }
    : { type: "file", mediaType: mediaTypeOf(url, "image/*"), data: { url }, ...detail };
}

function filePart(part: Json, at: string): FilePart {
  if (part.file_id !== undefined && part.file_id !== null) {
    throw inexpressible(
      `${at}.file_id`,
      "a file id (provider file ids are not portable)",
      ELSEWHERE,
    );
  }
  const filename = typeof part.filename === "string" ? { filename: part.filename } : {};
  if (typeof part.file_url === "string") {
    return {
      type: "file",
      mediaType: mediaTypeOf(part.filename ?? part.file_url, "application/pdf"),
      data: { url: part.file_url },
      ...filename,
    };
  }
  const raw = string(part.file_data, `${at}.file_data`);
  const data = splitDataUrl(raw);
  return {
    type: "file",
    mediaType: data?.mediaType ?? mediaTypeOf(part.filename, "application/pdf"),
    data: { base64: data ? data.base64 : raw },
    ...filename,
  };
}

/** A content string or part list as canonical text and file parts. */
function contentParts(content: unknown, field: string): (TextPart | FilePart)[] {
  if (typeof content === "string") return content ? [{ type: "text", text: content }] : [];
  return list(content, field).flatMap((raw, i): (TextPart | FilePart)[] => {
    const at = `${field}[${i}]`;
    const part = object(raw, at);
    switch (part.type) {
      case "input_text":
      case "output_text":
      case "text": {
        const text = string(part.text, `${at}.text`);
        return text ? [{ type: "text", text }] : [];
      }
      case "refusal":
        return [{ type: "text", text: string(part.refusal, `${at}.refusal`) }];
      case "input_image":
        return [imagePart(part, at)];
      case "input_file":
        return [filePart(part, at)];
      default:
        throw inexpressible(`${at}.type`, `a \`${String(part.type)}\` content part`, ELSEWHERE);
    }
  });
}

/** Text parts only, for messages that hold no files elsewhere (system, assistant). */
function textParts(content: unknown, field: string): TextPart[] {
  const parts = contentParts(content, field);
  if (parts.some((p) => p.type !== "text")) {
    throw inexpressible(field, "a file in a system, developer or assistant message", ELSEWHERE);
  }
  return parts as TextPart[];
}

/** A tool result's `output`: a string or a list of parts. */
function resultContent(output: unknown, field: string): (TextPart | FilePart)[] {
  if (typeof output === "string") return [{ type: "text", text: output }];
  return contentParts(output, field);
}

/** The summary texts of a reasoning item, joined. */
function summaryText(summary: unknown, field: string): string {
  return list(summary, field).flatMap((raw, j) => {
    const part = object(raw, `${field}[${j}]`);
    return typeof part.text === "string" && part.text ? [part.text] : [];
  }).join("\n\n");
}

/** A reasoning input item as a canonical part (none when it carries nothing). */
function reasoningPart(item: Json, at: string): AssistantPart | null {
  const token = fromToken(item.encrypted_content);
  // A token names its own item id (an id the gateway gave the client is never sent upstream).
  const native = token ? undefined : readOpaque(item.encrypted_content, "encrypted-reasoning");
  const opaque = native && typeof item.id === "string" && item.id
    ? { ...native, itemId: item.id }
    : token?.opaque ?? native;
  const text = token?.text ?? summaryText(item.summary, `${at}.summary`);
  if (!text && !opaque) return null;
  return { type: "reasoning", text, ...(opaque ? { opaque } : {}) };
}

/** The input items (or the input string) as canonical messages. */
function decodeInput(input: unknown, system: TextPart[]): Message[] {
  if (typeof input === "string") {
    return input ? [{ role: "user", content: [{ type: "text", text: input }] }] : [];
  }
  const messages: Message[] = [];
  /** Call names by call id, for the results (Gemini needs them). */
  const names = new Map<string, string>();
  const assistant = (): AssistantPart[] => {
    const last = messages.at(-1);
    if (last?.role === "assistant") return last.content;
    const content: AssistantPart[] = [];
    messages.push({ role: "assistant", content });
    return content;
  };
  const results = (): ToolResultPart[] => {
    const last = messages.at(-1);
    if (last?.role === "tool") return last.content;
    const content: ToolResultPart[] = [];
    messages.push({ role: "tool", content });
    return content;
  };
  list(input, "input").forEach((raw, i) => {
    const at = `input[${i}]`;
    const item = object(raw, at);
    const type = item.type ?? "message";
    switch (type) {
      case "message": {
        const role = item.role;
        if (role === "system" || role === "developer") {
          const text = textParts(item.content, `${at}.content`);
          if (!messages.length) system.push(...text);
          else if (text.length) messages.push({ role: "system", content: text });
        } else if (role === "assistant") {
          const text = textParts(item.content, `${at}.content`);
          if (text.length) assistant().push(...text);
        } else if (role === "user") {
          const content = contentParts(item.content, `${at}.content`);
          if (content.length) messages.push({ role: "user", content });
        } else throw invalid(`${at}.role`, "must be user, assistant, system or developer");
        return;
      }
      case "reasoning": {
        const part = reasoningPart(item, at);
        if (part) assistant().push(part);
        return;
      }
      case "function_call":
      case "custom_tool_call": {
        const custom = type === "custom_tool_call";
        const call: ToolCallPart = {
          type: "tool-call",
          id: string(item.call_id, `${at}.call_id`),
          name: flatName(string(item.name, `${at}.name`), item.namespace),
          input: custom
            ? { input: string(item.input, `${at}.input`) }
            : parseArguments(item.arguments),
          ...(custom ? { kind: "custom" as const } : {}),
        };
        names.set(call.id, call.name);
        assistant().push(call);
        return;
      }
      case "function_call_output":
      case "custom_tool_call_output": {
        const id = string(item.call_id, `${at}.call_id`);
        const name = names.get(id);
        results().push({
          type: "tool-result",
          id,
          ...(name ? { name } : {}),
          content: resultContent(item.output, `${at}.output`),
          ...(type === "custom_tool_call_output" ? { kind: "custom" as const } : {}),
        });
        return;
      }
      case "web_search_call": {
        const action = isObject(item.action) ? item.action : {};
        assistant().push({
          type: "hosted-call",
          tool: "web_search",
          id: typeof item.id === "string" ? item.id : "",
          ...(typeof action.query === "string" ? { query: action.query } : {}),
        });
        return;
      }
      default:
        throw inexpressible(at, `a \`${String(type)}\` item`, ELSEWHERE);
    }
  });
  // A Gemini signature carried on an empty reasoning item goes back onto the call after it.
  return messages.map((m) =>
    m.role === "assistant" ? { role: "assistant", content: signaturesOntoCalls(m.content) } : m
  );
}

/** The `input` schema of a free-form tool, its format as the field's description. */
function customParameters(format: unknown): Json {
  const f = isObject(format) ? format : {};
  const description = f.type === "grammar" && typeof f.definition === "string"
    ? `The raw input (not JSON), which must match this ${
      typeof f.syntax === "string" ? `${f.syntax} ` : ""
    }grammar:\n${f.definition}`
    : "The raw input, as free-form text (not JSON).";
  return {
    type: "object",
    properties: { input: { type: "string", description } },
    required: ["input"],
  };
}

function functionTool(tool: Json, at: string, namespace?: string): FunctionTool {
  const name = flatName(string(tool.name, `${at}.name`), namespace);
  const description = typeof tool.description === "string" && tool.description
    ? { description: tool.description }
    : {};
  const ns = namespace ? { namespace } : {};
  if (tool.type === "custom") {
    return {
      name,
      ...description,
      parameters: customParameters(tool.format),
      kind: "custom",
      ...ns,
    };
  }
  if (tool.type !== "function") {
    throw inexpressible(`${at}.type`, `a \`${String(tool.type)}\` tool in a namespace`, ELSEWHERE);
  }
  return {
    name,
    ...description,
    parameters: isObject(tool.parameters) ? tool.parameters : { type: "object", properties: {} },
    ...(typeof tool.strict === "boolean" ? { strict: tool.strict } : {}),
    ...ns,
  };
}

function decodeTools(value: unknown): { tools: FunctionTool[]; hosted: HostedTool[] } {
  const tools: FunctionTool[] = [];
  const hosted: HostedTool[] = [];
  const seen = new Set<string>();
  const add = (tool: FunctionTool, at: string) => {
    if (seen.has(tool.name)) {
      throw invalid(
        at,
        `the tool name \`${tool.name}\` is given twice (a namespaced function is named \`<namespace>__<name>\` for other providers)`,
      );
    }
    seen.add(tool.name);
    tools.push(tool);
  };
  list(value, "tools").forEach((raw, i) => {
    const at = `tools[${i}]`;
    const tool = object(raw, at);
    const type = String(tool.type ?? "");
    if (type === "function" || type === "custom") add(functionTool(tool, at), at);
    else if (type === "namespace") {
      const namespace = string(tool.name, `${at}.name`);
      list(tool.tools, `${at}.tools`).forEach((inner, j) => {
        const field = `${at}.tools[${j}]`;
        add(functionTool(object(inner, field), field, namespace), field);
      });
    } else if (WEB_SEARCH.has(type)) hosted.push({ type: "web_search", field: at });
    else hosted.push({ type: "other", field: at, name: type });
  });
  return { tools, hosted };
}

/** Which tools `allowed_tools` lets the model use. */
interface Allowed {
  functions: Set<string>;
  namespaces: Set<string>;
  hosted: Set<string>;
}

function decodeChoice(value: unknown): { choice?: ToolChoice; allowed?: Allowed } {
  if (value === undefined || value === null) return {};
  if (value === "auto" || value === "none" || value === "required") {
    return { choice: { type: value } };
  }
  const choice = object(value, "tool_choice");
  if (choice.type === "function" || choice.type === "custom") {
    return {
      choice: {
        type: "tool",
        name: flatName(string(choice.name, "tool_choice.name"), choice.namespace),
      },
    };
  }
  if (choice.type === "allowed_tools") {
    const allowed: Allowed = { functions: new Set(), namespaces: new Set(), hosted: new Set() };
    list(choice.tools, "tool_choice.tools").forEach((raw, i) => {
      const tool = object(raw, `tool_choice.tools[${i}]`);
      const type = String(tool.type ?? "");
      if ((type === "function" || type === "custom") && typeof tool.name === "string") {
        allowed.functions.add(flatName(tool.name, tool.namespace));
      } else if (type === "namespace" && typeof tool.name === "string") {
        allowed.namespaces.add(tool.name);
      } else allowed.hosted.add(WEB_SEARCH.has(type) ? "web_search" : type);
    });
    return { choice: { type: choice.mode === "required" ? "required" : "auto" }, allowed };
  }
  throw inexpressible("tool_choice", `a \`${String(choice.type)}\` tool choice`, ELSEWHERE);
}

/** The tools `allowed` lets through. */
function allowedOnly(
  tools: FunctionTool[],
  hosted: HostedTool[],
  allowed: Allowed,
): { tools: FunctionTool[]; hosted: HostedTool[] } {
  return {
    tools: tools.filter((t) =>
      allowed.functions.has(t.name) || (!!t.namespace && allowed.namespaces.has(t.namespace))
    ),
    hosted: hosted.filter((h) => allowed.hosted.has(h.type === "web_search" ? h.type : h.name)),
  };
}

/** Server-side state only OpenAI holds: refused by name. */
function refuseStoredState(body: Json): void {
  if (body.conversation !== undefined && body.conversation !== null) {
    throw inexpressible("conversation", "a conversation stored by OpenAI", ELSEWHERE);
  }
  if (body.prompt !== undefined && body.prompt !== null) {
    throw inexpressible("prompt", "a prompt template stored by OpenAI", ELSEWHERE);
  }
  const logprobs = optionalNumber(body.top_logprobs, "top_logprobs");
  if (logprobs !== undefined && logprobs > 0) {
    throw inexpressible("top_logprobs", "log probabilities", ELSEWHERE);
  }
}

function decodeFormat(text: unknown): CanonicalRequest["responseFormat"] {
  if (!isObject(text) || text.format === undefined || text.format === null) return undefined;
  const format = object(text.format, "text.format");
  switch (format.type) {
    case "json_schema":
      return {
        type: "json",
        schema: object(format.schema, "text.format.schema"),
        ...(typeof format.name === "string" ? { name: format.name } : {}),
        ...(typeof format.description === "string" ? { description: format.description } : {}),
        ...(typeof format.strict === "boolean" ? { strict: format.strict } : {}),
      };
    case "json_object":
      return { type: "json" };
    case "text":
      return undefined;
    default:
      throw invalid("text.format.type", "must be text, json_object or json_schema");
  }
}

function decodeReasoning(value: unknown): CanonicalRequest["reasoning"] {
  if (!isObject(value)) return undefined;
  const effort = readEffort(value.effort);
  if (effort === "none") return { off: true };
  const summary = value.summary ?? value.generate_summary;
  const visible = summary !== undefined && summary !== null;
  if (!effort && !visible) return undefined;
  return { ...(effort ? { effort } : {}), ...(visible ? { visible } : {}) };
}

/**
 * A Responses request (validated by `schema.ts`) as canonical. `previous_response_id`, `store`,
 * `include`, `metadata`, `prompt_cache_key`, `service_tier`, `truncation` and `background` are
 * read elsewhere.
 */
export function decodeRequest(body: Json, _route: RouteInfo): CanonicalRequest {
  refuseStoredState(body);
  const system: TextPart[] = [];
  const instructions = optionalString(body.instructions, "instructions");
  if (instructions) system.push({ type: "text", text: instructions });
  const messages = decodeInput(body.input, system);
  const declared = decodeTools(body.tools);
  const { choice, allowed } = decodeChoice(body.tool_choice);
  const { tools, hosted } = allowed
    ? allowedOnly(declared.tools, declared.hosted, allowed)
    : declared;
  const parallel = optionalBoolean(body.parallel_tool_calls, "parallel_tool_calls");
  const request: CanonicalRequest = {
    system,
    messages,
    tools,
    hostedTools: hosted,
    ...(choice ? { toolChoice: choice } : {}),
    ...(parallel !== undefined ? { parallelToolCalls: parallel } : {}),
    stream: body.stream === true,
    fields: { messages: "input", tools: "tools" },
  };
  decodeSampling("responses", body, request);
  const user = optionalString(body.safety_identifier, "safety_identifier") ??
    optionalString(body.user, "user");
  if (user) request.user = user;
  const format = decodeFormat(body.text);
  if (format) request.responseFormat = format;
  const reasoning = decodeReasoning(body.reasoning);
  if (reasoning) request.reasoning = reasoning;
  return request;
}

// ---------------------------------------------------------------------------------------------
// Canonical → upstream request

/** A file name for inline file data (Responses requires one). */
function defaultFilename(mediaType: string): string {
  const ext = Object.keys(EXTENSIONS).find((e) => EXTENSIONS[e] === mediaType);
  return ext ? `file.${ext}` : "file";
}

/** A user-side part as a Responses content part. */
function inputPart(part: TextPart | FilePart, field: string): Json {
  if (part.type === "text") return { type: "input_text", text: part.text };
  if (part.mediaType.startsWith("audio/")) throw inexpressible(field, "audio input", PROTOCOL);
  if (part.mediaType.startsWith("image/")) {
    return { type: "input_image", image_url: dataUrl(part), detail: part.detail ?? "auto" };
  }
  if ("url" in part.data) return { type: "input_file", file_url: part.data.url };
  return {
    type: "input_file",
    file_data: dataUrl(part),
    filename: part.filename ?? defaultFilename(part.mediaType),
  };
}

/** A tool result's output: its text, or a list of parts when it holds files. */
function resultOutput(part: ToolResultPart, field: string): string | Json[] {
  const texts = part.content.filter((c): c is TextPart => c.type === "text");
  if (texts.length === part.content.length) {
    const text = texts.map((c) => c.text).join("\n");
    if (!part.isError || /^error\b/i.test(text)) return text;
    return text ? `Error: ${text}` : "Error";
  }
  const parts = part.content.map((c) => inputPart(c, field));
  return part.isError ? [{ type: "input_text", text: "Error:" }, ...parts] : parts;
}

/** A call as a `function_call` or `custom_tool_call` input item. */
function callInput(part: ToolCallPart): Json {
  if (part.kind === "custom") {
    const input = (part.input as { input?: unknown } | null)?.input;
    return {
      type: "custom_tool_call",
      call_id: part.id,
      name: part.name,
      input: typeof input === "string" ? input : stringifyArguments(part.input),
    };
  }
  return {
    type: "function_call",
    call_id: part.id,
    name: part.name,
    arguments: stringifyArguments(part.input),
  };
}

/** An assistant turn as items; reasoning only when `provider` encrypted it. */
function assistantItems(content: AssistantPart[], provider: string): Json[] {
  const items: Json[] = [];
  let message: Json[] | null = null;
  for (const part of content) {
    if (part.type === "text") {
      if (!part.text) continue;
      if (!message) {
        message = [];
        items.push({ type: "message", role: "assistant", content: message });
      }
      message.push({ type: "output_text", text: part.text });
      continue;
    }
    message = null;
    if (part.type === "reasoning") {
      if (!replayable(part.opaque, provider, "encrypted-reasoning")) continue;
      const opaque = part.opaque!;
      items.push({
        type: "reasoning",
        ...(opaque.itemId ? { id: opaque.itemId } : {}),
        summary: part.text ? [{ type: "summary_text", text: part.text }] : [],
        encrypted_content: opaque.value,
      });
    } else if (part.type === "tool-call") items.push(callInput(part));
    // A hosted call's record cannot be replayed: its item id would be forged.
  }
  return items;
}

function encodeInput(request: CanonicalRequest, provider: string): Json[] {
  const field = request.fields.messages;
  const items: Json[] = [];
  for (const message of request.messages) {
    switch (message.role) {
      case "system":
        if (message.content.some((p) => p.text)) {
          items.push({
            type: "message",
            role: "developer",
            content: message.content.map((p) => inputPart(p, field)),
          });
        }
        break;
      case "user":
        if (message.content.length) {
          items.push({
            type: "message",
            role: "user",
            content: message.content.map((p) => inputPart(p, field)),
          });
        }
        break;
      case "assistant":
        items.push(...assistantItems(message.content, provider));
        break;
      case "tool":
        for (const part of message.content) {
          items.push({
            type: part.kind === "custom" ? "custom_tool_call_output" : "function_call_output",
            call_id: part.id,
            output: resultOutput(part, field),
          });
        }
        break;
    }
  }
  return items;
}

function encodeTool(tool: FunctionTool): Json {
  const description = tool.description ? { description: tool.description } : {};
  if (tool.kind === "custom") return { type: "custom", name: tool.name, ...description };
  return {
    type: "function",
    name: tool.name,
    ...description,
    parameters: tool.parameters,
    strict: tool.strict ?? false,
  };
}

function encodeTools(request: CanonicalRequest): Json[] {
  const tools = request.tools.map(encodeTool);
  for (const hosted of request.hostedTools) {
    if (hosted.type !== "web_search") {
      throw inexpressible(hosted.field, `the hosted tool \`${hosted.name}\``, PROTOCOL);
    }
    tools.push({ type: "web_search" });
  }
  return tools;
}

function encodeChoice(request: CanonicalRequest): unknown {
  const choice = request.toolChoice;
  if (choice?.type !== "tool") return choice?.type;
  const custom = request.tools.find((t) => t.name === choice.name)?.kind === "custom";
  return { type: custom ? "custom" : "function", name: choice.name };
}

/** A user id as `safety_identifier` takes it (at most 64 characters: longer ones hashed). */
function safetyIdentifier(user: string): string {
  return user.length <= 64 ? user : `user_${shortHash(user)}${shortHash(`${user}#`)}`;
}

/** A canonical request as a Responses body for `target` (OpenAI, xAI). */
export function encodeRequest(request: CanonicalRequest, target: Target): Json {
  oneAnswer(request, PROTOCOL);
  if (request.stop?.length) {
    throw inexpressible(request.fields.stop ?? "stop", "stop sequences", PROTOCOL);
  }
  const body: Json = {
    model: target.model,
    input: encodeInput(request, target.provider),
    store: false,
    include: ["reasoning.encrypted_content"],
  };
  const system = request.system.map((p) => p.text).filter(Boolean).join("\n\n");
  if (system) body.instructions = system;
  const tools = encodeTools(request);
  if (tools.length) {
    body.tools = tools;
    const choice = encodeChoice(request);
    if (choice !== undefined) body.tool_choice = choice;
    if (request.parallelToolCalls !== undefined) {
      body.parallel_tool_calls = request.parallelToolCalls;
    }
  }
  const cap = request.maxOutputTokens;
  encodeSampling("responses", {
    ...request,
    maxOutputTokens: cap === undefined ? undefined : Math.max(16, cap),
  }, body);
  const format = request.responseFormat;
  if (format) {
    body.text = {
      format: format.schema
        ? {
          type: "json_schema",
          name: format.name ?? "response",
          schema: format.schema,
          strict: format.strict ?? false,
          ...(format.description ? { description: format.description } : {}),
        }
        : { type: "json_object" },
    };
  }
  const reasoning = request.reasoning;
  if (reasoning && !reasoning.off) {
    const effort = reasoning.effort ??
      (reasoning.budgetTokens ? effortFor(reasoning.budgetTokens) : undefined);
    if (effort || reasoning.visible) {
      body.reasoning = {
        ...(effort ? { effort } : {}),
        ...(reasoning.visible ? { summary: "auto" } : {}),
      };
    }
  }
  if (request.user) body.safety_identifier = safetyIdentifier(request.user);
  if (request.stream) body.stream = true;
  return body;
}

// ---------------------------------------------------------------------------------------------
// Upstream answer → canonical

/** The summary texts of an output reasoning item, joined (lenient: an upstream's answer). */
export function outputSummary(item: Json): string {
  return (Array.isArray(item.summary) ? item.summary : [])
    .flatMap((s) => isObject(s) && typeof s.text === "string" && s.text ? [s.text] : [])
    .join("\n\n");
}

/** A reasoning item's encrypted content as opaque state of `provider`. */
export function encryptedReasoning(item: Json, provider: string): Opaque | undefined {
  const value = item.encrypted_content;
  if (typeof value !== "string" || !value) return undefined;
  return {
    provider,
    kind: "encrypted-reasoning",
    value,
    ...(typeof item.id === "string" && item.id ? { itemId: item.id } : {}),
  };
}

/** A `web_search_call` item as a hosted-call part. */
export function hostedCall(item: Json): HostedCallPart {
  const action = isObject(item.action) ? item.action : {};
  return {
    type: "hosted-call",
    tool: "web_search",
    id: typeof item.id === "string" ? item.id : "",
    ...(typeof action.query === "string" ? { query: action.query } : {}),
  };
}

/** One output item as canonical parts (none for items with nothing to carry). */
export function decodeItem(item: Json, provider: string): AssistantPart[] {
  switch (item.type) {
    case "message":
      return (Array.isArray(item.content) ? item.content : []).flatMap((raw): AssistantPart[] => {
        if (!isObject(raw)) return [];
        if (raw.type === "output_text" && typeof raw.text === "string" && raw.text) {
          return [{ type: "text", text: raw.text }];
        }
        if (raw.type === "refusal" && typeof raw.refusal === "string" && raw.refusal) {
          return [{ type: "text", text: raw.refusal }];
        }
        return [];
      });
    case "reasoning": {
      const text = outputSummary(item);
      const opaque = encryptedReasoning(item, provider);
      if (!text && !opaque) return [];
      return [{ type: "reasoning", text, ...(opaque ? { opaque } : {}) }];
    }
    case "function_call":
      return [{
        type: "tool-call",
        id: String(item.call_id ?? item.id ?? ""),
        name: flatName(String(item.name ?? ""), item.namespace),
        input: parseArguments(item.arguments),
      }];
    case "custom_tool_call":
      return [{
        type: "tool-call",
        id: String(item.call_id ?? item.id ?? ""),
        name: flatName(String(item.name ?? ""), item.namespace),
        input: { input: typeof item.input === "string" ? item.input : "" },
        kind: "custom",
      }];
    case "web_search_call":
      return [hostedCall(item)];
    default:
      return [];
  }
}

/** Whether an output item is a message holding a refusal. */
export function isRefusal(item: unknown): boolean {
  return isObject(item) && Array.isArray(item.content) &&
    item.content.some((c) => isObject(c) && c.type === "refusal");
}

/** A whole Responses answer as canonical; encrypted reasoning is tagged with `provider`. */
export function decodeResponse(body: Json, provider: string): CanonicalResponse {
  const output = Array.isArray(body.output) ? body.output : [];
  const content = output.flatMap((item) => isObject(item) ? decodeItem(item, provider) : []);
  const incomplete = isObject(body.incomplete_details) ? body.incomplete_details.reason : undefined;
  const reason = decodeStatus(
    body.status,
    incomplete,
    content.some((p) => p.type === "tool-call"),
    output.some(isRefusal),
  );
  return {
    id: typeof body.id === "string" ? body.id : "",
    model: typeof body.model === "string" ? body.model : "",
    content,
    finish: {
      reason,
      ...(typeof incomplete === "string" ? { raw: incomplete } : {}),
    },
    usage: decodeTokenUsage(body.usage),
  };
}

// ---------------------------------------------------------------------------------------------
// Canonical → client answer

/** An output item id derived from the answer's id and the item's place (pure, stable). */
export function itemId(prefix: string, info: AnswerInfo, index: number): string {
  return `${prefix}_${shortHash(`${info.id}#${index}`)}${shortHash(`${index}#${info.id}`)}`;
}

/** A reasoning item for the client, its opaque state as a token. */
export function reasoningItem(
  id: string,
  text: string,
  opaque: Opaque | undefined,
  info: AnswerInfo,
): Json {
  return {
    id,
    type: "reasoning",
    summary: text ? [{ type: "summary_text", text }] : [],
    ...(opaque ? { encrypted_content: info.token(opaque, text) } : {}),
  };
}

/** A finished message item holding `text`. */
export function messageItem(id: string, text: string): Json {
  return {
    id,
    type: "message",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text, annotations: [], logprobs: [] }],
  };
}

/** Whether the client declared the called tool free-form (its call is a `custom_tool_call`). */
export function isCustomCall(part: { name: string; kind?: string }, info: AnswerInfo): boolean {
  return part.kind === "custom" || !!info.customTools?.has(part.name);
}

/** A call as the client declared its tool: custom or function, with its namespace. */
export function callItem(
  id: string,
  part: { id: string; name: string; input: unknown; kind?: string },
  info: AnswerInfo,
): Json {
  const named = info.namespaced?.get(part.name);
  const name = named ? { name: named.name, namespace: named.namespace } : { name: part.name };
  if (isCustomCall(part, info)) {
    const input = (part.input as { input?: unknown } | null)?.input;
    return {
      id,
      type: "custom_tool_call",
      status: "completed",
      call_id: part.id,
      ...name,
      input: typeof input === "string" ? input : stringifyArguments(part.input),
    };
  }
  return {
    id,
    type: "function_call",
    status: "completed",
    call_id: part.id,
    ...name,
    arguments: stringifyArguments(part.input),
  };
}

/** A finished web search record. */
export function webSearchItem(id: string, part: HostedCallPart): Json {
  return {
    id: part.id || id,
    type: "web_search_call",
    status: "completed",
    action: { type: "search", query: part.query ?? "" },
  };
}

/**
 * The response object around `output`: status and usage given by the finish (in progress
 * without one), and the echoed request fields the SDKs read, as OpenAI writes them. There is no
 * `output_text` (the SDKs compute it).
 */
export function responseObject(
  info: AnswerInfo,
  output: Json[],
  finish: CanonicalResponse["finish"] | null,
  usage: TokenUsage | null,
): Json {
  const state = finish ? encodeStatus(finish.reason) : null;
  const status = state ? state.status : "in_progress";
  return {
    id: info.id,
    object: "response",
    created_at: info.created,
    status,
    background: false,
    completed_at: status === "completed" ? info.created : null,
    error: null,
    incomplete_details: state?.incomplete ? { reason: state.incomplete } : null,
    instructions: null,
    max_output_tokens: null,
    max_tool_calls: null,
    model: info.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    prompt_cache_key: null,
    reasoning: { effort: null, summary: null },
    safety_identifier: null,
    service_tier: "default",
    store: true,
    temperature: null,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: [],
    top_logprobs: 0,
    top_p: null,
    truncation: "disabled",
    usage: usage ? encodeTokenUsage(usage) : null,
    user: null,
    metadata: {},
  };
}

/** A canonical answer as a Responses `response` object. */
export function encodeResponse(response: CanonicalResponse, info: AnswerInfo): Json {
  const output: Json[] = [];
  /** The message item consecutive text parts go into. */
  let message: Json | null = null;
  for (const part of response.content) {
    if (part.type === "text") {
      if (!part.text) continue;
      if (message) {
        const content = (message.content as Json[])[0];
        content.text = String(content.text) + part.text;
      } else {
        message = messageItem(itemId("msg", info, output.length), part.text);
        output.push(message);
      }
      continue;
    }
    message = null;
    switch (part.type) {
      case "reasoning":
        if (part.text || part.opaque) {
          output.push(
            reasoningItem(itemId("rs", info, output.length), part.text, part.opaque, info),
          );
        }
        break;
      case "tool-call":
        if (part.opaque) {
          output.push(reasoningItem(itemId("rs", info, output.length), "", part.opaque, info));
        }
        output.push(
          callItem(
            itemId(isCustomCall(part, info) ? "ctc" : "fc", info, output.length),
            part,
            info,
          ),
        );
        break;
      case "hosted-call":
        output.push(webSearchItem(itemId("ws", info, output.length), part));
        break;
    }
  }
  return responseObject(info, output, response.finish, response.usage);
}
