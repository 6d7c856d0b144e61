/**
 * A Responses request → the canonical form (pure; `openai-responses.md` §1–3, `translation.md`).
 * Policies where the formats differ:
 * - `instructions` and the system/developer items before any other item are the system prompt;
 *   later ones stay in place (system messages);
 * - reasoning items come back as reasoning parts with their opaque state: a token the gateway gave
 *   names its own item id, a native `encrypted_content` keeps the item's; a Gemini signature that
 *   rode on an empty reasoning item just before a call goes back onto the call;
 * - functions grouped in a `namespace` tool (Codex) are flattened to `<namespace>__<name>`;
 * - a free-form (`custom`) tool is a function with one string `input`, its grammar given to the
 *   model as that field's description;
 * - a tool the client runs that is not a function (`tool_search` with `execution: "client"`,
 *   `local_shell`, `shell`, `apply_patch`, the computer tools; see `tool_types.ts`) is a function
 *   of its own name; its call and output items are a call and its result, and the tools a tool
 *   search loaded are offered from then on;
 * - `tool_choice: allowed_tools` offers the model only the allowed tools, with its mode (the same
 *   effect; only OpenAI's caching of the whole list is lost);
 * - an `item_reference` to an item of an answer the gateway translated and keeps for the caller
 *   is read as that item (`references.ts`); stored state only OpenAI holds (`conversation`, a
 *   stored `prompt`, other item references, `compaction` and other hosted items), file ids and
 *   log probabilities are refused by name;
 * - `safety_identifier` (else `user`) is the end-user id; web search records a client replays are
 *   kept as hosted-call parts;
 * - the protocol caches by itself: `prompt_cache_key` and `prompt_cache_retention` are the cache
 *   intent (`translate/prompt_cache.ts`); parameter and output schemas have their keywords in one
 *   order (`translate/schema_order.ts`);
 * - options with no canonical field that change the answer — `text.verbosity`, a `service_tier`
 *   other than the default, `truncation: auto`, `max_tool_calls`, a web search's options — are
 *   not carried, and noted as adaptations (see `translate/adaptations.ts`).
 */
import {
  eachObject,
  invalid,
  isObject,
  list,
  object,
  optionalBoolean,
  optionalNumber,
  optionalString,
  string,
} from "../../http/json.ts";
import { isBaseTier } from "../../billing/price.ts";
import { type Adapt, IGNORED } from "../../translate/adaptations.ts";
import type { RouteInfo } from "../../translate/codec.ts";
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
import { fromToken, readOpaque, signaturesOntoCalls } from "../../translate/opaque.ts";
import { openAiCacheIntent } from "../../translate/prompt_cache.ts";
import { readEffort } from "../../translate/reasoning.ts";
import { decodeSampling } from "../../translate/sampling.ts";
import { parseArguments } from "../../translate/tool_ids.ts";
import { type ToolForms, toolForms } from "../../translate/tool_forms.ts";
import { hostedCall } from "./decode_response.ts";
import { mediaTypeOf } from "./file_types.ts";
import { flatName } from "./namespaces.ts";
import { type References, references } from "./references.ts";
import { type ClientForm, clientForm, formOf, isWebSearch, itemForm } from "./tool_types.ts";

const ELSEWHERE = "another protocol";

/** A part naming a file by id is refused: provider file ids are not portable. */
function refuseFileId(part: Json, at: string): void {
  if (part.file_id !== undefined && part.file_id !== null) {
    throw inexpressible(
      `${at}.file_id`,
      "a file id (provider file ids are not portable)",
      ELSEWHERE,
    );
  }
}

function imagePart(part: Json, at: string): FilePart {
  refuseFileId(part, at);
  const url = string(part.image_url, `${at}.image_url`);
  const detail = typeof part.detail === "string" ? { detail: part.detail } : {};
  const data = splitDataUrl(url);
  return data
    ? { type: "file", mediaType: data.mediaType, data: { base64: data.base64 }, ...detail }
    : { type: "file", mediaType: mediaTypeOf(url, "image/*"), data: { url }, ...detail };
}

function filePart(part: Json, at: string): FilePart {
  refuseFileId(part, at);
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
  return eachObject(content, field, (part, at): (TextPart | FilePart)[] => {
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
  }).flat();
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
  return eachObject(
    summary,
    field,
    (part) => typeof part.text === "string" && part.text ? [part.text] : [],
  ).flat().join("\n\n");
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

/** The content of the turns input items add to. */
interface Turns {
  assistant: AssistantPart[];
  tool: ToolResultPart[];
}

/** A tool declaration found in the input (loaded by a tool search), with where it stands. */
interface Loaded {
  tool: unknown;
  at: string;
}

/** A call item of a client-run tool that is not a function, as a canonical call. */
function clientCall(item: Json, at: string, form: ClientForm): ToolCallPart {
  if (typeof item.call_id !== "string" || !item.call_id) {
    // A tool search OpenAI ran itself has no call id: nothing of it can be replayed elsewhere.
    throw inexpressible(at, `a \`${form.call}\` item the provider ran`, ELSEWHERE);
  }
  return { type: "tool-call", id: item.call_id, name: form.name, input: form.input(item, at) };
}

/**
 * The input items (or the input string) as canonical messages; the tools the client's tool
 * searches loaded go into `loaded`.
 */
function decodeInput(
  input: unknown,
  system: TextPart[],
  loaded: Loaded[],
  referred: References,
): Message[] {
  if (typeof input === "string") {
    return input ? [{ role: "user", content: [{ type: "text", text: input }] }] : [];
  }
  const messages: Message[] = [];
  /** Call names by call id, for the results (Gemini needs them). */
  const names = new Map<string, string>();
  /** The content of the last message when it is of `role`, else of a new one. */
  const turn = <R extends keyof Turns>(role: R): Turns[R] => {
    const last = messages.at(-1);
    if (last?.role === role) return last.content as Turns[R];
    const content = [] as Turns[R];
    messages.push({ role, content } as Message);
    return content;
  };
  const assistant = () => turn("assistant");
  /** One item, at `at` (a referred item at its reference's place). */
  const addItem = (item: Json, at: string): void => {
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
        turn("tool").push({
          type: "tool-result",
          id,
          ...(name ? { name } : {}),
          content: resultContent(item.output, `${at}.output`),
          ...(type === "custom_tool_call_output" ? { kind: "custom" as const } : {}),
        });
        return;
      }
      case "web_search_call":
        assistant().push(hostedCall(item));
        return;
      case "item_reference":
        return addItem(referred(item, at), at);
    }
    const client = itemForm(String(type));
    if (client?.role === "call") {
      const call = clientCall(item, at, client.form);
      names.set(call.id, call.name);
      assistant().push(call);
    } else if (client) {
      const { form } = client;
      const id = form.answers ? form.answers(item) : item.call_id;
      if (typeof id !== "string" || !id) {
        throw inexpressible(at, `a \`${form.output}\` item the provider made`, ELSEWHERE);
      }
      const { output, isError } = form.result(item, at);
      turn("tool").push({
        type: "tool-result",
        id,
        name: form.name,
        content: resultContent(output, `${at}.output`),
        ...(isError ? { isError } : {}),
      });
      form.loads?.(item).forEach((tool, j) => loaded.push({ tool, at: `${at}.tools[${j}]` }));
    } else throw inexpressible(at, `a \`${String(type)}\` item`, ELSEWHERE);
  };
  list(input, "input").forEach((raw, i) => addItem(object(raw, `input[${i}]`), `input[${i}]`));
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

/** A client-run tool that is not a function, as the function other protocols are offered. */
function clientFunction(tool: Json, form: ClientForm): FunctionTool {
  const { description, parameters } = form.declare(tool);
  return {
    name: form.name,
    description,
    parameters,
    clientType: String(tool.type),
  };
}

/** A request's tools: the functions the client runs, and the hosted tools. */
interface Tools {
  tools: FunctionTool[];
  hosted: HostedTool[];
}

/**
 * The tools declared in `value` (`tools`), and those the client's tool searches loaded —
 * callable from then on; one already declared is not added twice.
 */
function decodeTools(value: unknown, loaded: Loaded[]): { declared: Tools; loaded: Tools } {
  const declared: Tools = { tools: [], hosted: [] };
  const found: Tools = { tools: [], hosted: [] };
  let out = declared;
  const seen = new Set<string>();
  const add = (tool: FunctionTool, at: string) => {
    if (seen.has(tool.name)) {
      if (out === found) return;
      throw invalid(
        at,
        `the tool name \`${tool.name}\` is given twice (a namespaced function is named \`<namespace>__<name>\` for other providers)`,
      );
    }
    seen.add(tool.name);
    out.tools.push(tool);
  };
  const declare = (raw: unknown, at: string) => {
    const tool = object(raw, at);
    const type = String(tool.type ?? "");
    const form = clientForm(tool);
    if (type === "function" || type === "custom") add(functionTool(tool, at), at);
    else if (type === "namespace") {
      const namespace = string(tool.name, `${at}.name`);
      list(tool.tools, `${at}.tools`).forEach((inner, j) => {
        const field = `${at}.tools[${j}]`;
        add(functionTool(object(inner, field), field, namespace), field);
      });
    } else if (form) add(clientFunction(tool, form), at);
    else if (isWebSearch(type)) out.hosted.push({ type: "web_search", field: at });
    else out.hosted.push({ type: "other", field: at, name: type });
  };
  list(value, "tools").forEach((raw, i) => declare(raw, `tools[${i}]`));
  out = found;
  for (const { tool, at } of loaded) declare(tool, at);
  return { declared, loaded: found };
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
  // A client-run tool that is not a function is forced as the function it is offered as.
  const form = formOf(String(choice.type));
  if (form) return { choice: { type: "tool", name: form.name } };
  if (choice.type === "allowed_tools") {
    const allowed: Allowed = { functions: new Set(), namespaces: new Set(), hosted: new Set() };
    eachObject(choice.tools, "tool_choice.tools", (tool) => {
      const type = String(tool.type ?? "");
      if ((type === "function" || type === "custom") && typeof tool.name === "string") {
        allowed.functions.add(flatName(tool.name, tool.namespace));
      } else if (type === "namespace" && typeof tool.name === "string") {
        allowed.namespaces.add(tool.name);
      } else allowed.hosted.add(isWebSearch(type) ? "web_search" : formOf(type)?.name ?? type);
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
      allowed.functions.has(t.name) || (!!t.namespace && allowed.namespaces.has(t.namespace)) ||
      (!!t.clientType && allowed.hosted.has(t.name))
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

/** Notes the options of `body` the canonical form does not carry (see the module's doc). */
function noteUncarried(body: Json, adapt: Adapt): void {
  if (isObject(body.text) && body.text.verbosity !== undefined && body.text.verbosity !== null) {
    adapt("hint_dropped", "text.verbosity");
  }
  if (typeof body.service_tier === "string" && !isBaseTier(body.service_tier)) {
    adapt("hint_dropped", "service_tier");
  }
  if (body.truncation === "auto") adapt("hint_dropped", "truncation");
  if (body.max_tool_calls !== undefined && body.max_tool_calls !== null) {
    adapt("hint_dropped", "max_tool_calls");
  }
  if (!Array.isArray(body.tools)) return;
  body.tools.forEach((tool, i) => {
    if (!isObject(tool) || !isWebSearch(String(tool.type))) return;
    if (Object.entries(tool).some(([k, v]) => k !== "type" && v !== undefined && v !== null)) {
      adapt("search_options_dropped", `tools[${i}]`);
    }
  });
}

/**
 * A Responses request (validated by `schema.ts`) as canonical. `previous_response_id`, `store`,
 * `include`, `metadata`, `service_tier`, `truncation` and `background` are read elsewhere.
 */
export function decodeRequest(
  body: Json,
  route: RouteInfo,
  adapt: Adapt = IGNORED,
): CanonicalRequest {
  refuseStoredState(body);
  const system: TextPart[] = [];
  const instructions = optionalString(body.instructions, "instructions");
  if (instructions) system.push({ type: "text", text: instructions });
  const loaded: Loaded[] = [];
  // Items referred to are written again in the forms of the tools the request declares.
  let forms: ToolForms | undefined;
  const referred = references(
    route,
    () => forms ??= toolForms(decodeTools(body.tools, []).declared.tools),
  );
  const messages = decodeInput(body.input, system, loaded, referred);
  const { choice, allowed } = decodeChoice(body.tool_choice);
  const { declared, loaded: found } = decodeTools(body.tools, loaded);
  const offered = allowed ? allowedOnly(declared.tools, declared.hosted, allowed) : declared;
  // What the client's tool searches loaded is callable besides.
  const tools = [...offered.tools, ...found.tools];
  const hosted = [...offered.hosted, ...found.hosted];
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
    cache: openAiCacheIntent(body),
  };
  decodeSampling("responses", body, request);
  const identifier = optionalString(body.safety_identifier, "safety_identifier");
  const user = identifier ?? optionalString(body.user, "user");
  if (user) {
    request.user = user;
    request.fields.user = identifier ? "safety_identifier" : "user";
  }
  noteUncarried(body, adapt);
  const format = decodeFormat(body.text);
  if (format) {
    request.responseFormat = format;
    request.fields.responseFormat = "text.format";
  }
  const reasoning = decodeReasoning(body.reasoning);
  if (reasoning) {
    request.reasoning = reasoning;
    request.fields.reasoning = "reasoning";
  }
  return request;
}
