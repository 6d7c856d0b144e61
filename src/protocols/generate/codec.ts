/**
 * generateContent ⇄ canonical, for requests and whole answers (pure; `gemini.md`,
 * `translation.md`). Policies where the formats differ:
 * - field names are read in both spellings the REST API takes (`systemInstruction` and
 *   `system_instruction`…) and written in camelCase;
 * - Gemini calls often carry no id: one is synthesised from where the call stands (so the same
 *   history gives the same ids), a `functionResponse` without id answers the earliest unanswered
 *   call of its name, and ids are never sent upstream (Gemini matches results by name and order);
 * - tool results are `functionResponse` parts whose `response` is the result's JSON object when it
 *   is one, else `{result: text}` (`{error: text}` for a failed call); files of a result follow as
 *   `inlineData` parts in the same turn;
 * - system messages inside the conversation are hoisted into `systemInstruction`;
 * - thought signatures are replayed only to the provider that issued them; on Gemini 3 models
 *   (anything not named `gemini-1…`/`gemini-2…`) the first call of a model turn without one gets
 *   Google's documented `skip_thought_signature_validator`. State of another provider reaches a
 *   Gemini client as the `thoughtSignature` of the call it precedes (or of its thought part);
 * - parameter schemas are cleaned to Gemini's subset (`json_schema.ts`); structured output is
 *   sent as `responseJsonSchema`; `parallel_tool_calls: false` and end-user ids have no field and
 *   are not sent; `safetySettings` of a Gemini client are not translated.
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
  ToolChoice,
  ToolResultPart,
} from "../../translate/ir.ts";
import { fromGemini, toGemini } from "../../translate/finish.ts";
import { geminiSchema, isEmptyObjectSchema } from "../../translate/json_schema.ts";
import { fromToken, readOpaque, replayable } from "../../translate/opaque.ts";
import { budgetFor } from "../../translate/reasoning.ts";
import { synthesizeId } from "../../translate/tool_ids.ts";
import {
  inexpressible,
  invalid,
  isObject,
  list,
  object,
  optionalNumber,
  stopList,
  string,
} from "../../translate/read.ts";

const PROTOCOL = "the generateContent protocol";

/** Google's documented signature for calls whose history came from elsewhere (Gemini 3). */
export const SKIP_SIGNATURE = "skip_thought_signature_validator";

/** Models that take thinking budgets and need no thought signatures (Gemini 1.x and 2.x). */
const OLDER = /gemini-(1|2)(\.|-)/;

/** A field in either spelling. */
function field(value: Json, camel: string): unknown {
  if (value[camel] !== undefined) return value[camel];
  return value[camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)];
}

/** A JSON Schema with OpenAPI-style upper-case type names lower-cased. */
function normalSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(normalSchema);
  if (!isObject(schema)) return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    out[key] = key === "type" && typeof value === "string"
      ? value.toLowerCase()
      : key === "enum" || key === "required"
      ? value
      : normalSchema(value);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Client request → canonical

function signatureOf(part: Json): unknown {
  return field(part, "thoughtSignature");
}

/** A signature carried on a part: its own kind, or a token of another provider's state. */
function carried(part: Json): { own?: Opaque; foreign?: { opaque: Opaque; text?: string } } {
  const value = signatureOf(part);
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
      mediaType: typeof mime === "string" ? mime : "application/octet-stream",
      data: { url: string(field(file, "fileUri"), `${at}.fileData.fileUri`) },
    };
  }
  return undefined;
}

function resultContent(response: unknown, parts: unknown, at: string): {
  content: (TextPart | FilePart)[];
  isError: boolean;
} {
  const r = isObject(response) ? response : {};
  const keys = Object.keys(r);
  let text: string;
  let isError = false;
  if (keys.length === 1 && (typeof r.result === "string" || typeof r.output === "string")) {
    text = (r.result ?? r.output) as string;
  } else if (keys.length === 1 && typeof r.error === "string") {
    text = r.error;
    isError = true;
  } else {
    text = JSON.stringify(response ?? {});
    isError = r.error !== undefined && r.error !== null;
  }
  const content: (TextPart | FilePart)[] = [{ type: "text", text }];
  list(parts, `${at}.parts`).forEach((raw, i) => {
    const file = filePart(object(raw, `${at}.parts[${i}]`), `${at}.parts[${i}]`);
    if (file) content.push(file);
  });
  return { content, isError };
}

function decodeContents(contents: unknown): Message[] {
  const messages: Message[] = [];
  /** Calls of the last model turn not yet answered, by name, oldest first. */
  let pending = new Map<string, string[]>();
  list(contents, "contents").forEach((raw, i) => {
    const at = `contents[${i}]`;
    const content = object(raw, at);
    const role = content.role ?? "user";
    if (role !== "user" && role !== "model") throw invalid(`${at}.role`, "must be user or model");
    const parts = list(content.parts, `${at}.parts`);
    if (role === "model") {
      const out: AssistantPart[] = [];
      pending = new Map();
      parts.forEach((rawPart, j) => {
        const pat = `${at}.parts[${j}]`;
        const part = object(rawPart, pat);
        const { own, foreign } = carried(part);
        const call = field(part, "functionCall");
        const thought = part.thought === true;
        if (foreign && !thought) {
          // The thought part written just before the call, if any, is the one the token is for.
          const last = out.at(-1);
          if (last?.type === "reasoning" && !last.opaque && last.text === (foreign.text ?? "")) {
            last.opaque = foreign.opaque;
          } else out.push({ type: "reasoning", text: foreign.text ?? "", opaque: foreign.opaque });
        }
        if (isObject(call)) {
          const name = string(call.name, `${pat}.functionCall.name`);
          const id = typeof call.id === "string" && call.id
            ? call.id
            : synthesizeId(`${i}:${j}:${name}`);
          pending.set(name, [...(pending.get(name) ?? []), id]);
          out.push({
            type: "tool-call",
            id,
            name,
            input: isObject(call.args) ? call.args : {},
            ...(own ? { opaque: own } : {}),
          });
        } else if (typeof part.text === "string") {
          if (thought) {
            const opaque = foreign?.opaque ?? own;
            out.push({
              type: "reasoning",
              text: foreign?.text ?? part.text,
              ...(opaque ? { opaque } : {}),
            });
          } else if (part.text || own) {
            out.push({ type: "text", text: part.text, ...(own ? { opaque: own } : {}) });
          }
        } else if (field(part, "executableCode") || field(part, "codeExecutionResult")) {
          throw inexpressible(pat, "code execution parts", "another protocol");
        }
      });
      messages.push({ role: "assistant", content: out });
      return;
    }
    const results: ToolResultPart[] = [];
    const user: (TextPart | FilePart)[] = [];
    parts.forEach((rawPart, j) => {
      const pat = `${at}.parts[${j}]`;
      const part = object(rawPart, pat);
      const response = field(part, "functionResponse");
      if (isObject(response)) {
        const name = string(response.name, `${pat}.functionResponse.name`);
        const queue = pending.get(name) ?? [];
        let id = typeof response.id === "string" && response.id ? response.id : undefined;
        if (id && queue.includes(id)) queue.splice(queue.indexOf(id), 1);
        else if (!id) id = queue.shift() ?? synthesizeId(`${i}:${j}:${name}:result`);
        const { content, isError } = resultContent(
          response.response,
          response.parts,
          `${pat}.functionResponse`,
        );
        results.push({ type: "tool-result", id, name, content, ...(isError ? { isError } : {}) });
      } else if (typeof part.text === "string") {
        if (part.text) user.push({ type: "text", text: part.text });
      } else {
        const file = filePart(part, pat);
        if (file) user.push(file);
        else if (field(part, "functionCall")) {
          throw invalid(`${pat}.functionCall`, "must be in a model turn");
        } else throw inexpressible(pat, "this part", "another protocol");
      }
    });
    if (results.length) messages.push({ role: "tool", content: results });
    if (user.length) messages.push({ role: "user", content: user });
  });
  return messages;
}

function systemParts(value: unknown): TextPart[] {
  if (value === undefined || value === null) return [];
  if (typeof value === "string") return value ? [{ type: "text", text: value }] : [];
  const system = object(value, "systemInstruction");
  return list(system.parts, "systemInstruction.parts").flatMap((raw, i) => {
    const part = object(raw, `systemInstruction.parts[${i}]`);
    return typeof part.text === "string" && part.text
      ? [{ type: "text" as const, text: part.text }]
      : [];
  });
}

const HOSTED: Record<string, string> = {
  googleSearch: "web_search",
  google_search: "web_search",
  googleSearchRetrieval: "web_search",
  google_search_retrieval: "web_search",
};
const OTHER_HOSTED = [
  "codeExecution",
  "code_execution",
  "urlContext",
  "url_context",
  "googleMaps",
  "google_maps",
  "fileSearch",
  "file_search",
  "computerUse",
  "computer_use",
];

function decodeTools(body: Json): { tools: FunctionTool[]; hosted: HostedTool[] } {
  const tools: FunctionTool[] = [];
  const hosted: HostedTool[] = [];
  list(body.tools, "tools").forEach((raw, i) => {
    const at = `tools[${i}]`;
    const tool = object(raw, at);
    list(field(tool, "functionDeclarations"), `${at}.functionDeclarations`).forEach((d, j) => {
      const dat = `${at}.functionDeclarations[${j}]`;
      const decl = object(d, dat);
      const schema = field(decl, "parametersJsonSchema") ?? decl.parameters;
      tools.push({
        name: string(decl.name, `${dat}.name`),
        ...(typeof decl.description === "string" ? { description: decl.description } : {}),
        parameters: isObject(schema)
          ? normalSchema(schema) as Json
          : { type: "object", properties: {} },
      });
    });
    for (const key of Object.keys(tool)) {
      if (HOSTED[key]) hosted.push({ type: "web_search", field: `${at}.${key}` });
      else if (OTHER_HOSTED.includes(key)) {
        hosted.push({ type: "other", field: `${at}.${key}`, name: key });
      }
    }
  });
  return { tools, hosted };
}

function decodeChoice(body: Json): ToolChoice | undefined {
  const config = field(body, "toolConfig");
  if (!isObject(config)) return undefined;
  const calling = field(config, "functionCallingConfig");
  if (!isObject(calling)) return undefined;
  const names = list(
    field(calling, "allowedFunctionNames"),
    "toolConfig.functionCallingConfig.allowedFunctionNames",
  );
  switch (calling.mode) {
    case undefined:
    case "AUTO":
    case "VALIDATED":
      return { type: "auto" };
    case "NONE":
      return { type: "none" };
    case "ANY":
      return names.length === 1 && typeof names[0] === "string"
        ? { type: "tool", name: names[0] }
        : { type: "required" };
    default:
      throw invalid(
        "toolConfig.functionCallingConfig.mode",
        "must be AUTO, ANY, NONE or VALIDATED",
      );
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
  const rawConfig = field(body, "generationConfig");
  const config = isObject(rawConfig) ? rawConfig : {};
  const at = (name: string) => `generationConfig.${name}`;
  const number = (name: string) => optionalNumber(field(config, name), at(name));
  const cap = number("maxOutputTokens");
  if (cap !== undefined) request.maxOutputTokens = cap;
  const temperature = number("temperature");
  if (temperature !== undefined) request.temperature = temperature;
  const topP = number("topP");
  if (topP !== undefined) request.topP = topP;
  const topK = number("topK");
  if (topK !== undefined) request.topK = topK;
  const seed = number("seed");
  if (seed !== undefined) request.seed = seed;
  const presence = number("presencePenalty");
  if (presence !== undefined) request.presencePenalty = presence;
  const frequency = number("frequencyPenalty");
  if (frequency !== undefined) request.frequencyPenalty = frequency;
  const candidates = number("candidateCount");
  if (candidates !== undefined) request.choices = candidates;
  const stop = stopList(field(config, "stopSequences"), at("stopSequences"));
  if (stop?.length) request.stop = stop;
  const modalities = field(config, "responseModalities");
  if (Array.isArray(modalities) && modalities.some((m) => m !== "TEXT")) {
    throw inexpressible(at("responseModalities"), "output other than text", "another protocol");
  }
  const mime = field(config, "responseMimeType");
  const schema = field(config, "responseJsonSchema") ?? field(config, "responseSchema");
  if (mime === "application/json" || isObject(schema)) {
    request.responseFormat = {
      type: "json",
      ...(isObject(schema) ? { schema: normalSchema(schema) as Json } : {}),
    };
  } else if (mime !== undefined && mime !== "text/plain") {
    throw inexpressible(at("responseMimeType"), `\`${String(mime)}\` output`, "another protocol");
  }
  const thinking = field(config, "thinkingConfig");
  if (isObject(thinking)) {
    const budget = optionalNumber(
      field(thinking, "thinkingBudget"),
      at("thinkingConfig.thinkingBudget"),
    );
    const level = field(thinking, "thinkingLevel");
    const visible = field(thinking, "includeThoughts") === true;
    if (budget === 0) request.reasoning = { off: true };
    else if (budget !== undefined && budget > 0) {
      request.reasoning = { budgetTokens: budget, visible };
    } else if (typeof level === "string") {
      const effort = level.toLowerCase();
      request.reasoning = {
        effort: effort === "minimal" || effort === "low" || effort === "medium" ? effort : "high",
        visible,
      };
    } else if (budget === -1 || visible) request.reasoning = { effort: "medium", visible };
  }
  return request;
}

// ---------------------------------------------------------------------------------------------
// Canonical → upstream request

function encodeFile(part: FilePart): Json {
  return "base64" in part.data
    ? { inlineData: { mimeType: part.mediaType, data: part.data.base64 } }
    : { fileData: { mimeType: part.mediaType, fileUri: part.data.url } };
}

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

function encodeContents(request: CanonicalRequest, target: Target, system: TextPart[]): Json[] {
  const turns: Json[] = [];
  const names = new Map<string, string>();
  const gemini3 = !OLDER.test(target.model);
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
      case "tool": {
        const responses: Json[] = [];
        const files: Json[] = [];
        for (const part of message.content) {
          const name = part.name ?? names.get(part.id);
          if (!name) {
            throw invalid(
              request.fields.messages,
              `the tool result for call \`${part.id}\` answers no call in the conversation`,
            );
          }
          responses.push({ functionResponse: { name, response: resultResponse(part) } });
          for (const c of part.content) if (c.type === "file") files.push(encodeFile(c));
        }
        pushTurn(turns, "user", [...responses, ...files]);
        break;
      }
      case "assistant": {
        const parts: Json[] = [];
        let signedCall = false;
        for (const part of message.content) {
          if (part.type === "text") {
            const signature = replayable(part.opaque, target.provider, "thought-signature")
              ? { thoughtSignature: part.opaque!.value }
              : {};
            if (part.text || signature.thoughtSignature) {
              parts.push({ text: part.text, ...signature });
            }
          } else if (part.type === "reasoning") {
            if (replayable(part.opaque, target.provider, "thought-signature")) {
              parts.push({ text: part.text, thought: true, thoughtSignature: part.opaque!.value });
            }
          } else if (part.type === "tool-call") {
            names.set(part.id, part.name);
            let signature: string | undefined;
            if (replayable(part.opaque, target.provider, "thought-signature")) {
              signature = part.opaque!.value;
            } else if (gemini3 && !signedCall) signature = SKIP_SIGNATURE;
            if (signature) signedCall = true;
            parts.push({
              functionCall: { name: part.name, args: isObject(part.input) ? part.input : {} },
              ...(signature ? { thoughtSignature: signature } : {}),
            });
          }
        }
        pushTurn(turns, "model", parts);
        break;
      }
    }
  }
  return turns;
}

/** A canonical request as a generateContent body for `target` (the model goes in the path). */
export function encodeRequest(request: CanonicalRequest, target: Target): Json {
  if ((request.choices ?? 1) > 1) {
    throw inexpressible(request.fields.choices ?? "n", "more than one answer per call", PROTOCOL);
  }
  const system = [...request.system];
  const body: Json = { contents: encodeContents(request, target, system) };
  const text = system.map((p) => p.text).filter(Boolean).join("\n\n");
  if (text) body.systemInstruction = { parts: [{ text }] };
  const tools: Json[] = [];
  if (request.tools.length) {
    tools.push({
      functionDeclarations: request.tools.map((tool) => ({
        name: tool.name,
        ...(tool.description ? { description: tool.description } : {}),
        ...(isEmptyObjectSchema(tool.parameters)
          ? {}
          : { parameters: geminiSchema(tool.parameters) }),
      })),
    });
  }
  for (const hosted of request.hostedTools) {
    if (hosted.type !== "web_search") {
      throw inexpressible(hosted.field, "this hosted tool", PROTOCOL);
    }
    tools.push({ googleSearch: {} });
  }
  if (tools.length) body.tools = tools;
  const choice = request.toolChoice;
  if (choice && request.tools.length) {
    body.toolConfig = {
      functionCallingConfig: choice.type === "tool"
        ? { mode: "ANY", allowedFunctionNames: [choice.name] }
        : { mode: choice.type === "required" ? "ANY" : choice.type === "none" ? "NONE" : "AUTO" },
    };
  }
  const config: Json = {};
  if (request.maxOutputTokens !== undefined) config.maxOutputTokens = request.maxOutputTokens;
  if (request.temperature !== undefined) config.temperature = request.temperature;
  if (request.topP !== undefined) config.topP = request.topP;
  if (request.topK !== undefined) config.topK = request.topK;
  if (request.stop?.length) {
    if (request.stop.length > 5) {
      throw inexpressible(request.fields.stop ?? "stop", "more than 5 stop sequences", PROTOCOL);
    }
    config.stopSequences = request.stop;
  }
  if (request.seed !== undefined) config.seed = request.seed;
  if (request.presencePenalty !== undefined) config.presencePenalty = request.presencePenalty;
  if (request.frequencyPenalty !== undefined) config.frequencyPenalty = request.frequencyPenalty;
  if (request.responseFormat) {
    config.responseMimeType = "application/json";
    if (request.responseFormat.schema) config.responseJsonSchema = request.responseFormat.schema;
  }
  const reasoning = request.reasoning;
  if (reasoning) {
    const older = OLDER.test(target.model);
    const thinking: Json = {};
    if (reasoning.off) {
      if (older) thinking.thinkingBudget = 0;
      else thinking.thinkingLevel = "low";
    } else if (reasoning.budgetTokens !== undefined) {
      thinking.thinkingBudget = reasoning.budgetTokens;
    } else if (reasoning.effort) {
      if (older) thinking.thinkingBudget = budgetFor(reasoning.effort);
      else {thinking.thinkingLevel = reasoning.effort === "minimal" || reasoning.effort === "low"
          ? "low"
          : "high";}
    }
    if (reasoning.visible && !reasoning.off) thinking.includeThoughts = true;
    if (Object.keys(thinking).length) config.thinkingConfig = thinking;
  }
  if (Object.keys(config).length) body.generationConfig = config;
  return body;
}

// ---------------------------------------------------------------------------------------------
// Upstream answer → canonical

const int = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;

/** `usageMetadata` as canonical usage (output is candidates plus thoughts). */
export function usageFromGemini(raw: unknown): TokenUsage {
  const u = isObject(raw) ? raw : {};
  const thoughts = int(u.thoughtsTokenCount);
  return {
    input: int(u.promptTokenCount) + int(u.toolUsePromptTokenCount),
    cacheRead: int(u.cachedContentTokenCount),
    cacheWrite: 0,
    output: int(u.candidatesTokenCount) + thoughts,
    reasoning: thoughts,
  };
}

/** One answer part as canonical parts; `seed` makes a missing call id stable. */
export function decodePart(part: Json, provider: string, seed: string): AssistantPart[] {
  const signature = signatureOf(part);
  const opaque: Opaque | undefined = typeof signature === "string" && signature
    ? { provider, kind: "thought-signature", value: signature }
    : undefined;
  const call = field(part, "functionCall");
  if (isObject(call)) {
    const name = String(call.name ?? "");
    return [{
      type: "tool-call",
      id: typeof call.id === "string" && call.id ? call.id : synthesizeId(`${seed}:${name}`),
      name,
      input: isObject(call.args) ? call.args : {},
      ...(opaque ? { opaque } : {}),
    }];
  }
  if (typeof part.text === "string") {
    if (part.thought === true) {
      return [{ type: "reasoning", text: part.text, ...(opaque ? { opaque } : {}) }];
    }
    if (part.text || opaque) {
      return [{ type: "text", text: part.text, ...(opaque ? { opaque } : {}) }];
    }
  }
  return [];
}

/** A whole generateContent answer as canonical (its first candidate). */
export function decodeResponse(body: Json, provider: string): CanonicalResponse {
  const candidate = Array.isArray(body.candidates) && isObject(body.candidates[0])
    ? body.candidates[0]
    : undefined;
  const content = isObject(candidate?.content) ? candidate.content : {};
  const id = typeof body.responseId === "string" ? body.responseId : "";
  const parts: AssistantPart[] = [];
  (Array.isArray(content.parts) ? content.parts : []).forEach((p, i) => {
    if (!isObject(p)) return;
    for (const part of decodePart(p, provider, `${id}:${i}`)) {
      // Text fragments join into one part (a signature keeps its part apart).
      const last = parts.at(-1);
      if (
        (part.type === "text" || part.type === "reasoning") && last?.type === part.type &&
        !last.opaque
      ) {
        last.text += part.text;
        if (part.opaque) last.opaque = part.opaque;
      } else parts.push(part);
    }
  });
  const blocked = !candidate && isObject(body.promptFeedback) && body.promptFeedback.blockReason;
  const raw = candidate?.finishReason;
  return {
    id,
    model: typeof body.modelVersion === "string" ? body.modelVersion : "",
    content: parts,
    finish: {
      reason: blocked
        ? "content-filter"
        : fromGemini(raw, parts.some((p) => p.type === "tool-call")),
      ...(typeof raw === "string" ? { raw } : blocked ? { raw: String(blocked) } : {}),
    },
    usage: usageFromGemini(body.usageMetadata),
  };
}

// ---------------------------------------------------------------------------------------------
// Canonical → client answer

/** Canonical usage as `usageMetadata`. */
export function encodeUsage(usage: TokenUsage): Json {
  return {
    promptTokenCount: usage.input,
    candidatesTokenCount: Math.max(0, usage.output - usage.reasoning),
    ...(usage.reasoning ? { thoughtsTokenCount: usage.reasoning } : {}),
    ...(usage.cacheRead ? { cachedContentTokenCount: usage.cacheRead } : {}),
    totalTokenCount: usage.input + usage.output,
  };
}

/** A canonical call as a `functionCall` part, its signature as a token. */
export function callPart(
  part: { id: string; name: string; input: unknown },
  signature: string | undefined,
): Json {
  return {
    functionCall: { id: part.id, name: part.name, args: isObject(part.input) ? part.input : {} },
    ...(signature ? { thoughtSignature: signature } : {}),
  };
}

/** The parts of a canonical answer, with opaque state as thought-signature tokens. */
export function encodeParts(content: AssistantPart[], info: AnswerInfo): Json[] {
  const parts: Json[] = [];
  /** A foreign reasoning token waiting for the call it precedes. */
  let carry: string | undefined;
  content.forEach((part, i) => {
    switch (part.type) {
      case "reasoning": {
        const foreign = part.opaque && part.opaque.kind !== "thought-signature";
        const token = part.opaque
          ? info.token(part.opaque, foreign ? part.text : undefined)
          : undefined;
        const nextCall = content.slice(i + 1).find((p) => p.type !== "text" || p.text);
        if (foreign && nextCall?.type === "tool-call" && !nextCall.opaque) {
          carry = token;
          if (part.text) parts.push({ text: part.text, thought: true });
        } else {parts.push({
            text: part.text,
            thought: true,
            ...(token ? { thoughtSignature: token } : {}),
          });}
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
      finishReason: toGemini(response.finish.reason),
      index: 0,
    }],
    usageMetadata: encodeUsage(response.usage),
    modelVersion: info.model,
    responseId: info.id,
  };
}
