/**
 * Emulated Gemini API (`gemini.md`): generateContent, streamGenerateContent (SSE with CRLF-separated
 * data-only events and usage on every fragment, the last one authoritative; or one JSON array
 * without `alt=sse`), countTokens (also of a whole `generateContentRequest`), function calls with
 * thought signatures (checked on Gemini 3 models, as the real API does), thoughts when asked,
 * image output for the image models, the real API's history and schema checks, and errors in
 * Google's envelope.
 */
import { encodeSse } from "../http/sse.ts";
import {
  answer,
  collectText,
  countTokens,
  directives,
  exampleValue,
  newId,
  pickTools,
  sign,
  signed,
  sleep,
  sseBody,
  TINY_PNG,
  tokenize,
  toolArguments,
} from "./text.ts";

type Json = Record<string, unknown>;

const STATUS: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

/** Google's error envelope. */
export function googleError(status: number, message: string): Response {
  return Response.json({
    error: { code: status, message, status: STATUS[status] ?? "UNKNOWN" },
  }, { status });
}

/** IMAGE output tokens per image size, in line with spec §4.5. */
function imageTokens(model: string, size: string): number {
  const pro = model.includes("pro");
  switch (size) {
    case "0.5K":
      return 560;
    case "2K":
      return 1680;
    case "4K":
      return pro ? 2000 : 2520;
    default:
      return pro ? 1120 : 1290;
  }
}

interface Content {
  role?: string;
  parts?: Json[];
}

function promptTexts(body: Json): string[] {
  return collectText([body.systemInstruction, body.contents, body.tools]);
}

/** `…:countTokens`. */
export async function countTokensHandler(req: Request): Promise<Response> {
  const raw = await req.json() as Json;
  const whole = raw.generateContentRequest;
  const body = whole && typeof whole === "object" ? whole as Json : raw;
  const tokens = countTokens(promptTexts(body).join(" "));
  return Response.json({
    totalTokens: tokens,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: tokens }],
  });
}

/** Keywords Gemini's `Schema` (function `parameters`) has no field for. */
const NOT_IN_SCHEMA = [
  "additionalProperties",
  "$schema",
  "$ref",
  "$defs",
  "definitions",
  "const",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "propertyNames",
  "examples",
  "default",
  "title",
  "strict",
];

/** The first key of a schema Gemini would not know, with its path. */
function unknownKey(schema: unknown, path: string): string | undefined {
  if (Array.isArray(schema)) {
    for (const item of schema) {
      const found = unknownKey(item, path);
      if (found) return found;
    }
    return undefined;
  }
  if (!schema || typeof schema !== "object") return undefined;
  for (const [key, value] of Object.entries(schema)) {
    if (NOT_IN_SCHEMA.includes(key)) return `Unknown name "${key}" at '${path}'`;
    if (key === "properties" && value && typeof value === "object") {
      for (const [name, inner] of Object.entries(value)) {
        const found = unknownKey(inner, `${path}.properties[${name}].value`);
        if (found) return found;
      }
    } else if (key === "items" || key === "anyOf") {
      const found = unknownKey(value, `${path}.${key}`);
      if (found) return found;
    }
  }
  return undefined;
}

/** Gemini 3 models check thought signatures; 1.x and 2.x do not. */
const SIGNATURES_CHECKED = (model: string) => !/gemini-(1|2)(\.|-)/.test(model);

/** Google's documented value for calls whose history came from elsewhere. */
const SKIP = "skip_thought_signature_validator";

/**
 * Requests the real API rejects: roles other than user and model, function declarations with
 * schema keywords `parameters` has no field for, a function-response turn whose parts do not
 * match the calls of the turn before, and (Gemini 3) a model turn whose first call carries no
 * thought signature the API issued (or the documented skip value).
 */
function invalidRequest(body: Json, contents: Content[], model: string): Response | undefined {
  for (const [i, content] of contents.entries()) {
    if (content.role !== undefined && content.role !== "user" && content.role !== "model") {
      return googleError(400, "Please use a valid role: user, model.");
    }
    const parts = content.parts ?? [];
    const calls = parts.filter((p) => "functionCall" in p);
    if (content.role === "model" && calls.length && SIGNATURES_CHECKED(model)) {
      const first = calls[0];
      const signature = first.thoughtSignature;
      const call = first.functionCall as Json;
      if (signature === undefined) {
        return googleError(
          400,
          `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`${
            String(call.name)
          }\` , position ${
            i + 1
          }. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`,
        );
      }
      if (signature !== SKIP && !signed("Cu", String(call.name), signature)) {
        return googleError(400, "Corrupted thought signature.");
      }
    }
    const responses = parts.filter((p) => "functionResponse" in p).length;
    const previous = contents[i - 1];
    if (responses && previous) {
      const asked = (previous.parts ?? []).filter((p) => "functionCall" in p).length;
      if (asked !== responses) {
        return googleError(
          400,
          "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
        );
      }
    }
  }
  for (const [i, tool] of ((body.tools ?? []) as Json[]).entries()) {
    for (const [j, decl] of ((tool.functionDeclarations ?? []) as Json[]).entries()) {
      const found = unknownKey(
        decl.parameters,
        `tools[${i}].function_declarations[${j}].parameters`,
      );
      if (found) {
        return googleError(400, `Invalid JSON payload received. ${found}: Cannot find field.`);
      }
    }
  }
  return undefined;
}

/** `…:generateContent` and `…:streamGenerateContent`. */
export async function generate(req: Request, model: string, stream: boolean): Promise<Response> {
  const url = new URL(req.url);
  const body = await req.json() as Json;
  const d = directives(promptTexts(body));
  await sleep(d.wait);
  if (d.status) return googleError(d.status, `Emulated error ${d.status}.`);
  const contents = (Array.isArray(body.contents) ? body.contents : []) as Content[];
  if (!contents.length) {
    return googleError(400, "* GenerateContentRequest.contents: contents is not specified");
  }
  const invalid = invalidRequest(body, contents, model);
  if (invalid) return invalid;
  const config = (body.generationConfig ?? {}) as Json;
  const modalities = (config.responseModalities ?? ["TEXT"]) as string[];
  const imageSize = String((config.imageConfig as Json | undefined)?.imageSize ?? "1K");
  const promptTokens = countTokens(promptTexts(body).join(" ")) + 2 * contents.length;
  const cached = Math.min(d.cached ?? 0, promptTokens);

  const last = contents.at(-1)?.parts ?? [];
  const answeredTool = last.some((p) => "functionResponse" in p);
  const declarations = ((body.tools ?? []) as Json[]).flatMap((t) =>
    (t.functionDeclarations ?? []) as Json[]
  );
  const wantsImage = model.includes("image") && modalities.includes("IMAGE");
  const lastText = answeredTool
    ? `the tool returned ${JSON.stringify(last.find((p) => "functionResponse" in p))}`
    : collectText(last.filter((p) => "text" in p)).join(" ");

  const jsonSchema = config.responseMimeType === "application/json"
    ? config.responseJsonSchema ?? config.responseSchema ?? { type: "object" }
    : undefined;
  let textPieces = wantsImage && !modalities.includes("TEXT")
    ? []
    : tokenize(jsonSchema ? JSON.stringify(exampleValue(jsonSchema)) : answer(lastText, d));
  const max = typeof config.maxOutputTokens === "number" ? config.maxOutputTokens : Infinity;
  let finishReason = "STOP";
  if (textPieces.length > max) {
    textPieces = textPieces.slice(0, max);
    finishReason = "MAX_TOKENS";
  }
  const grounded = ((body.tools ?? []) as Json[]).some((t) => "googleSearch" in t);
  const grounding = grounded
    ? {
      groundingMetadata: {
        webSearchQueries: [lastText.replace(/\[\[emulate [^\]]*\]\]/g, "").trim().slice(0, 80)],
        groundingChunks: [{ web: { uri: "https://example.com/result", title: "example.com" } }],
      },
    }
    : {};
  const fragments: Json[][] = [];
  let thoughts = 0;
  let imageOut = 0;
  const mode = ((body.toolConfig as Json | undefined)?.functionCallingConfig as Json | undefined)
    ?.mode;
  const called = answeredTool || mode === "NONE"
    ? []
    : pickTools(declarations, (f) => String(f.name), d);
  const thinking = (config.thinkingConfig as Json | undefined)?.includeThoughts === true;
  if (thinking) {
    fragments.push([{ text: "Considering the request.", thought: true }]);
    thoughts = 12;
  }
  if (called.length) {
    fragments.push(called.map((fn, i) => {
      const args = toolArguments(
        fn.parameters ?? fn.parametersJsonSchema ?? fn.parameters_json_schema,
        d,
      );
      return {
        functionCall: { name: fn.name, args },
        ...(i === 0 ? { thoughtSignature: sign("Cu", String(fn.name)) } : {}),
      };
    }));
    thoughts += 24;
  } else {
    for (let i = 0; i < textPieces.length; i += 3) {
      fragments.push([{ text: textPieces.slice(i, i + 3).join("") }]);
    }
    if (wantsImage) {
      imageOut = imageTokens(model, imageSize);
      fragments.push([{ inlineData: { mimeType: "image/png", data: TINY_PNG } }]);
    }
  }
  const textOut = called.length ? 8 * called.length : textPieces.length;
  const candidatesTokens = textOut + imageOut;
  const responseId = newId("", 22);
  const finalUsage: Json = {
    promptTokenCount: promptTokens,
    candidatesTokenCount: candidatesTokens,
    totalTokenCount: promptTokens + candidatesTokens + thoughts,
    ...(cached ? { cachedContentTokenCount: cached } : {}),
    promptTokensDetails: [{ modality: "TEXT", tokenCount: promptTokens }],
    candidatesTokensDetails: [
      { modality: "TEXT", tokenCount: textOut },
      ...(imageOut ? [{ modality: "IMAGE", tokenCount: imageOut }] : []),
    ],
    ...(thoughts ? { thoughtsTokenCount: thoughts } : {}),
  };
  const partialUsage: Json = {
    promptTokenCount: promptTokens,
    totalTokenCount: promptTokens,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: promptTokens }],
  };
  const fragment = (parts: Json[], final: boolean): Json => ({
    candidates: [{
      content: { parts, role: "model" },
      ...(final ? { finishReason, ...grounding } : {}),
      index: 0,
    }],
    usageMetadata: final ? finalUsage : partialUsage,
    modelVersion: model,
    responseId,
  });

  if (!stream) return Response.json(fragment(fragments.flat(), true));
  const sse = url.searchParams.get("alt") === "sse";
  async function* events(): AsyncGenerator<string> {
    for (const [i, parts] of fragments.entries()) {
      const json = JSON.stringify(fragment(parts, i === fragments.length - 1));
      if (sse) yield encodeSse(json, undefined, "\r\n");
      else yield `${i === 0 ? "[" : ",\r\n"}${json}\n`;
    }
    if (!sse) yield "]";
  }
  return new Response(sseBody(events, d), {
    headers: { "content-type": sse ? "text/event-stream" : "application/json; charset=UTF-8" },
  });
}
