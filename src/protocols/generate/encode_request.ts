/**
 * The canonical form → a generateContent request for a Gemini upstream (pure; `gemini.md` §2,
 * `translation.md`). Policies where the formats differ:
 * - fields are written in camelCase; the model goes in the path, never the body; call ids are
 *   never sent (Gemini matches results by name and order);
 * - tool results are `functionResponse` parts whose `response` is the result's JSON object when it
 *   is one, else `{result: text}` (`{error: text}` for a failed call); files of a result follow as
 *   `inlineData`/`fileData` parts in the same turn;
 * - system messages inside the conversation are hoisted into `systemInstruction`;
 * - thought signatures are replayed only to the provider that issued them; on Gemini 3 models
 *   (anything not named `gemini-1…`/`gemini-2…`) the first call of a model turn without one gets
 *   Google's documented `skip_thought_signature_validator`;
 * - parameter schemas are cleaned to Gemini's subset (`json_schema.ts`); structured output is
 *   sent as `responseJsonSchema`; reasoning is a thinking budget on Gemini 1 and 2, a thinking
 *   level after;
 * - not carried: a web search's `maxUses`, image `detail`, file names, `parallel_tool_calls:
 *   false` and end-user ids; records of hosted work (`hosted-call` parts) are not sent; nor is
 *   anything of the prompt cache (Gemini caches implicitly: breakpoints, a cache key and a
 *   retention have nothing to say to it — not adaptations, the answer is the same). Refused
 *   by name: hosted tools other than Google Search, more than one candidate, more than five stop
 *   sequences;
 * - each adaptation is noted (see `translate/adaptations.ts`).
 */
import { invalid, isObject } from "../../http/json.ts";
import {
  type Adapt,
  fieldOf,
  fileDetails,
  hostedRecords,
  laterSystem,
  unreplayed,
} from "../../translate/adaptations.ts";
import type { Target } from "../../translate/codec.ts";
import { splitDataUrl } from "../../translate/data_url.ts";
import { inexpressible } from "../../translate/inexpressible.ts";
import type {
  AssistantPart,
  CanonicalRequest,
  FilePart,
  Json,
  Opaque,
  TextPart,
  ToolChoice,
  ToolResultPart,
} from "../../translate/ir.ts";
import { geminiSchema, isEmptyObjectSchema } from "../../translate/json_schema.ts";
import { replayable } from "../../translate/opaque.ts";
import { budgetFor } from "../../translate/reasoning.ts";
import { encodeSampling, requestEncoder } from "../../translate/sampling.ts";
import { parseArguments } from "../../translate/tool_ids.ts";

const PROTOCOL = "the generateContent protocol";

/** Google's documented signature for calls whose history came from elsewhere (Gemini 3). */
export const SKIP_SIGNATURE = "skip_thought_signature_validator";

/** Models that take thinking budgets and need no thought signatures (Gemini 1.x and 2.x). */
const OLDER = /gemini-(1|2)(\.|-)/;

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

function encodeTools(request: CanonicalRequest, adapt: Adapt): Json[] {
  const tools: Json[] = [];
  const cleaned = () => adapt("schema_cleaned", request.fields.tools);
  if (request.tools.length) {
    tools.push({
      functionDeclarations: request.tools.map((tool) => {
        if (tool.strict) adapt("strict_dropped", request.fields.tools);
        const schema = geminiSchema(tool.parameters, cleaned);
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
    if (hosted.maxUses) adapt("search_options_dropped", hosted.field);
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

/**
 * Canonical reasoning as `thinkingConfig` for `model`; `approximated` is called when it is not
 * the reasoning asked for exactly (an effort as a budget or a level, off as the lowest level).
 */
function encodeThinking(
  reasoning: NonNullable<CanonicalRequest["reasoning"]>,
  model: string,
  approximated: () => void,
) {
  const older = OLDER.test(model);
  const thinking: Json = {};
  if (reasoning.off) {
    if (older) thinking.thinkingBudget = 0;
    else {
      thinking.thinkingLevel = "low";
      approximated();
    }
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
    if (older || reasoning.effort === "minimal" || reasoning.effort === "medium") approximated();
  }
  if (reasoning.visible) thinking.includeThoughts = true;
  return thinking;
}

function encodeConfig(request: CanonicalRequest, target: Target, adapt: Adapt): Json {
  if (request.stop && request.stop.length > 5) {
    throw inexpressible(request.fields.stop ?? "stop", "more than 5 stop sequences", PROTOCOL);
  }
  const config: Json = {};
  encodeSampling("generate", request, config, {}, adapt, request);
  if (request.responseFormat) {
    config.responseMimeType = "application/json";
    if (request.responseFormat.schema) config.responseJsonSchema = request.responseFormat.schema;
  }
  if (request.reasoning) {
    const thinking = encodeThinking(
      request.reasoning,
      target.model,
      () => adapt("reasoning_approximated", fieldOf(request, "reasoning")),
    );
    if (Object.keys(thinking).length) config.thinkingConfig = thinking;
  }
  return config;
}

/** Notes what the rest of `request` loses on its way to a Gemini upstream (see `adaptations.ts`). */
function noteAdaptations(request: CanonicalRequest, provider: string, adapt: Adapt): void {
  const field = request.fields.messages;
  if (laterSystem(request.messages)) adapt("system_hoisted", field);
  if (unreplayed(request.messages, provider, ["thought-signature"], ["thought-signature"])) {
    adapt("reasoning_not_replayed", field);
  }
  if (hostedRecords(request.messages)) adapt("hosted_history_dropped", field);
  if (fileDetails(request.messages)) adapt("file_details_dropped", field);
  if (request.parallelToolCalls === false && request.tools.length) {
    adapt("parallel_calls_dropped", fieldOf(request, "parallelToolCalls"));
  }
  if (request.user) adapt("user_dropped", fieldOf(request, "user"));
}

/** A canonical request as a generateContent body for `target` (the model goes in the path). */
export const encodeRequest = requestEncoder(PROTOCOL, (request, target, adapt) => {
  const system = [...request.system];
  const body: Json = { contents: encodeContents(request, target, system) };
  const text = system.map((p) => p.text).filter(Boolean).join("\n\n");
  if (text) body.systemInstruction = { parts: [{ text }] };
  const tools = encodeTools(request, adapt);
  if (tools.length) body.tools = tools;
  if (request.toolChoice && request.tools.length) {
    body.toolConfig = { functionCallingConfig: encodeChoice(request.toolChoice) };
  }
  const config = encodeConfig(request, target, adapt);
  noteAdaptations(request, target.provider, adapt);
  if (Object.keys(config).length) body.generationConfig = config;
  return body;
});
