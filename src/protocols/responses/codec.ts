/**
 * Responses ⇄ canonical, for requests and whole answers (pure; `openai-responses.md`,
 * `translation.md`). Policies where the formats differ:
 * - `instructions` and leading system/developer items are the system prompt; later ones stay in
 *   place (sent upstream as `developer` items);
 * - calls go upstream stateless: `store: false` with `include: ["reasoning.encrypted_content"]`,
 *   so reasoning is carried in the items themselves and replayed only to the provider that
 *   encrypted it; an Anthropic signature or a Gemini thought signature reaches a Responses client
 *   as the `encrypted_content` of a reasoning item (a Gemini signature on a call rides on a
 *   reasoning item just before the call);
 * - functions grouped in a `namespace` tool are flattened to `<namespace>__<name>`, and a call
 *   comes back to the client with its `namespace` and own `name`;
 * - a free-form (`custom`) tool is a function with one string `input` elsewhere, and its calls
 *   come back as `custom_tool_call`s;
 * - Responses has no stop sequences (refused by name); `top_k`, `seed` and the penalties have no
 *   field and are not sent; `max_output_tokens` is at least 16;
 * - hosted web search items a foreign provider made are kept for the client, never sent upstream
 *   (their ids cannot be forged).
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
  Opaque,
  TextPart,
  TokenUsage,
  ToolCallPart,
  ToolChoice,
  ToolResultPart,
} from "../../translate/ir.ts";
import { fromResponses, toResponses } from "../../translate/finish.ts";
import { fromToken, readOpaque, replayable } from "../../translate/opaque.ts";
import { effortFor, readEffort } from "../../translate/reasoning.ts";
import { parseArguments, shortHash, stringifyArguments } from "../../translate/tool_ids.ts";
import {
  inexpressible,
  invalid,
  isObject,
  list,
  object,
  optionalNumber,
  optionalString,
  splitDataUrl,
  string,
} from "../../translate/read.ts";

const PROTOCOL = "the Responses protocol";

const CUSTOM_INPUT = {
  type: "object",
  properties: { input: { type: "string" } },
  required: ["input"],
};

const WEB_SEARCH = new Set(["web_search", "web_search_preview", "web_search_2025_08_26"]);

// ---------------------------------------------------------------------------------------------
// Client request → canonical

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
      case "input_image": {
        if (part.file_id !== undefined && part.file_id !== null) {
          throw inexpressible(`${at}.file_id`, "a file id", "another protocol");
        }
        const url = string(part.image_url, `${at}.image_url`);
        const detail = typeof part.detail === "string" ? { detail: part.detail } : {};
        const data = splitDataUrl(url);
        return [
          data
            ? { type: "file", mediaType: data.mediaType, data: { base64: data.base64 }, ...detail }
            : { type: "file", mediaType: "image/*", data: { url }, ...detail },
        ];
      }
      case "input_file": {
        if (part.file_id !== undefined && part.file_id !== null) {
          throw inexpressible(`${at}.file_id`, "a file id", "another protocol");
        }
        const filename = typeof part.filename === "string" ? { filename: part.filename } : {};
        if (typeof part.file_url === "string") {
          return [{
            type: "file",
            mediaType: "application/pdf",
            data: { url: part.file_url },
            ...filename,
          }];
        }
        const data = splitDataUrl(string(part.file_data, `${at}.file_data`));
        if (!data) throw invalid(`${at}.file_data`, "must be a base64 data URL");
        return [{
          type: "file",
          mediaType: data.mediaType,
          data: { base64: data.base64 },
          ...filename,
        }];
      }
      default:
        throw invalid(`${at}.type`, "must be input_text, input_image or input_file");
    }
  });
}

function outputText(output: unknown, field: string): (TextPart | FilePart)[] {
  if (typeof output === "string") return [{ type: "text", text: output }];
  return contentParts(output, field);
}

/** The flattened name of a function called with a `namespace`. */
function flatName(name: string, namespace: unknown): string {
  return typeof namespace === "string" && namespace ? `${namespace}__${name}` : name;
}

/** The input items as canonical messages. */
function decodeInput(input: unknown, system: TextPart[]): Message[] {
  if (typeof input === "string") {
    return input ? [{ role: "user", content: [{ type: "text", text: input }] }] : [];
  }
  const messages: Message[] = [];
  /** Opaque state of a thought signature, waiting for the call it belongs to. */
  let pendingCallOpaque: Opaque | undefined;
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
          const text = contentParts(item.content, `${at}.content`)
            .flatMap((p) => p.type === "text" ? [p] : []);
          if (!messages.length) system.push(...text);
          else if (text.length) messages.push({ role: "system", content: text });
        } else if (role === "assistant") {
          const parts = contentParts(item.content, `${at}.content`);
          assistant().push(...parts.flatMap((p) => p.type === "text" ? [p] : []));
        } else if (role === "user") {
          messages.push({ role: "user", content: contentParts(item.content, `${at}.content`) });
        } else throw invalid(`${at}.role`, "must be user, assistant, system or developer");
        return;
      }
      case "reasoning": {
        const token = fromToken(item.encrypted_content);
        const opaque = token?.opaque ?? readOpaque(item.encrypted_content, "encrypted-reasoning");
        if (opaque?.kind === "thought-signature") {
          pendingCallOpaque = opaque;
          return;
        }
        const summary = list(item.summary, `${at}.summary`).map((s, j) =>
          string(object(s, `${at}.summary[${j}]`).text, `${at}.summary[${j}].text`)
        ).join("\n\n");
        const withId = opaque && !opaque.itemId && typeof item.id === "string"
          ? { ...opaque, itemId: item.id }
          : opaque;
        if (!summary && !withId) return;
        assistant().push({
          type: "reasoning",
          text: token?.text ?? summary,
          ...(withId ? { opaque: withId } : {}),
        });
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
          ...(pendingCallOpaque ? { opaque: pendingCallOpaque } : {}),
        };
        pendingCallOpaque = undefined;
        assistant().push(call);
        return;
      }
      case "function_call_output":
      case "custom_tool_call_output":
        results().push({
          type: "tool-result",
          id: string(item.call_id, `${at}.call_id`),
          content: outputText(item.output, `${at}.output`),
          ...(type === "custom_tool_call_output" ? { kind: "custom" as const } : {}),
        });
        return;
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
        throw inexpressible(`${at}.type`, `a \`${String(type)}\` item`, "another protocol");
    }
  });
  return messages;
}

function functionTool(tool: Json, at: string, namespace?: string): FunctionTool {
  const name = string(tool.name, `${at}.name`);
  const description = typeof tool.description === "string" ? { description: tool.description } : {};
  const ns = namespace ? { namespace } : {};
  if (tool.type === "custom") {
    return {
      name: flatName(name, namespace),
      ...description,
      parameters: CUSTOM_INPUT,
      kind: "custom",
      ...ns,
    };
  }
  return {
    name: flatName(name, namespace),
    ...description,
    parameters: isObject(tool.parameters) ? tool.parameters : { type: "object", properties: {} },
    ...(typeof tool.strict === "boolean" ? { strict: tool.strict } : {}),
    ...ns,
  };
}

function decodeTools(body: Json): { tools: FunctionTool[]; hosted: HostedTool[] } {
  const tools: FunctionTool[] = [];
  const hosted: HostedTool[] = [];
  list(body.tools, "tools").forEach((raw, i) => {
    const at = `tools[${i}]`;
    const tool = object(raw, at);
    const type = String(tool.type ?? "");
    if (type === "function" || type === "custom") tools.push(functionTool(tool, at));
    else if (type === "namespace") {
      const namespace = string(tool.name, `${at}.name`);
      list(tool.tools, `${at}.tools`).forEach((inner, j) =>
        tools.push(functionTool(object(inner, `${at}.tools[${j}]`), `${at}.tools[${j}]`, namespace))
      );
    } else if (WEB_SEARCH.has(type)) hosted.push({ type: "web_search", field: at });
    else hosted.push({ type: "other", field: at, name: type });
  });
  return { tools, hosted };
}

function decodeChoice(value: unknown): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === "auto" || value === "none" || value === "required") return { type: value };
  const choice = object(value, "tool_choice");
  if (choice.type === "function" || choice.type === "custom") {
    return {
      type: "tool",
      name: flatName(string(choice.name, "tool_choice.name"), choice.namespace),
    };
  }
  if (choice.type === "allowed_tools") {
    // The closest the other protocols come: the mode, with every offered tool allowed.
    return { type: choice.mode === "required" ? "required" : "auto" };
  }
  throw inexpressible(
    "tool_choice",
    `a \`${String(choice.type)}\` tool choice`,
    "another protocol",
  );
}

/** A Responses request (validated by `schema.ts`) as canonical. */
export function decodeRequest(body: Json, _route: RouteInfo): CanonicalRequest {
  if (body.conversation !== undefined && body.conversation !== null) {
    throw inexpressible("conversation", "a stored conversation", "another protocol");
  }
  if (typeof body.top_logprobs === "number" && body.top_logprobs > 0) {
    throw inexpressible("top_logprobs", "log probabilities", "another protocol");
  }
  const system: TextPart[] = [];
  const instructions = optionalString(body.instructions, "instructions");
  if (instructions) system.push({ type: "text", text: instructions });
  const messages = decodeInput(body.input, system);
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
    fields: { messages: "input", tools: "tools" },
  };
  const cap = optionalNumber(body.max_output_tokens, "max_output_tokens");
  if (cap !== undefined) request.maxOutputTokens = cap;
  const temperature = optionalNumber(body.temperature, "temperature");
  if (temperature !== undefined) request.temperature = temperature;
  const topP = optionalNumber(body.top_p, "top_p");
  if (topP !== undefined) request.topP = topP;
  const user = optionalString(body.safety_identifier, "safety_identifier") ??
    optionalString(body.user, "user");
  if (user) request.user = user;
  const text = isObject(body.text) ? body.text : {};
  if (isObject(text.format)) {
    const format = text.format;
    if (format.type === "json_schema") {
      request.responseFormat = {
        type: "json",
        ...(isObject(format.schema) ? { schema: format.schema } : {}),
        ...(typeof format.name === "string" ? { name: format.name } : {}),
        ...(typeof format.description === "string" ? { description: format.description } : {}),
        ...(typeof format.strict === "boolean" ? { strict: format.strict } : {}),
      };
    } else if (format.type === "json_object") request.responseFormat = { type: "json" };
    else if (format.type !== "text") {
      throw invalid("text.format.type", "must be text, json_object or json_schema");
    }
  }
  if (isObject(body.reasoning)) {
    const effort = readEffort(body.reasoning.effort);
    const visible = body.reasoning.summary !== undefined && body.reasoning.summary !== null;
    if (effort === "none") request.reasoning = { off: true };
    else if (effort || visible) {
      request.reasoning = { ...(effort ? { effort } : {}), ...(visible ? { visible } : {}) };
    }
  }
  return request;
}

// ---------------------------------------------------------------------------------------------
// Canonical → upstream request

function dataUrl(part: FilePart): string {
  return "base64" in part.data
    ? `data:${part.mediaType};base64,${part.data.base64}`
    : part.data.url;
}

function inputPart(part: TextPart | FilePart, role: "user" | "assistant", field = "input"): Json {
  if (part.type === "text") {
    return { type: role === "assistant" ? "output_text" : "input_text", text: part.text };
  }
  if (part.mediaType.startsWith("audio/")) {
    throw inexpressible(field, "audio input", PROTOCOL);
  }
  if (part.mediaType.startsWith("image/")) {
    return { type: "input_image", image_url: dataUrl(part), detail: part.detail ?? "auto" };
  }
  if ("url" in part.data) return { type: "input_file", file_url: part.data.url };
  return { type: "input_file", file_data: dataUrl(part), filename: part.filename ?? "file.pdf" };
}

function encodeInput(request: CanonicalRequest, provider: string): Json[] {
  const items: Json[] = [];
  for (const message of request.messages) {
    switch (message.role) {
      case "system":
        items.push({
          type: "message",
          role: "developer",
          content: message.content.map((p) => inputPart(p, "user")),
        });
        break;
      case "user":
        if (message.content.length) {
          items.push({
            type: "message",
            role: "user",
            content: message.content.map((p) => inputPart(p, "user", request.fields.messages)),
          });
        }
        break;
      case "assistant":
        for (const part of message.content) {
          if (part.type === "text" && part.text) {
            items.push({
              type: "message",
              role: "assistant",
              content: [{ type: "output_text", text: part.text }],
            });
          } else if (part.type === "reasoning") {
            if (!replayable(part.opaque, provider, "encrypted-reasoning")) continue;
            items.push({
              type: "reasoning",
              ...(part.opaque!.itemId ? { id: part.opaque!.itemId } : {}),
              summary: part.text ? [{ type: "summary_text", text: part.text }] : [],
              encrypted_content: part.opaque!.value,
            });
          } else if (part.type === "tool-call") {
            items.push(
              part.kind === "custom"
                ? {
                  type: "custom_tool_call",
                  call_id: part.id,
                  name: part.name,
                  input: String((part.input as { input?: unknown })?.input ?? ""),
                }
                : {
                  type: "function_call",
                  call_id: part.id,
                  name: part.name,
                  arguments: stringifyArguments(part.input),
                },
            );
          }
        }
        break;
      case "tool":
        for (const part of message.content) {
          const onlyText = part.content.every((c) => c.type === "text");
          const text = part.content.map((c) => c.type === "text" ? c.text : "").join("\n");
          items.push({
            type: part.kind === "custom" ? "custom_tool_call_output" : "function_call_output",
            call_id: part.id,
            output: onlyText
              ? (part.isError && !/^error\b/i.test(text) ? `Error: ${text}` : text)
              : part.content.map((c) => inputPart(c, "user")),
          });
        }
        break;
    }
  }
  return items;
}

function encodeTool(tool: FunctionTool): Json {
  if (tool.kind === "custom") {
    return {
      type: "custom",
      name: tool.name,
      ...(tool.description ? { description: tool.description } : {}),
    };
  }
  return {
    type: "function",
    name: tool.name,
    ...(tool.description ? { description: tool.description } : {}),
    parameters: tool.parameters,
    strict: tool.strict ?? false,
  };
}

/** A canonical request as a Responses body for `target`. */
export function encodeRequest(request: CanonicalRequest, target: Target): Json {
  if ((request.choices ?? 1) > 1) {
    throw inexpressible(request.fields.choices ?? "n", "more than one answer per call", PROTOCOL);
  }
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
  const tools: Json[] = request.tools.map(encodeTool);
  for (const hosted of request.hostedTools) {
    if (hosted.type !== "web_search") {
      throw inexpressible(hosted.field, "this hosted tool", PROTOCOL);
    }
    tools.push({ type: "web_search" });
  }
  if (tools.length) {
    body.tools = tools;
    const choice = request.toolChoice;
    if (choice) {
      body.tool_choice = choice.type === "tool"
        ? {
          type: request.tools.find((t) => t.name === choice.name)?.kind === "custom"
            ? "custom"
            : "function",
          name: choice.name,
        }
        : choice.type;
    }
    if (request.parallelToolCalls === false) body.parallel_tool_calls = false;
  }
  if (request.maxOutputTokens !== undefined) {
    body.max_output_tokens = Math.max(16, request.maxOutputTokens);
  }
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
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
    body.reasoning = {
      ...(effort ? { effort } : {}),
      ...(reasoning.visible ? { summary: "auto" } : {}),
    };
  }
  if (request.user) body.safety_identifier = request.user;
  if (request.stream) body.stream = true;
  return body;
}

// ---------------------------------------------------------------------------------------------
// Upstream answer → canonical

const int = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;

/** A Responses `usage` as canonical usage (`input_tokens` includes cached tokens). */
export function usageFromResponses(raw: unknown): TokenUsage {
  const u = isObject(raw) ? raw : {};
  const input = isObject(u.input_tokens_details) ? u.input_tokens_details : {};
  const output = isObject(u.output_tokens_details) ? u.output_tokens_details : {};
  return {
    input: int(u.input_tokens),
    cacheRead: int(input.cached_tokens),
    cacheWrite: int(input.cache_write_tokens),
    output: int(u.output_tokens),
    reasoning: int(output.reasoning_tokens),
  };
}

/** One output item as canonical parts (empty for items with nothing to carry). */
export function decodeItem(item: Json, provider: string): AssistantPart[] {
  switch (item.type) {
    case "message":
      return (Array.isArray(item.content) ? item.content : []).flatMap((raw): AssistantPart[] => {
        if (!isObject(raw)) return [];
        if (raw.type === "output_text" && typeof raw.text === "string") {
          return [{ type: "text", text: raw.text }];
        }
        if (raw.type === "refusal" && typeof raw.refusal === "string") {
          return [{ type: "text", text: raw.refusal }];
        }
        return [];
      });
    case "reasoning": {
      const text = (Array.isArray(item.summary) ? item.summary : [])
        .flatMap((s) => isObject(s) && typeof s.text === "string" ? [s.text] : []).join("\n\n");
      const encrypted = typeof item.encrypted_content === "string" ? item.encrypted_content : "";
      if (!text && !encrypted) return [];
      return [{
        type: "reasoning",
        text,
        ...(encrypted
          ? {
            opaque: {
              provider,
              kind: "encrypted-reasoning" as const,
              value: encrypted,
              ...(typeof item.id === "string" ? { itemId: item.id } : {}),
            },
          }
          : {}),
      }];
    }
    case "function_call":
      return [{
        type: "tool-call",
        id: String(item.call_id ?? ""),
        name: flatName(String(item.name ?? ""), item.namespace),
        input: parseArguments(item.arguments),
      }];
    case "custom_tool_call":
      return [{
        type: "tool-call",
        id: String(item.call_id ?? ""),
        name: flatName(String(item.name ?? ""), item.namespace),
        input: { input: String(item.input ?? "") },
        kind: "custom",
      }];
    case "web_search_call": {
      const action = isObject(item.action) ? item.action : {};
      return [{
        type: "hosted-call",
        tool: "web_search",
        id: String(item.id ?? ""),
        ...(typeof action.query === "string" ? { query: action.query } : {}),
      }];
    }
    default:
      return [];
  }
}

/** A whole Responses answer as canonical. */
export function decodeResponse(body: Json, provider: string): CanonicalResponse {
  const content = (Array.isArray(body.output) ? body.output : [])
    .flatMap((item) => isObject(item) ? decodeItem(item, provider) : []);
  const incomplete = isObject(body.incomplete_details) ? body.incomplete_details.reason : undefined;
  const refused = (Array.isArray(body.output) ? body.output : []).some((item) =>
    isObject(item) && Array.isArray(item.content) &&
    item.content.some((c) => isObject(c) && c.type === "refusal")
  );
  const reason = refused ? "content-filter" : fromResponses(
    body.status,
    incomplete,
    content.some((p) => p.type === "tool-call"),
  );
  return {
    id: typeof body.id === "string" ? body.id : "",
    model: typeof body.model === "string" ? body.model : "",
    content,
    finish: { reason, ...(typeof incomplete === "string" ? { raw: incomplete } : {}) },
    usage: usageFromResponses(body.usage),
  };
}

// ---------------------------------------------------------------------------------------------
// Canonical → client answer

/** Canonical usage in the Responses shape. */
export function encodeUsage(usage: TokenUsage): Json {
  return {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: usage.cacheRead },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: usage.reasoning },
    total_tokens: usage.input + usage.output,
  };
}

/** An item id derived from the answer's id and the item's place (pure, stable). */
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

/** A call as the client declared it: custom or function, with its namespace. */
export function callItem(
  id: string,
  part: { id: string; name: string; input: unknown; kind?: string },
  info: AnswerInfo,
): Json {
  const named = info.namespaced?.get(part.name);
  const name = named ? { name: named.name, namespace: named.namespace } : { name: part.name };
  if (part.kind === "custom" || info.customTools?.has(part.name)) {
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

/** The response object around `output` (status and usage given by the finish). */
export function responseObject(
  info: AnswerInfo,
  output: Json[],
  finish: CanonicalResponse["finish"] | null,
  usage: TokenUsage | null,
): Json {
  const state = finish ? toResponses(finish.reason) : null;
  return {
    id: info.id,
    object: "response",
    created_at: info.created,
    status: state ? state.status : "in_progress",
    error: null,
    incomplete_details: state?.incomplete ? { reason: state.incomplete } : null,
    instructions: null,
    max_output_tokens: null,
    model: info.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: true,
    temperature: null,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: [],
    top_p: null,
    truncation: "disabled",
    usage: usage ? encodeUsage(usage) : null,
    metadata: {},
  };
}

/** A canonical answer as a Responses `response`. */
export function encodeResponse(response: CanonicalResponse, info: AnswerInfo): Json {
  const output: Json[] = [];
  let text: Json | null = null;
  for (const part of response.content) {
    const index = output.length;
    switch (part.type) {
      case "text": {
        if (!part.text) break;
        if (!text) {
          text = {
            id: itemId("msg", info, index),
            type: "message",
            status: "completed",
            role: "assistant",
            content: [],
          };
          output.push(text);
        }
        const parts = text.content as Json[];
        if (parts.length) parts[0].text += part.text;
        else parts.push({ type: "output_text", text: part.text, annotations: [], logprobs: [] });
        break;
      }
      case "reasoning":
        text = null;
        output.push(reasoningItem(itemId("rs", info, index), part.text, part.opaque, info));
        break;
      case "tool-call":
        text = null;
        if (part.opaque) {
          output.push(reasoningItem(itemId("rs", info, index), "", part.opaque, info));
        }
        output.push(callItem(itemId("fc", info, output.length), part, info));
        break;
      case "hosted-call":
        text = null;
        output.push({
          id: part.id || itemId("ws", info, index),
          type: "web_search_call",
          status: "completed",
          action: { type: "search", query: part.query ?? "" },
        });
        break;
    }
  }
  return responseObject(info, output, response.finish, response.usage);
}
