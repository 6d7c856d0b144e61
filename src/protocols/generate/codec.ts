/**
 * generateContent ⇄ canonical, for requests and whole answers (pure; `gemini.md`,
 * `translation.md`). Policies where the formats differ:
 * - field names are read in both spellings the REST API takes (`systemInstruction` and
 *   `system_instruction`…) and written in camelCase; the model goes in the path, never the body;
 * - consecutive `model` contents (an SDK records a streamed answer as one content per chunk) are
 *   one assistant turn; adjacent text (or thought) parts join, a signature ending the part it
 *   closes, as the stream decoder does;
 * - Gemini calls often carry no id: one is synthesised from where the call stands (so the same
 *   history gives the same ids), a `functionResponse` without id answers the earliest unanswered
 *   call of its name in the model turn before it, and ids are never sent upstream (Gemini matches
 *   results by name and order);
 * - a turn of results becomes a tool message; text of the same turn follows it as a user message;
 * - tool results are `functionResponse` parts whose `response` is the result's JSON object when it
 *   is one, else `{result: text}` (`{error: text}` for a failed call); read back, `{result}` and
 *   `{output}` give their string, `{error}` marks a failure; files of a result follow as
 *   `inlineData`/`fileData` parts in the same turn;
 * - system messages inside the conversation are hoisted into `systemInstruction`;
 * - thought signatures are replayed only to the provider that issued them; on Gemini 3 models
 *   (anything not named `gemini-1…`/`gemini-2…`) the first call of a model turn without one gets
 *   Google's documented `skip_thought_signature_validator`. State of another provider (an
 *   Anthropic thinking signature, Responses encrypted reasoning) reaches a Gemini client as the
 *   `thoughtSignature` of the call its reasoning precedes, else of the thought part itself, and is
 *   read back as a reasoning part before the part it rode on;
 * - parameter schemas are cleaned to Gemini's subset (`json_schema.ts`); a client's OpenAPI-style
 *   schemas (`"OBJECT"`, `nullable`) are read as JSON Schema; structured output is sent as
 *   `responseJsonSchema`;
 * - `mode: ANY` with several `allowedFunctionNames` is read as "some tool must be called" (the
 *   canonical choice names one tool or none); `VALIDATED` is read as `auto`;
 * - not carried (hints with no field on the other side): `safetySettings`, `labels`,
 *   `mediaResolution`, `toolConfig.retrievalConfig`, a web search's `maxUses`, image `detail`,
 *   file names, `parallel_tool_calls: false` and end-user ids; records of hosted work
 *   (`hosted-call` parts) are not sent. Refused by name: code execution parts, files in a model
 *   turn, output other than text, log probabilities, speech and image configuration, hosted tools
 *   other than Google Search, more than one candidate, more than five stop sequences.
 */
import type { AnswerInfo, RouteInfo, Target } from "../../translate/codec.ts";
import type {
  AssistantPart,
  CanonicalRequest,
  CanonicalResponse,
  Effort,
  FilePart,
  FunctionTool,
  HostedTool,
  Json,
  Message,
  Opaque,
  TextPart,
  ToolChoice,
  ToolResultPart,
} from "../../translate/ir.ts";
import { geminiSchema, isEmptyObjectSchema } from "../../translate/json_schema.ts";
import { fromToken, readOpaque, replayable } from "../../translate/opaque.ts";
import { budgetFor } from "../../translate/reasoning.ts";
import { parseArguments, synthesizeId } from "../../translate/tool_ids.ts";
import { decodeFinishReason, encodeFinishReason } from "./finish_reason.ts";
import { splitDataUrl } from "../../translate/data_url.ts";
import { invalid, isObject, list, object, optionalNumber, string } from "../../http/json.ts";
import { inexpressible } from "../../translate/inexpressible.ts";
import { decodeSampling, encodeSampling, oneAnswer } from "../../translate/sampling.ts";
import { decodeTokenUsage, encodeTokenUsage } from "./token_usage.ts";

const PROTOCOL = "the generateContent protocol";
const ELSEWHERE = "another protocol";

/** Google's documented signature for calls whose history came from elsewhere (Gemini 3). */
export const SKIP_SIGNATURE = "skip_thought_signature_validator";

/** Models that take thinking budgets and need no thought signatures (Gemini 1.x and 2.x). */
const OLDER = /gemini-(1|2)(\.|-)/;

/** A field in either spelling (camelCase wins when both are present). */
function field(value: Json, camel: string): unknown {
  if (value[camel] !== undefined) return value[camel];
  return value[camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)];
}

const present = (value: unknown) => value !== undefined && value !== null;

/** Keys of a part that carry no data of their own. */
const MARKS = new Set(["thought", "thoughtSignature", "thought_signature"]);

/** Whether a part has a data field (anything besides its thought marks). */
const hasData = (part: Json) =>
  Object.entries(part).some(([key, value]) => present(value) && !MARKS.has(key));

/** A non-empty string, or undefined. */
const nonEmpty = (value: unknown) => typeof value === "string" && value ? value : undefined;

// ---------------------------------------------------------------------------------------------
// OpenAPI-style schemas (function `parameters`, `responseSchema`) as JSON Schema

/** Keys whose value is a map of schemas. */
const SCHEMA_MAPS = new Set(["properties", "$defs", "definitions", "patternProperties"]);
/** Keys whose value is one schema or a list of schemas. */
const SCHEMA_KEYS = new Set([
  "items",
  "anyOf",
  "oneOf",
  "allOf",
  "not",
  "prefixItems",
  "additionalProperties",
]);

function typeName(value: unknown): unknown {
  if (typeof value === "string") return value.toLowerCase();
  return Array.isArray(value) ? value.map(typeName) : value;
}

/**
 * A schema in Gemini's OpenAPI dialect as JSON Schema: upper-case type names lower-cased,
 * `nullable` folded into the type, `propertyOrdering` left out.
 */
export function jsonSchemaOf(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(jsonSchemaOf);
  if (!isObject(schema)) return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "type") out.type = typeName(value);
    else if (key === "propertyOrdering") continue;
    else if (SCHEMA_MAPS.has(key) && isObject(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, sub]) => [name, jsonSchemaOf(sub)]),
      );
    } else if (SCHEMA_KEYS.has(key)) out[key] = jsonSchemaOf(value);
    else out[key] = value;
  }
  if (out.nullable === true && typeof out.type === "string") {
    out.type = [out.type, "null"];
    delete out.nullable;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Parts shared by requests and answers

/**
 * Appends text or reasoning, joining it to the part before when that is of the same kind and
 * unsigned; a signature closes the part it arrives with (an empty part that only carries one
 * signs the unsigned text or reasoning before it).
 */
function appendText(
  out: AssistantPart[],
  type: "text" | "reasoning",
  text: string,
  opaque?: Opaque,
): void {
  const last = out.at(-1);
  if ((last?.type === "text" || last?.type === "reasoning") && !last.opaque) {
    if (last.type === type || (!text && opaque)) {
      last.text += text;
      if (opaque) last.opaque = opaque;
      return;
    }
  }
  if (!text && !opaque) return;
  out.push({ type, text, ...(opaque ? { opaque } : {}) });
}

// ---------------------------------------------------------------------------------------------
// Client request → canonical

/** A signature carried on a part: its own kind, or a token of another provider's state. */
function carried(part: Json): { own?: Opaque; foreign?: { opaque: Opaque; text?: string } } {
  const value = field(part, "thoughtSignature");
  const token = fromToken(value);
  if (token && token.opaque.kind !== "thought-signature") return { foreign: token };
  const own = token?.opaque ?? readOpaque(value, "thought-signature");
  return own ? { own } : {};
}

/** A URL file's media type when the canonical one is a wildcard (`image/*`). */
function urlMediaType(mediaType: string, url: string): string {
  if (!mediaType.endsWith("/*")) return mediaType;
  const extension = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase();
  const known: Record<string, string> = {
    png: "image/png",
    jpg: "image/jpeg",
    jpeg: "image/jpeg",
    gif: "image/gif",
    webp: "image/webp",
    heic: "image/heic",
    pdf: "application/pdf",
  };
  return (extension && known[extension]) || mediaType;
}

function filePart(part: Json, at: string): FilePart | undefined {
  const inline = field(part, "inlineData");
  if (isObject(inline)) {
    return {
      type: "file",
      mediaType: string(field(inline, "mimeType"), `${at}.inlineData.mimeType`),
      data: { base64: string(inline.data, `${at}.inlineData.data`) },
    };
  }
  const file = field(part, "fileData");
  if (isObject(file)) {
    const mime = field(file, "mimeType");
    return {
      type: "file",
      mediaType: typeof mime === "string" && mime ? mime : "application/octet-stream",
      data: { url: string(field(file, "fileUri"), `${at}.fileData.fileUri`) },
    };
  }
  return undefined;
}

/** A `functionResponse`'s `response` (and files) as a result's content and error flag. */
function resultContent(response: unknown, parts: unknown, at: string): {
  content: (TextPart | FilePart)[];
  isError: boolean;
} {
  let text: string;
  let isError = false;
  if (typeof response === "string") text = response;
  else {
    const r = isObject(response) ? response : {};
    const only = Object.keys(r).length === 1;
    if (only && typeof r.result === "string") text = r.result;
    else if (only && typeof r.output === "string") text = r.output;
    else if (only && typeof r.error === "string") {
      text = r.error;
      isError = true;
    } else {
      text = JSON.stringify(response ?? {});
      isError = present(r.error);
    }
  }
  const content: (TextPart | FilePart)[] = [{ type: "text", text }];
  list(parts, `${at}.parts`).forEach((raw, i) => {
    const pat = `${at}.parts[${i}]`;
    const file = filePart(object(raw, pat), pat);
    if (!file) throw inexpressible(pat, "this part of a function response", ELSEWHERE);
    content.push(file);
  });
  return { content, isError };
}

/** Calls of the model turn being answered that have no result yet, by name, oldest first. */
type Pending = Map<string, string[]>;

/**
 * A reasoning part for another provider's state that rode on a part (a call, or a thought part
 * with no text of its own). The thought parts just before it that spell the same text are its
 * visible copy (written for the client to read) and give way to it.
 */
function placeForeign(out: AssistantPart[], foreign: { opaque: Opaque; text?: string }): void {
  const text = foreign.text ?? "";
  let joined = "";
  for (let k = out.length - 1; text && k >= 0; k--) {
    const part = out[k];
    if (part.type !== "reasoning" || part.opaque) break;
    joined = part.text + joined;
    if (joined === text) {
      out.splice(k);
      break;
    }
    if (!text.endsWith(joined)) break;
  }
  out.push({ type: "reasoning", text, opaque: foreign.opaque });
}

/** One part of a client's model turn, appended to `out`. */
function modelPart(part: Json, at: string, seed: string, out: AssistantPart[], pending: Pending) {
  const { own, foreign } = carried(part);
  const call = field(part, "functionCall");
  const text = typeof part.text === "string" ? part.text : undefined;
  if (isObject(call)) {
    if (foreign) placeForeign(out, foreign);
    const name = string(call.name, `${at}.functionCall.name`);
    const id = nonEmpty(call.id) ?? synthesizeId(`${seed}:${name}`);
    pending.set(name, [...(pending.get(name) ?? []), id]);
    out.push({
      type: "tool-call",
      id,
      name,
      input: parseArguments(call.args),
      ...(own ? { opaque: own } : {}),
    });
    return;
  }
  if (present(field(part, "executableCode")) || present(field(part, "codeExecutionResult"))) {
    throw inexpressible(at, "code execution parts", ELSEWHERE);
  }
  if (present(field(part, "inlineData")) || present(field(part, "fileData"))) {
    throw inexpressible(at, "a file in a model turn", ELSEWHERE);
  }
  if (present(field(part, "functionResponse"))) {
    throw invalid(`${at}.functionResponse`, "must be in a user turn");
  }
  if (part.thought === true) {
    if (!foreign) return appendText(out, "reasoning", text ?? "", own);
    // The thought part it rides on is the reasoning part (its text is the token's, exactly).
    if (text) out.push({ type: "reasoning", text: foreign.text ?? text, opaque: foreign.opaque });
    else placeForeign(out, foreign);
    return;
  }
  if (foreign) placeForeign(out, foreign);
  appendText(out, "text", text ?? "", own);
}

/** One part of a client's user turn: a result, or text or a file. */
function userPart(
  part: Json,
  at: string,
  seed: string,
  pending: Pending,
  out: { results: ToolResultPart[]; user: (TextPart | FilePart)[] },
): void {
  const response = field(part, "functionResponse");
  if (isObject(response)) {
    const name = string(response.name, `${at}.functionResponse.name`);
    const queue = pending.get(name) ?? [];
    let id = nonEmpty(response.id);
    if (id && queue.includes(id)) queue.splice(queue.indexOf(id), 1);
    else if (!id) id = queue.shift() ?? synthesizeId(`${seed}:${name}:result`);
    const { content, isError } = resultContent(
      response.response,
      response.parts,
      `${at}.functionResponse`,
    );
    out.results.push({ type: "tool-result", id, name, content, ...(isError ? { isError } : {}) });
    return;
  }
  if (typeof part.text === "string") {
    if (part.text) out.user.push({ type: "text", text: part.text });
    return;
  }
  const file = filePart(part, at);
  if (file) out.user.push(file);
  else if (present(field(part, "functionCall"))) {
    throw invalid(`${at}.functionCall`, "must be in a model turn");
  } else if (
    present(field(part, "executableCode")) || present(field(part, "codeExecutionResult"))
  ) {
    throw inexpressible(at, "code execution parts", ELSEWHERE);
  } else if (hasData(part)) {
    throw inexpressible(at, "this part", ELSEWHERE);
  }
}

function decodeContents(contents: unknown): Message[] {
  const messages: Message[] = [];
  let pending: Pending = new Map();
  let model: AssistantPart[] | null = null;
  list(contents, "contents").forEach((raw, i) => {
    const at = `contents[${i}]`;
    const content = object(raw, at);
    const role = content.role ?? "user";
    if (role !== "user" && role !== "model") throw invalid(`${at}.role`, "must be user or model");
    const parts = list(content.parts, `${at}.parts`);
    if (role === "model") {
      if (!model) {
        model = [];
        pending = new Map();
        messages.push({ role: "assistant", content: model });
      }
      const turn = model;
      parts.forEach((p, j) => {
        const pat = `${at}.parts[${j}]`;
        modelPart(object(p, pat), pat, `${i}:${j}`, turn, pending);
      });
      return;
    }
    model = null;
    const out = { results: [] as ToolResultPart[], user: [] as (TextPart | FilePart)[] };
    parts.forEach((p, j) => {
      const pat = `${at}.parts[${j}]`;
      userPart(object(p, pat), pat, `${i}:${j}`, pending, out);
    });
    if (out.results.length) messages.push({ role: "tool", content: out.results });
    if (out.user.length) messages.push({ role: "user", content: out.user });
  });
  return messages;
}

function systemParts(value: unknown): TextPart[] {
  if (!present(value)) return [];
  if (typeof value === "string") return value ? [{ type: "text", text: value }] : [];
  const system = object(value, "systemInstruction");
  return list(system.parts, "systemInstruction.parts").flatMap((raw, i) => {
    const part = object(raw, `systemInstruction.parts[${i}]`);
    return typeof part.text === "string" && part.text
      ? [{ type: "text" as const, text: part.text }]
      : [];
  });
}

/** Tool entries that are Google Search, in either spelling. */
const SEARCH = new Set([
  "googleSearch",
  "google_search",
  "googleSearchRetrieval",
  "google_search_retrieval",
]);

function decodeTools(body: Json): { tools: FunctionTool[]; hosted: HostedTool[] } {
  const tools: FunctionTool[] = [];
  const hosted: HostedTool[] = [];
  list(body.tools, "tools").forEach((raw, i) => {
    const at = `tools[${i}]`;
    const tool = object(raw, at);
    for (const [key, value] of Object.entries(tool)) {
      if (!present(value)) continue;
      if (key === "functionDeclarations" || key === "function_declarations") continue;
      if (SEARCH.has(key)) hosted.push({ type: "web_search", field: `${at}.${key}` });
      else {
        const name = key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
        hosted.push({ type: "other", field: `${at}.${key}`, name });
      }
    }
    list(field(tool, "functionDeclarations"), `${at}.functionDeclarations`).forEach((d, j) => {
      const dat = `${at}.functionDeclarations[${j}]`;
      const decl = object(d, dat);
      const jsonSchema = field(decl, "parametersJsonSchema");
      const schema = isObject(jsonSchema)
        ? jsonSchema
        : isObject(decl.parameters)
        ? jsonSchemaOf(decl.parameters) as Json
        : { type: "object", properties: {} };
      tools.push({
        name: string(decl.name, `${dat}.name`),
        ...(typeof decl.description === "string" ? { description: decl.description } : {}),
        parameters: schema,
      });
    });
  });
  return { tools, hosted };
}

function decodeChoice(body: Json): ToolChoice | undefined {
  const config = field(body, "toolConfig");
  if (!isObject(config)) return undefined;
  const calling = field(config, "functionCallingConfig");
  if (!isObject(calling)) return undefined;
  const at = "toolConfig.functionCallingConfig";
  const names = list(field(calling, "allowedFunctionNames"), `${at}.allowedFunctionNames`)
    .map((name, i) => string(name, `${at}.allowedFunctionNames[${i}]`));
  switch (calling.mode ?? "AUTO") {
    case "AUTO":
    case "VALIDATED":
    case "MODE_UNSPECIFIED":
      return { type: "auto" };
    case "NONE":
      return { type: "none" };
    case "ANY":
      return names.length === 1 ? { type: "tool", name: names[0] } : { type: "required" };
    default:
      throw invalid(`${at}.mode`, "must be AUTO, ANY, NONE or VALIDATED");
  }
}

function readLevel(level: string): Effort {
  const effort = level.toLowerCase();
  return effort === "minimal" || effort === "low" || effort === "medium" ? effort : "high";
}

/** `thinkingConfig` as canonical reasoning. */
function decodeThinking(thinking: Json, at: string): CanonicalRequest["reasoning"] {
  const budget = optionalNumber(field(thinking, "thinkingBudget"), `${at}.thinkingBudget`);
  const level = field(thinking, "thinkingLevel");
  const visible = field(thinking, "includeThoughts") === true ? { visible: true } : {};
  if (budget === 0) return { off: true };
  if (budget !== undefined && budget > 0) return { budgetTokens: budget, ...visible };
  if (typeof level === "string" && level) return { effort: readLevel(level), ...visible };
  if (budget === -1) return { effort: "medium", ...visible };
  return visible.visible ? visible : undefined;
}

/** `generationConfig` into `request`. */
function decodeConfig(config: Json, request: CanonicalRequest): void {
  const at = (name: string) => `generationConfig.${name}`;
  decodeSampling("generate", config, request, { get: field, prefix: at("") });
  const modalities = field(config, "responseModalities");
  if (Array.isArray(modalities) && modalities.some((m) => String(m).toUpperCase() !== "TEXT")) {
    throw inexpressible(at("responseModalities"), "output other than text", ELSEWHERE);
  }
  for (const name of ["responseLogprobs", "logprobs"]) {
    const value = field(config, name);
    if (value !== undefined && value !== null && value !== false) {
      throw inexpressible(at(name), "log probabilities", ELSEWHERE);
    }
  }
  for (const name of ["speechConfig", "imageConfig"]) {
    if (present(field(config, name))) throw inexpressible(at(name), `\`${name}\``, ELSEWHERE);
  }
  const mime = field(config, "responseMimeType");
  const jsonSchema = field(config, "responseJsonSchema");
  const schema = isObject(jsonSchema)
    ? jsonSchema
    : isObject(field(config, "responseSchema"))
    ? jsonSchemaOf(field(config, "responseSchema")) as Json
    : undefined;
  if (mime === "application/json" || schema) {
    request.responseFormat = { type: "json", ...(schema ? { schema } : {}) };
  } else if (present(mime) && mime !== "text/plain") {
    throw inexpressible(at("responseMimeType"), `\`${String(mime)}\` output`, ELSEWHERE);
  }
  const thinking = field(config, "thinkingConfig");
  if (isObject(thinking)) {
    const reasoning = decodeThinking(thinking, at("thinkingConfig"));
    if (reasoning) request.reasoning = reasoning;
  }
}

/** A generateContent request (validated by `schema.ts`) as canonical. */
export function decodeRequest(body: Json, route: RouteInfo): CanonicalRequest {
  const { tools, hosted } = decodeTools(body);
  const choice = decodeChoice(body);
  const request: CanonicalRequest = {
    system: systemParts(field(body, "systemInstruction")),
    messages: decodeContents(body.contents),
    tools,
    hostedTools: hosted,
    ...(choice ? { toolChoice: choice } : {}),
    stream: route.stream === true,
    fields: {
      messages: "contents",
      tools: "tools",
      choices: "generationConfig.candidateCount",
      stop: "generationConfig.stopSequences",
    },
  };
  const config = field(body, "generationConfig");
  if (isObject(config)) decodeConfig(config, request);
  return request;
}

// ---------------------------------------------------------------------------------------------
// Canonical → upstream request

function encodeFile(part: FilePart): Json {
  if ("base64" in part.data) {
    return { inlineData: { mimeType: part.mediaType, data: part.data.base64 } };
  }
  const inline = splitDataUrl(part.data.url);
  if (inline) return { inlineData: { mimeType: inline.mediaType, data: inline.base64 } };
  return {
    fileData: { mimeType: urlMediaType(part.mediaType, part.data.url), fileUri: part.data.url },
  };
}

/** A result's text as a `response` object. */
function resultResponse(part: ToolResultPart): Json {
  const text = part.content.flatMap((c) => c.type === "text" ? [c.text] : []).join("\n");
  if (part.isError) return { error: text };
  try {
    const parsed = JSON.parse(text);
    if (isObject(parsed)) return parsed;
  } catch { /* not JSON: wrapped */ }
  return { result: text };
}

function pushTurn(turns: Json[], role: "user" | "model", parts: Json[]): void {
  if (!parts.length) return;
  const last = turns.at(-1);
  if (last?.role === role) (last.parts as Json[]).push(...parts);
  else turns.push({ role, parts });
}

/** An assistant message's parts; signatures only for `provider`'s own. */
function modelParts(content: AssistantPart[], provider: string, names: Map<string, string>) {
  const parts: Json[] = [];
  const signature = (opaque?: Opaque) =>
    replayable(opaque, provider, "thought-signature") ? { thoughtSignature: opaque!.value } : {};
  for (const part of content) {
    switch (part.type) {
      case "text": {
        const signed = signature(part.opaque);
        if (part.text || signed.thoughtSignature) parts.push({ text: part.text, ...signed });
        break;
      }
      case "reasoning": {
        const signed = signature(part.opaque);
        if (signed.thoughtSignature) parts.push({ text: part.text, thought: true, ...signed });
        break;
      }
      case "tool-call":
        names.set(part.id, part.name);
        parts.push({
          functionCall: { name: part.name, args: parseArguments(part.input) },
          ...signature(part.opaque),
        });
        break;
      case "hosted-call":
        break; // a record of hosted work: nothing to replay
    }
  }
  return parts;
}

/** A tool message as `functionResponse` parts, then the files of its results. */
function resultParts(
  content: ToolResultPart[],
  names: Map<string, string>,
  field: string,
): Json[] {
  const responses: Json[] = [];
  const files: Json[] = [];
  for (const part of content) {
    const name = part.name ?? names.get(part.id);
    if (!name) {
      throw invalid(field, `the tool result for call \`${part.id}\` answers no call before it`);
    }
    responses.push({ functionResponse: { name, response: resultResponse(part) } });
    for (const c of part.content) if (c.type === "file") files.push(encodeFile(c));
  }
  return [...responses, ...files];
}

/**
 * Gemini 3 checks that the first call of each model turn carries a signature: one without a
 * signature of this provider gets the documented skip value.
 */
function signFirstCalls(turns: Json[]): void {
  for (const turn of turns) {
    if (turn.role !== "model") continue;
    const first = (turn.parts as Json[]).find((p) => p.functionCall);
    if (first && !first.thoughtSignature) first.thoughtSignature = SKIP_SIGNATURE;
  }
}

function encodeContents(request: CanonicalRequest, target: Target, system: TextPart[]): Json[] {
  const turns: Json[] = [];
  const names = new Map<string, string>();
  for (const message of request.messages) {
    switch (message.role) {
      case "system":
        system.push(...message.content);
        break;
      case "user":
        pushTurn(
          turns,
          "user",
          message.content.flatMap((p) =>
            p.type === "text" ? (p.text ? [{ text: p.text }] : []) : [encodeFile(p)]
          ),
        );
        break;
      case "tool":
        pushTurn(turns, "user", resultParts(message.content, names, request.fields.messages));
        break;
      case "assistant":
        pushTurn(turns, "model", modelParts(message.content, target.provider, names));
        break;
    }
  }
  if (!OLDER.test(target.model)) signFirstCalls(turns);
  return turns;
}

function encodeTools(request: CanonicalRequest): Json[] {
  const tools: Json[] = [];
  if (request.tools.length) {
    tools.push({
      functionDeclarations: request.tools.map((tool) => {
        const schema = geminiSchema(tool.parameters);
        return {
          name: tool.name,
          ...(tool.description ? { description: tool.description } : {}),
          ...(isEmptyObjectSchema(schema) ? {} : { parameters: schema }),
        };
      }),
    });
  }
  for (const hosted of request.hostedTools) {
    if (hosted.type !== "web_search") {
      throw inexpressible(hosted.field, `the hosted tool \`${hosted.name}\``, PROTOCOL);
    }
    if (!tools.some((t) => t.googleSearch)) tools.push({ googleSearch: {} });
  }
  return tools;
}

function encodeChoice(choice: ToolChoice): Json {
  switch (choice.type) {
    case "auto":
      return { mode: "AUTO" };
    case "none":
      return { mode: "NONE" };
    case "required":
      return { mode: "ANY" };
    case "tool":
      return { mode: "ANY", allowedFunctionNames: [choice.name] };
  }
}

/** Canonical reasoning as `thinkingConfig` for `model`. */
function encodeThinking(reasoning: NonNullable<CanonicalRequest["reasoning"]>, model: string) {
  const older = OLDER.test(model);
  const thinking: Json = {};
  if (reasoning.off) {
    if (older) thinking.thinkingBudget = 0;
    else thinking.thinkingLevel = "low";
    return thinking;
  }
  if (reasoning.budgetTokens !== undefined) thinking.thinkingBudget = reasoning.budgetTokens;
  else if (reasoning.effort) {
    if (older) thinking.thinkingBudget = budgetFor(reasoning.effort);
    else {
      thinking.thinkingLevel = reasoning.effort === "minimal" || reasoning.effort === "low"
        ? "low"
        : "high";
    }
  }
  if (reasoning.visible) thinking.includeThoughts = true;
  return thinking;
}

function encodeConfig(request: CanonicalRequest, target: Target): Json {
  if (request.stop && request.stop.length > 5) {
    throw inexpressible(request.fields.stop ?? "stop", "more than 5 stop sequences", PROTOCOL);
  }
  const config: Json = {};
  encodeSampling("generate", request, config);
  if (request.responseFormat) {
    config.responseMimeType = "application/json";
    if (request.responseFormat.schema) config.responseJsonSchema = request.responseFormat.schema;
  }
  if (request.reasoning) {
    const thinking = encodeThinking(request.reasoning, target.model);
    if (Object.keys(thinking).length) config.thinkingConfig = thinking;
  }
  return config;
}

/** A canonical request as a generateContent body for `target` (the model goes in the path). */
export function encodeRequest(request: CanonicalRequest, target: Target): Json {
  oneAnswer(request, PROTOCOL);
  const system = [...request.system];
  const body: Json = { contents: encodeContents(request, target, system) };
  const text = system.map((p) => p.text).filter(Boolean).join("\n\n");
  if (text) body.systemInstruction = { parts: [{ text }] };
  const tools = encodeTools(request);
  if (tools.length) body.tools = tools;
  if (request.toolChoice && request.tools.length) {
    body.toolConfig = { functionCallingConfig: encodeChoice(request.toolChoice) };
  }
  const config = encodeConfig(request, target);
  if (Object.keys(config).length) body.generationConfig = config;
  return body;
}

// ---------------------------------------------------------------------------------------------
// Upstream answer → canonical

/** One part of an upstream answer: a call (its id, when Gemini gave one), or text or a thought. */
export type AnswerPart =
  | { type: "call"; id?: string; name: string; input: Record<string, unknown>; opaque?: Opaque }
  | { type: "text" | "reasoning"; text: string; opaque?: Opaque };

/** An answer part read, its signature tagged with `provider`; undefined for other parts. */
export function readAnswerPart(part: Json, provider: string): AnswerPart | undefined {
  const signature = nonEmpty(field(part, "thoughtSignature"));
  const opaque: Opaque | undefined = signature
    ? { provider, kind: "thought-signature", value: signature }
    : undefined;
  const call = field(part, "functionCall");
  if (isObject(call)) {
    const id = nonEmpty(call.id);
    return {
      type: "call",
      ...(id ? { id } : {}),
      name: String(call.name ?? ""),
      input: parseArguments(call.args),
      ...(opaque ? { opaque } : {}),
    };
  }
  const text = typeof part.text === "string" ? part.text : undefined;
  // A part of another kind (an image, code), with or without a signature, is not read.
  if (text === undefined && (!opaque || hasData(part))) return undefined;
  return {
    type: part.thought === true ? "reasoning" : "text",
    text: text ?? "",
    ...(opaque ? { opaque } : {}),
  };
}

/** A whole generateContent answer as canonical (its first candidate). */
export function decodeResponse(body: Json, provider: string): CanonicalResponse {
  const candidate = Array.isArray(body.candidates) && isObject(body.candidates[0])
    ? body.candidates[0]
    : undefined;
  const content = isObject(candidate?.content) ? candidate.content : {};
  const id = typeof body.responseId === "string" ? body.responseId : "";
  const parts: AssistantPart[] = [];
  (Array.isArray(content.parts) ? content.parts : []).forEach((raw, i) => {
    const part = isObject(raw) ? readAnswerPart(raw, provider) : undefined;
    if (part?.type === "call") {
      parts.push({
        type: "tool-call",
        id: part.id ?? synthesizeId(`${id}:${i}:${part.name}`),
        name: part.name,
        input: part.input,
        ...(part.opaque ? { opaque: part.opaque } : {}),
      });
    } else if (part) appendText(parts, part.type, part.text, part.opaque);
  });
  const feedback = isObject(body.promptFeedback) ? body.promptFeedback : {};
  const blocked = !candidate && present(feedback.blockReason);
  const raw = candidate?.finishReason;
  return {
    id,
    model: typeof body.modelVersion === "string" ? body.modelVersion : "",
    content: parts,
    finish: {
      reason: blocked
        ? "content-filter"
        : decodeFinishReason(raw, parts.some((p) => p.type === "tool-call")),
      ...(typeof raw === "string" ? { raw } : blocked ? { raw: String(feedback.blockReason) } : {}),
    },
    usage: decodeTokenUsage(body.usageMetadata),
  };
}

// ---------------------------------------------------------------------------------------------
// Canonical → client answer

/** A canonical call as a `functionCall` part, with the signature (a token) it carries. */
export function callPart(
  part: { id: string; name: string; input: unknown },
  signature: string | undefined,
): Json {
  return {
    functionCall: { id: part.id, name: part.name, args: parseArguments(part.input) },
    ...(signature ? { thoughtSignature: signature } : {}),
  };
}

/** Whether opaque state is another provider's than Gemini's (it then carries its text). */
export function isForeign(opaque: Opaque | undefined): opaque is Opaque {
  return !!opaque && opaque.kind !== "thought-signature";
}

/** The parts of a canonical answer, with opaque state as thought-signature tokens. */
export function encodeParts(content: AssistantPart[], info: AnswerInfo): Json[] {
  const parts: Json[] = [];
  /** A foreign reasoning token waiting for the call just after its reasoning. */
  let carry: string | undefined;
  content.forEach((part, i) => {
    switch (part.type) {
      case "reasoning": {
        if (!isForeign(part.opaque)) {
          const signed = part.opaque ? { thoughtSignature: info.token(part.opaque) } : {};
          if (part.text || part.opaque) parts.push({ text: part.text, thought: true, ...signed });
          break;
        }
        const token = info.token(part.opaque, part.text);
        const next = content.slice(i + 1).find((p) => p.type !== "text" || p.text);
        if (next?.type === "tool-call" && !next.opaque) {
          carry = token;
          if (part.text) parts.push({ text: part.text, thought: true });
        } else parts.push({ text: part.text, thought: true, thoughtSignature: token });
        break;
      }
      case "text":
        if (part.text || part.opaque) {
          parts.push({
            text: part.text,
            ...(part.opaque ? { thoughtSignature: info.token(part.opaque) } : {}),
          });
        }
        break;
      case "tool-call":
        parts.push(callPart(part, part.opaque ? info.token(part.opaque) : carry));
        carry = undefined;
        break;
      case "hosted-call":
        break;
    }
  });
  return parts;
}

/** A canonical answer as a generateContent answer. */
export function encodeResponse(response: CanonicalResponse, info: AnswerInfo): Json {
  return {
    candidates: [{
      content: { role: "model", parts: encodeParts(response.content, info) },
      finishReason: encodeFinishReason(response.finish.reason),
      index: 0,
    }],
    usageMetadata: encodeTokenUsage(response.usage),
    modelVersion: info.model,
    responseId: info.id,
  };
}
