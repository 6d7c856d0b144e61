/**
 * A generateContent request → the canonical form (pure; `gemini.md` §2, `translation.md`).
 * Policies where the formats differ:
 * - field names are read in both spellings the REST API takes (`parts.ts`); the model is the
 *   route's, not the body's;
 * - consecutive `model` contents (an SDK records a streamed answer as one content per chunk) are
 *   one assistant turn; adjacent text (or thought) parts join, a signature ending the part it
 *   closes, as the stream decoder does;
 * - Gemini calls often carry no id: one is synthesised from where the call stands (so the same
 *   history gives the same ids), and a `functionResponse` without id answers the earliest
 *   unanswered call of its name in the model turn before it;
 * - a turn of results becomes a tool message; text of the same turn follows it as a user message;
 *   read back, a `response` of `{result}` or `{output}` gives its string, `{error}` marks a
 *   failure; files of a result are part of it;
 * - another provider's state (an Anthropic thinking signature, Responses encrypted reasoning) that
 *   rode on a `thoughtSignature` as a token is read back as a reasoning part before the part it
 *   rode on;
 * - a client's OpenAPI-style schemas (`"OBJECT"`, `nullable`) are read as JSON Schema, its
 *   keywords in one order (`translate/schema_order.ts`); the protocol caches by itself (implicit
 *   caching: the cache intent says so);
 * - `mode: ANY` with several `allowedFunctionNames` is read as "some tool must be called" (the
 *   canonical choice names one tool or none); `VALIDATED` is read as `auto`;
 * - not carried (hints with no field on the other side): `safetySettings`, `labels`,
 *   `mediaResolution`, `toolConfig.retrievalConfig`. Refused by name: code execution parts,
 *   files in a model turn, output other than text, log probabilities, speech and image
 *   configuration;
 * - what changes the answer is noted as an adaptation (see `translate/adaptations.ts`):
 *   `safetySettings`, `mediaResolution` and `retrievalConfig` left out, Google Search's options
 *   left out, a choice of several functions or `VALIDATED`, a dynamic thinking budget (-1, read as
 *   a medium effort).
 */
import {
  eachObject,
  invalid,
  isObject,
  list,
  object,
  optionalNumber,
  string,
} from "../../http/json.ts";
import { type Adapt, IGNORED } from "../../translate/adaptations.ts";
import type { RouteInfo } from "../../translate/codec.ts";
import { inexpressible } from "../../translate/inexpressible.ts";
import type {
  AssistantPart,
  CanonicalRequest,
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
import { jsonSchemaOf } from "../../translate/json_schema.ts";
import { fromToken, readOpaque } from "../../translate/opaque.ts";
import { decodeSampling } from "../../translate/sampling.ts";
import { parseArguments, synthesizeId } from "../../translate/tool_ids.ts";
import { appendText, field, hasData, nonEmpty, present } from "./parts.ts";

const ELSEWHERE = "another protocol";

/** A signature carried on a part: its own kind, or a token of another provider's state. */
function carried(part: Json): { own?: Opaque; foreign?: { opaque: Opaque; text?: string } } {
  const value = field(part, "thoughtSignature");
  const token = fromToken(value);
  if (token && token.opaque.kind !== "thought-signature") return { foreign: token };
  const own = token?.opaque ?? readOpaque(value, "thought-signature");
  return own ? { own } : {};
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
  eachObject(parts, `${at}.parts`, (part, pat) => {
    const file = filePart(part, pat);
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
  eachObject(contents, "contents", (content, at, i) => {
    const role = content.role ?? "user";
    if (role !== "user" && role !== "model") throw invalid(`${at}.role`, "must be user or model");
    if (role === "model") {
      if (!model) {
        model = [];
        pending = new Map();
        messages.push({ role: "assistant", content: model });
      }
      const turn = model;
      eachObject(content.parts, `${at}.parts`, (part, pat, j) => {
        modelPart(part, pat, `${i}:${j}`, turn, pending);
      });
      return;
    }
    model = null;
    const out = { results: [] as ToolResultPart[], user: [] as (TextPart | FilePart)[] };
    eachObject(content.parts, `${at}.parts`, (part, pat, j) => {
      userPart(part, pat, `${i}:${j}`, pending, out);
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
  return eachObject(
    system.parts,
    "systemInstruction.parts",
    (part) =>
      typeof part.text === "string" && part.text
        ? [{ type: "text" as const, text: part.text }]
        : [],
  ).flat();
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
  eachObject(body.tools, "tools", (tool, at) => {
    for (const [key, value] of Object.entries(tool)) {
      if (!present(value)) continue;
      if (key === "functionDeclarations" || key === "function_declarations") continue;
      if (SEARCH.has(key)) hosted.push({ type: "web_search", field: `${at}.${key}` });
      else {
        const name = key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
        hosted.push({ type: "other", field: `${at}.${key}`, name });
      }
    }
    eachObject(field(tool, "functionDeclarations"), `${at}.functionDeclarations`, (decl, dat) => {
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

function decodeChoice(body: Json, adapt: Adapt): ToolChoice | undefined {
  const config = field(body, "toolConfig");
  if (!isObject(config)) return undefined;
  const calling = field(config, "functionCallingConfig");
  if (!isObject(calling)) return undefined;
  const at = "toolConfig.functionCallingConfig";
  const names = list(field(calling, "allowedFunctionNames"), `${at}.allowedFunctionNames`)
    .map((name, i) => string(name, `${at}.allowedFunctionNames[${i}]`));
  switch (calling.mode ?? "AUTO") {
    case "VALIDATED":
      adapt("tool_choice_approximated", `${at}.mode`);
      return { type: "auto" };
    case "AUTO":
    case "MODE_UNSPECIFIED":
      return { type: "auto" };
    case "NONE":
      return { type: "none" };
    case "ANY":
      if (names.length > 1) adapt("tool_choice_approximated", `${at}.allowedFunctionNames`);
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
function decodeThinking(thinking: Json, at: string, adapt: Adapt): CanonicalRequest["reasoning"] {
  const budget = optionalNumber(field(thinking, "thinkingBudget"), `${at}.thinkingBudget`);
  const level = field(thinking, "thinkingLevel");
  const visible = field(thinking, "includeThoughts") === true ? { visible: true } : {};
  if (budget === 0) return { off: true };
  if (budget !== undefined && budget > 0) return { budgetTokens: budget, ...visible };
  if (typeof level === "string" && level) return { effort: readLevel(level), ...visible };
  if (budget === -1) {
    adapt("reasoning_approximated", `${at}.thinkingBudget`);
    return { effort: "medium", ...visible };
  }
  return visible.visible ? visible : undefined;
}

/** `generationConfig` into `request`. */
function decodeConfig(config: Json, request: CanonicalRequest, adapt: Adapt): void {
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
    request.fields.responseFormat = at("responseMimeType");
  } else if (present(mime) && mime !== "text/plain") {
    throw inexpressible(at("responseMimeType"), `\`${String(mime)}\` output`, ELSEWHERE);
  }
  const thinking = field(config, "thinkingConfig");
  if (isObject(thinking)) {
    const reasoning = decodeThinking(thinking, at("thinkingConfig"), adapt);
    if (reasoning) {
      request.reasoning = reasoning;
      request.fields.reasoning = at("thinkingConfig");
    }
  }
  if (present(field(config, "mediaResolution"))) adapt("hint_dropped", at("mediaResolution"));
}

/** Notes the options of `body` not carried that change the answer (see the module's doc). */
function noteUncarried(body: Json, adapt: Adapt): void {
  const safety = field(body, "safetySettings");
  if (Array.isArray(safety) && safety.length) adapt("hint_dropped", "safetySettings");
  const config = field(body, "toolConfig");
  if (isObject(config) && present(field(config, "retrievalConfig"))) {
    adapt("hint_dropped", "toolConfig.retrievalConfig");
  }
  if (!Array.isArray(body.tools)) return;
  body.tools.forEach((tool, i) => {
    if (!isObject(tool)) return;
    for (const key of SEARCH) {
      const options = tool[key];
      if (isObject(options) && Object.values(options).some(present)) {
        adapt("search_options_dropped", `tools[${i}].${key}`);
      }
    }
  });
}

/** A generateContent request (validated by `schema.ts`) as canonical. */
export function decodeRequest(
  body: Json,
  route: RouteInfo,
  adapt: Adapt = IGNORED,
): CanonicalRequest {
  const { tools, hosted } = decodeTools(body);
  const choice = decodeChoice(body, adapt);
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
    // Gemini caches every prompt's prefix by itself (implicit caching).
    cache: { implicit: true },
  };
  const config = field(body, "generationConfig");
  if (isObject(config)) decodeConfig(config, request, adapt);
  noteUncarried(body, adapt);
  return request;
}
